"""Re-judging with a chosen judge: the judges on offer, the choice logged and kept on the run,
the judging stage grading with it (and storing each answer's thumbnail on the way)."""

from __future__ import annotations

import io

import pytest
from django.contrib.admin import helpers
from django.core.files.storage import default_storage
from django.urls import reverse
from PIL import Image

from leaderboard import run_actions
from leaderboard.judge_choice import JudgeSpec, UnknownJudge, chosen_judge, judge_options
from leaderboard.models import EvaluationRun, ItemAnswer, RunAction, Submission, Task
from leaderboard.pipeline.judge import judge_stage
from leaderboard.pipeline.thumbnails import THUMBNAIL_PX, scaled_jpeg
from leaderboard.splits import import_split_dir
from podium.celery import app
from tests.e2e.harness import write_split
from workers.faults import PodiumFault

State = EvaluationRun.State
ENDPOINTS = {
    "offline": {"base_url": "http://127.0.0.1:9/v1", "model": "judge-x", "api_key_env": ""},
    "big": {"base_url": "http://127.0.0.1:9/v1", "model": "judge-big", "api_key_env": ""},
}


@pytest.fixture(autouse=True)
def endpoints(settings, monkeypatch, tmp_path):
    settings.PODIUM_JUDGE_ENDPOINTS = ENDPOINTS
    settings.VAR_DIR = tmp_path / "var"
    monkeypatch.setattr(app, "send_task", lambda *args, **kwargs: None)


@pytest.fixture
def model_task(task) -> Task:
    Task.objects.filter(pk=task.pk).update(
        judge_kind=Task.JudgeKind.OPENAI, judge_endpoint="offline", judge_revision="r2"
    )
    task.refresh_from_db()
    return task


def test_the_judges_on_offer_are_rules_each_endpoints_model_and_each_tasks(model_task):
    labels = [spec.label for spec in judge_options([model_task])]
    assert labels == [
        "rules",
        "openai:judge-big (endpoint big)",
        "openai:judge-x (endpoint offline)",
        "openai:judge-x@r2 (endpoint offline)",
    ]
    assert chosen_judge("", [model_task]) is None  # each run's task judge
    with pytest.raises(UnknownJudge, match=r"no judge 'openai\|elsewhere\|m\|' .*on offer: rules"):
        chosen_judge("openai|elsewhere|m|", [model_task])


def test_a_rejudge_with_a_chosen_judge_is_logged_and_kept_until_a_rerun(
    teams, splits, make_entry, make_user
):
    run = make_entry(teams["alpha"], splits["public-test"], 0.3)
    organiser = make_user("org", staff=True)
    big = JudgeSpec("openai", "big", "judge-big")
    assert run_actions.rejudge([run], organiser, "a stronger judge", judge=big) == []
    run.refresh_from_db()
    assert run.state == State.JUDGING and JudgeSpec.from_dict(run.judge_choice) == big
    action = RunAction.objects.get()
    assert action.detail == "judge: openai:judge-big (endpoint big)"
    EvaluationRun.objects.filter(pk=run.pk).update(state=State.DONE)
    run.refresh_from_db()
    assert run_actions.rejudge([run], organiser, "back to the task's judge") == []
    run.refresh_from_db()
    assert run.judge_choice == {} and RunAction.objects.first().detail == "judge: the task's"
    EvaluationRun.objects.filter(pk=run.pk).update(state=State.DONE, judge_choice=big.to_dict())
    run_actions.rerun([run], organiser, "again")
    run.refresh_from_db()
    assert run.judge_choice == {}


def test_the_admin_offers_the_judges_and_acts_with_the_chosen_one(
    client, teams, splits, make_entry, make_user, model_task
):
    run = make_entry(teams["alpha"], splits["public-test"], 0.3)
    admin_user = make_user("root", staff=True)
    admin_user.is_superuser = True
    admin_user.save()
    client.force_login(admin_user)
    url = reverse("admin:leaderboard_evaluationrun_changelist")
    chosen = {"action": "rejudge", helpers.ACTION_CHECKBOX_NAME: [run.pk]}
    form = client.post(url, chosen).content.decode()
    assert 'name="judge"' in form and "openai:judge-x@r2 (endpoint offline)" in form
    refused = client.post(url, {**chosen, "why": "x", "judge": "openai|nowhere|m|"})
    assert "no judge" in refused.content.decode()
    assert EvaluationRun.objects.get(pk=run.pk).state == State.DONE
    client.post(url, {**chosen, "why": "rules, to compare", "judge": "rules|||"})
    run.refresh_from_db()
    assert run.state == State.JUDGING and run.judge_choice["kind"] == "rules"


def test_the_panel_offers_the_judges_and_rejudges_with_the_chosen_one(
    client, teams, splits, make_entry, make_user, model_task
):
    run = make_entry(teams["alpha"], splits["public-test"], 0.3)
    organiser = make_user("olga")
    model_task.challenge.organisers.add(organiser)
    client.force_login(organiser)
    slug = model_task.challenge.slug
    page = client.get(reverse("leaderboard:panel", args=[slug])).content.decode()
    assert '<option value="">each task\'s judge as configured</option>' in page
    assert '<option value="openai|big|judge-big|">openai:judge-big (endpoint big)</option>' in page
    act = reverse("leaderboard:panel-action", args=[slug])
    chosen = {"action": "rejudge", "run": [run.pk], "why": "a stronger judge"}
    refused = client.post(act, {**chosen, "judge": "openai|nowhere|m|"})
    (message,) = [str(m) for m in refused.wsgi_request._messages]
    assert message.startswith("Nothing re-judged: no judge 'openai|nowhere|m|' is configured")
    assert EvaluationRun.objects.get(pk=run.pk).state == State.DONE
    assert not RunAction.objects.exists()
    client.post(act, {**chosen, "judge": "openai|big|judge-big|"})
    run.refresh_from_db()
    assert run.state == State.JUDGING
    assert JudgeSpec.from_dict(run.judge_choice) == JudgeSpec("openai", "big", "judge-big")
    log = client.get(reverse("leaderboard:action-log", args=[slug])).content.decode()
    assert "(judge: openai:judge-big (endpoint big))" in log
    EvaluationRun.objects.filter(pk=run.pk).update(state=State.DONE)
    client.post(act, {**chosen, "judge": ""})  # the default: each task's judge
    run.refresh_from_db()
    assert run.state == State.JUDGING and run.judge_choice == {}


# transaction: the judging stage caches judgments from its worker threads' own connections
@pytest.mark.django_db(transaction=True)
def test_the_judging_stage_grades_with_the_chosen_judge(model_task, teams, tmp_path):
    split = import_split_dir(model_task, "validation", write_split(tmp_path / "split", 2, 2))
    submission = Submission.objects.create(
        team=teams["alpha"], challenge=model_task.challenge, method_name="m",
        artifact_kind=Submission.ArtifactKind.REGISTRY_REF, registry_ref="x/y:1",
    )  # fmt: skip
    run = EvaluationRun.objects.create(
        submission=submission, task=model_task, split=split, state=State.JUDGING
    )
    for c in range(2):
        for t in range(2):
            ItemAnswer.objects.create(
                run=run, group=f"c{c}", item_key=f"c{c}-t{t}", position=t, response="a cat"
            )
    EvaluationRun.objects.filter(pk=run.pk).update(
        judge_choice=JudgeSpec("openai", "gone", "m").to_dict()
    )
    run.refresh_from_db()
    with pytest.raises(PodiumFault, match="judge endpoint 'gone' is not configured"):
        judge_stage(run)  # the chosen judge is the one asked for, not the task's
    EvaluationRun.objects.filter(pk=run.pk).update(judge_choice=JudgeSpec("rules").to_dict())
    run.refresh_from_db()
    assert judge_stage(run) == 0
    run.refresh_from_db()
    assert run.judge_id.startswith("rules") and ItemAnswer.objects.filter(verdict__isnull=False)
    thumbnails = dict(ItemAnswer.objects.filter(run=run).values_list("item_key", "thumbnail"))
    assert thumbnails["c0-t0"] == thumbnails["c0-t1"] != thumbnails["c1-t0"]  # one per image
    with default_storage.open(thumbnails["c1-t0"], "rb") as stored, Image.open(stored) as image:
        assert image.format == "JPEG" and max(image.size) <= THUMBNAIL_PX


def test_a_thumbnail_is_scaled_down_keeping_its_shape(tmp_path):
    Image.new("RGB", (1200, 600), (200, 10, 10)).save(tmp_path / "big.png")
    (tmp_path / "broken.jpg").write_bytes(b"not an image")
    with Image.open(io.BytesIO(scaled_jpeg(tmp_path / "big.png"))) as image:
        assert image.format == "JPEG" and image.size == (THUMBNAIL_PX, THUMBNAIL_PX // 2)
    with pytest.raises(OSError):
        scaled_jpeg(tmp_path / "broken.jpg")
