"""A run's Headline (what the leaderboard reads) always equals its all/all SliceScore row: written
with the scores, replaced with them, gone with them, re-ranked with them; the migration fills it
for runs scored before it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from leaderboard import ranking, run_actions
from leaderboard.models import EvaluationRun, Headline, SliceScore
from leaderboard.scores import ScoresError, store_scores
from podium.celery import app

from .factories import block, scores_dict

FIELDS = ("count", "primary", "primary_ci_low", "primary_ci_high", "metrics")


def same_as_whole_run(run: EvaluationRun) -> Headline:
    headline = Headline.objects.get(run=run)
    whole = SliceScore.objects.get(run=run, dimension="all", value="all")
    assert [getattr(headline, f) for f in FIELDS] == [getattr(whole, f) for f in FIELDS]
    assert (headline.split_id, headline.setting) == (run.split_id, run.setting)
    return headline


def test_stored_scores_write_the_headline_with_the_slice_dimensions(teams, splits, make_entry):
    run = make_entry(teams["alpha"], splits["public-test"], 0.3)
    assert same_as_whole_run(run).dimensions == ["domain", "turn_idx"]
    store_scores(run, scores_dict(0.6, {"image_quality": {"normal": block(0.2)}}))
    headline = same_as_whole_run(run)
    assert headline.primary == pytest.approx(0.6) and headline.dimensions == ["image_quality"]
    assert Headline.objects.count() == 1


def test_refused_scores_leave_the_headline_as_it_was(teams, splits, make_entry):
    run = make_entry(teams["alpha"], splits["public-test"], 0.3)
    with pytest.raises(ScoresError):
        store_scores(run, {"all": {"truthfulness": "high"}})
    assert same_as_whole_run(run).primary == pytest.approx(0.3)


def test_a_rerun_drops_the_headline_with_the_scores(
    teams, splits, make_entry, make_user, monkeypatch
):
    monkeypatch.setattr(app, "send_task", lambda *args, **kwargs: None)
    run = make_entry(teams["alpha"], splits["public-test"], 0.3)
    assert run_actions.rerun([run], make_user(staff=True), "re-imported") == []
    assert not Headline.objects.filter(run=run).exists()
    assert not SliceScore.objects.filter(run=run).exists()


def test_a_new_primary_metric_reranks_the_headlines(teams, splits, make_entry):
    public = splits["public-test"]
    make_entry(teams["alpha"], public, 0.4, method="alpha-rag")
    make_entry(teams["beta"], public, 0.2, method="beta-agent")
    task = public.task
    task.primary_metric = "missing"  # missing = 0.2 + 0.2 t in the factory: lower is better
    task.save()
    for headline in Headline.objects.all():
        assert headline.primary == pytest.approx(headline.metrics["missing"])
    public.refresh_from_db()
    assert [e.method_name for e in ranking.entries(public)] == ["beta-agent", "alpha-rag"]


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_the_headlines_of_runs_scored_before_it(teams, splits, make_entry):
    run = make_entry(teams["alpha"], splits["public-test"], 0.3)
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate([("leaderboard", "0021_chosen_tasks")])
        executor.loader.build_graph()
        with connection.cursor() as cursor:  # the rows as they stood before: slice scores
            cursor.execute(
                "SELECT count(*) FROM leaderboard_slicescore WHERE run_id = %s", [run.pk]
            )
            assert cursor.fetchone()[0] == 5
        executor.migrate([("leaderboard", "0022_headline")])
        assert same_as_whole_run(run).dimensions == ["domain", "turn_idx"]
    finally:  # the later tests need the schema of every migration
        executor.loader.build_graph()
        executor.migrate(latest)
