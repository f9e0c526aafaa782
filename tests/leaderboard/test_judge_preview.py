"""A judge change previewed before it changes ranks: the dry run re-judges only what the
judgment cache lacks (the stand-in LLM counts its calls), the old and new boards with rank
changes and Kendall's tau on a crafted leaderboard, the flipped verdicts, the agreement per
slice, the publication logged with the old results kept, and only organisers may do any of it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from leaderboard import judge_compare, judge_preview
from leaderboard.judge_choice import JudgeSpec
from leaderboard.models import (
    EvaluationRun,
    ItemAnswer,
    JudgePreview,
    PreviewFlip,
    RunAction,
    Split,
    Submission,
    Task,
)
from leaderboard.pipeline.judge import judge_stage
from leaderboard.pipeline.preview import dry_run
from leaderboard.pipeline.score import score_stage
from leaderboard.pipeline.stage_tasks import preview_judge
from leaderboard.splits import import_split_dir
from podium.celery import app
from tests.e2e.harness import write_split
from tests.fake_openai import FAKE_JUDGE, FakeOpenAI
from tests.services import redis_url

State = EvaluationRun.State
LLM = JudgeSpec("openai", "fake", FAKE_JUDGE["judge_model"])
# the rules judge finds the ground truth's key word in "the answer"; the stand-in LLM is told
# the opposite, and rates "close guess" correct: alpha and beta swap places
ANSWERS = {"alpha": "the answer", "beta": "close guess", "gamma": "I don't know"}


@pytest.fixture
def fake(settings):
    with FakeOpenAI() as server:
        server.respond = lambda payload: (
            "CORRECT" if "close guess" in str(payload["messages"]) else "WRONG"
        )
        settings.PODIUM_JUDGE_ENDPOINTS = {
            "fake": {"base_url": server.url, "model": FAKE_JUDGE["judge_model"]}
        }
        settings.CELERY_BROKER_URL = redis_url("e2e")  # the endpoint's shared slots
        yield server


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, dict]]:
    calls: list[tuple[str, dict]] = []
    monkeypatch.setattr(app, "send_task", lambda name, kwargs, queue: calls.append((name, kwargs)))
    return calls


def judged_board(task: Task, teams: dict, tmp_path) -> Split:
    """The validation split, 2 conversations of 2 turns, judged by the rules judge: one done
    run per team (answers as ``ANSWERS``)."""
    split = import_split_dir(task, "validation", write_split(tmp_path / "split", 2, 2))
    for name, response in ANSWERS.items():
        judged_run(task, split, teams[name], response)
    return split


@pytest.fixture
def board(task, teams, tmp_path, settings) -> Split:
    settings.VAR_DIR = tmp_path / "var"
    return judged_board(task, teams, tmp_path)


def judged_run(task: Task, split, team, response: str) -> EvaluationRun:
    submission = Submission.objects.create(
        team=team, challenge=task.challenge, method_name=f"{team.name}-m",
        artifact_kind=Submission.ArtifactKind.REGISTRY_REF, registry_ref="x/y:1",
    )  # fmt: skip
    run = EvaluationRun.objects.create(
        submission=submission, task=task, split=split, state=State.JUDGING
    )
    for c in range(2):
        for t in range(2):
            ItemAnswer.objects.create(
                run=run, group=f"c{c}", item_key=f"c{c}-t{t}", position=t, response=response
            )
    assert judge_stage(run) == 0
    EvaluationRun.objects.filter(pk=run.pk).update(state=State.SCORING)
    run.refresh_from_db()
    score_stage(run)
    return run


def previewed(split, organiser) -> JudgePreview:
    preview = judge_preview.start(split, LLM, organiser)
    assert dry_run(preview.pk) == 0
    preview.refresh_from_db()
    return preview


@pytest.fixture
def organiser(make_user):
    return make_user("org", staff=True)


# transaction: the judging loop caches judgments from its worker threads' own connections
@pytest.mark.django_db(transaction=True)
def test_the_preview_shows_both_boards_rank_changes_tau_and_flips(board, fake, sent, organiser):
    preview = previewed(board, organiser)
    assert sent == [("judge.preview_judge", {"preview_id": preview.pk})]
    assert (preview.state, preview.runs_total, preview.runs_done) == ("done", 3, 3)
    assert preview.current_label.startswith("rules@")
    assert preview.candidate_judge_id.startswith("openai:fake-judge")
    (change,) = judge_compare.board_changes(preview)
    assert [(line.team, line.rank) for line in change.old] == [
        ("alpha", 1), ("gamma", 2), ("beta", 3)
    ]  # fmt: skip
    assert [(line.team, line.rank) for line in change.new] == [
        ("beta", 1), ("gamma", 2), ("alpha", 3)
    ]  # fmt: skip
    assert [(m.team, m.shift) for m in change.moves] == [("beta", 2), ("gamma", 0), ("alpha", -2)]
    assert change.tau == pytest.approx(-1.0) and change.compared == 3 and change.changed == 2
    flips = judge_compare.flipped(preview)
    kinds = {(f.answer.run.submission.team.name, f.old_verdict, f.new_verdict) for f in flips}
    assert sorted(kinds) == [
        ("alpha", "correct", "hallucinated"), ("beta", "hallucinated", "correct")
    ]  # fmt: skip
    assert len(flips) == 8 and all(f.human_label == "" for f in flips)  # no audit labelled them
    # nothing published changed: the stored board and verdicts are the rules judge's
    alpha = EvaluationRun.objects.get(submission__team__name="alpha")
    assert alpha.judge_id.startswith("rules@") and alpha.headline.primary == 1.0


@pytest.mark.django_db(transaction=True)
def test_only_what_the_cache_lacks_is_judged_again(board, fake, sent, organiser, task, teams):
    first = previewed(board, organiser)
    # alpha's and beta's 4 answers each; gamma's are missing answers, decided without a judge
    assert fake.count == first.judge_calls == 8
    assert previewed(board, organiser).judge_calls == 0 and fake.count == 8
    delta = teams["alpha"].__class__.objects.create(name="delta")
    judged_run(task, board, delta, "another answer")
    third = previewed(board, organiser)
    assert third.judge_calls == 4 and fake.count == 12  # only delta's answers were new
    # resumable: a dry run delivered again writes nothing twice and judges nothing
    assert preview_judge.apply(kwargs={"preview_id": third.pk}).get() == "done"
    assert fake.count == 12 and PreviewFlip.objects.filter(preview=third).count() == 8 + 4


@pytest.mark.django_db(transaction=True)
def test_an_undecided_turn_stores_nothing_for_its_run_and_the_task_retries(
    board, fake, sent, organiser
):
    preview = judge_preview.start(board, LLM, organiser)
    fake.fail(500, times=1000)  # the endpoint down: every call fails
    with pytest.raises(Exception, match="Retry"):
        preview_judge.apply(kwargs={"preview_id": preview.pk}, throw=True)
    preview.refresh_from_db()
    # gamma's run needs no judge call; alpha's and beta's wait
    assert preview.state == "judging" and preview.runs_done == 1
    assert "could not decide" in preview.error
    fake.recover()
    assert dry_run(preview.pk) == 0  # resumed: the two runs it lacked
    preview.refresh_from_db()
    assert (preview.state, preview.runs_done) == ("done", 3)


@pytest.mark.django_db(transaction=True)
def test_publishing_is_one_logged_action_and_the_old_results_stay(
    board, fake, sent, organiser, task, django_capture_on_commit_callbacks
):
    preview = previewed(board, organiser)
    with pytest.raises(judge_preview.PreviewRefused, match="say why"):
        judge_preview.publish(preview, organiser, "  ")
    with django_capture_on_commit_callbacks(execute=True):
        assert judge_preview.publish(preview, organiser, "the LLM reads paraphrases") == []
    task.refresh_from_db()
    assert (task.judge_kind, task.judge_endpoint, task.judge_model) == (
        "openai", "fake", "fake-judge"
    )  # fmt: skip
    preview.refresh_from_db()
    assert preview.published_by == organiser and preview.published_at is not None
    assert preview.published_from == "rules" and preview.published_why
    assert EvaluationRun.objects.filter(state=State.JUDGING).count() == 3
    # while they are judged again (off the board), the preview shows the boards as published
    (change,) = judge_compare.board_changes(preview)
    assert [line.team for line in change.new] == ["beta", "gamma", "alpha"]
    assert change.tau == pytest.approx(-1.0)
    actions = RunAction.objects.filter(kind="rejudge")
    assert actions.count() == 3
    assert all(
        "judge published" in a.why and "rules -> openai:fake-judge" in a.why for a in actions
    )
    with pytest.raises(judge_preview.PreviewRefused, match="already published"):
        judge_preview.publish(preview, organiser, "again")
    # the runs re-judged by the pipeline: answered from the cache, no model call
    calls = fake.count
    for run in EvaluationRun.objects.filter(state=State.JUDGING):
        assert judge_stage(run) == 0
        EvaluationRun.objects.filter(pk=run.pk).update(state=State.SCORING)
        run.refresh_from_db()
        score_stage(run)
    assert fake.count == calls
    alpha = EvaluationRun.objects.get(submission__team__name="alpha")
    assert alpha.judge_id.startswith("openai:") and alpha.headline.primary == -1.0
    # the old judge's board and verdicts are still there
    (change,) = judge_compare.board_changes(preview)
    assert [line.team for line in change.old] == ["alpha", "gamma", "beta"]
    assert preview.runs.get(run=alpha).old_metrics["truthfulness"] == 1.0
    assert preview.flips.filter(answer__run=alpha, old_verdict="correct").count() == 4
    export = judge_preview.record(preview)
    assert export["published"]["from"] == "rules"
    assert [line["team"] for line in export["boards"][0]["old"]] == ["alpha", "gamma", "beta"]
    assert {r["run_id"]: r["old"]["truthfulness"] for r in export["runs"]}[alpha.pk] == 1.0


def test_the_agreement_table_sums_runs_per_slice():
    runs = [
        {
            "all": {"all": {"correct|correct": 3, "correct|hallucinated": 1}},
            "domain": {"food": {"correct|correct": 2, "correct|hallucinated": 1},
                       "plants": {"correct|correct": 1}},
        },
        {
            "all": {"all": {"missing|missing": 2, "hallucinated|correct": 2}},
            "domain": {"food": {"missing|missing": 2}, "plants": {"hallucinated|correct": 2}},
        },
    ]  # fmt: skip
    table = judge_compare.agreement_table(runs)
    assert [(s.dimension, s.value, s.items, s.agree) for s in table] == [
        ("all", "all", 8, 5), ("domain", "plants", 3, 1), ("domain", "food", 5, 4)
    ]  # fmt: skip
    assert table[0].pairs == [  # the disagreements first, the most frequent first
        ("hallucinated", "correct", 2), ("correct", "hallucinated", 1),
        ("correct", "correct", 3), ("missing", "missing", 2),
    ]  # fmt: skip
    assert table[1].agreement == pytest.approx(1 / 3)


def test_kendall_tau_of_crafted_rankings():
    assert judge_compare.kendall([1, 2, 3, 4], [1, 2, 3, 4])[0] == pytest.approx(1.0)
    assert judge_compare.kendall([1, 2, 3, 4], [2, 1, 3, 4])[0] == pytest.approx(4 / 6)
    assert judge_compare.kendall([1], [1]) == (None, None)


@pytest.mark.django_db(transaction=True)
def test_only_organisers_preview_and_publish(
    client, board, fake, sent, organiser, make_user, teams
):
    preview = previewed(board, organiser)
    kwargs = {"slug": board.task.challenge.slug, "task_id": board.task.task_id, "kind": board.kind}
    one = {**kwargs, "preview_id": preview.pk}
    pages = [
        ("get", reverse("leaderboard:judge-previews", kwargs=kwargs), {}),
        ("post", reverse("leaderboard:judge-previews", kwargs=kwargs), {"judge": LLM.key}),
        ("get", reverse("leaderboard:judge-preview", kwargs=one), {}),
        ("get", reverse("leaderboard:judge-preview-export", kwargs=one), {}),
        ("post", reverse("leaderboard:judge-preview-publish", kwargs=one), {"why": "x"}),
        ("post", reverse("leaderboard:judge-preview-resume", kwargs=one), {}),
    ]
    member = make_user("member", team=teams["alpha"])
    for who in (None, member):
        if who:
            client.force_login(who)
        for method, url, data in pages:
            assert getattr(client, method)(url, data).status_code in (302, 403), url
    assert JudgePreview.objects.count() == 1 and JudgePreview.objects.get().published_at is None
    client.force_login(organiser)
    page = client.get(pages[2][1]).content.decode()
    assert "Kendall" in page and "beta" in page
    assert client.post(pages[1][1], {"judge": "openai|nowhere|m|"}).status_code == 400


@pytest.mark.django_db(transaction=True)
def test_what_the_preview_state_does_not_allow_is_refused_saying_why(
    board, fake, sent, organiser, task, teams, settings
):
    # a candidate whose endpoint is gone: the dry run fails, naming it
    endpoints, settings.PODIUM_JUDGE_ENDPOINTS = settings.PODIUM_JUDGE_ENDPOINTS, {}
    gone = judge_preview.start(board, LLM, organiser)
    assert preview_judge.apply(kwargs={"preview_id": gone.pk}).get() == "failed"
    gone.refresh_from_db()
    assert gone.state == "failed" and "judge endpoint 'fake' is not configured" in gone.error
    settings.PODIUM_JUDGE_ENDPOINTS = endpoints
    preview = judge_preview.start(board, LLM, organiser)
    with pytest.raises(judge_preview.PreviewRefused, match="its dry run is queued"):
        judge_preview.publish(preview, organiser, "too early")
    assert dry_run(preview.pk) == 0
    preview.refresh_from_db()
    with pytest.raises(judge_preview.PreviewRefused, match="no run finished since"):
        judge_preview.resume(preview)
    judged_run(task, board, teams["alpha"].__class__.objects.create(name="delta"), "late")
    with pytest.raises(judge_preview.PreviewRefused, match="1 run\\(s\\) finished after"):
        judge_preview.publish(preview, organiser, "not what was previewed")
    judge_preview.resume(preview)  # the late run: sent again, then published
    assert dry_run(preview.pk) == 0
    preview.refresh_from_db()
    assert judge_preview.publish(preview, organiser, "now") == []


@pytest.mark.django_db
def test_a_split_without_a_done_run_has_nothing_to_preview(splits, organiser, sent):
    with pytest.raises(judge_preview.PreviewRefused, match="has no done run"):
        judge_preview.start(splits["validation"], JudgeSpec("rules"), organiser)
    assert sent == []


@pytest.mark.django_db(transaction=True)
def test_an_organiser_listed_on_the_challenge_previews_without_being_staff(
    client, board, fake, sent, make_user
):
    listed = make_user("listed")
    board.task.challenge.organisers.add(listed)
    client.force_login(listed)
    url = reverse(
        "leaderboard:judge-previews",
        kwargs={
            "slug": board.task.challenge.slug,
            "task_id": board.task.task_id,
            "kind": "validation",
        },
    )
    page = client.get(url).content.decode()
    assert "openai:fake-judge (endpoint fake)" in page  # on offer
    started = client.post(url, {"judge": LLM.key})
    preview = JudgePreview.objects.get()
    assert started.status_code == 302 and started.url.endswith(f"/judge-previews/{preview.pk}/")
    assert preview.created_by == listed and sent[0][1] == {"preview_id": preview.pk}
    assert client.post(url, {"judge": ""}).status_code == 400


@pytest.mark.django_db(transaction=True)
def test_two_judges_on_the_same_turns_are_compared_but_never_published(
    board, fake, sent, organiser
):
    rules = JudgeSpec("rules")
    with pytest.raises(judge_preview.PreviewRefused, match="compared with itself"):
        judge_preview.start(board, rules, organiser, baseline=rules)
    # the LLM first, as a candidate against the published (rules) verdicts: it fills the cache
    previewed(board, organiser)
    calls = fake.count
    # then the rules judge against the LLM, neither of them as published
    pair = judge_preview.start(board, rules, organiser, baseline=LLM)
    assert dry_run(pair.pk) == 0
    pair.refresh_from_db()
    assert pair.judge_calls == 0 and fake.count == calls  # both answered from the cache
    assert pair.current_label == LLM.label
    (change,) = judge_compare.board_changes(pair)
    assert [line.team for line in change.old] == ["beta", "gamma", "alpha"]  # the LLM's board
    assert [line.team for line in change.new] == ["alpha", "gamma", "beta"]  # the rules'
    (whole, *_) = judge_compare.agreement_table(pair.runs.values_list("pairs", flat=True))
    assert (whole.items, whole.agree) == (12, 4)
    assert whole.pairs[:2] == [("correct", "hallucinated", 4), ("hallucinated", "correct", 4)]
    with pytest.raises(judge_preview.PreviewRefused, match="compares two judges"):
        judge_preview.publish(pair, organiser, "no")
