"""The fake agent engine (``workers/fake_engine.py``) behind the real stages: what
``bench/control_plane.py``'s simulated nodes run, kept working here (no Docker)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from leaderboard.models import Challenge, EvaluationRun, ItemAnswer, Membership, Submission, Team
from leaderboard.pipeline import stage_tasks
from leaderboard.splits import import_split_dir
from leaderboard.tasks import STAGE_TASKS
from tests.e2e.harness import REPO, make_task, submit_agent, write_split
from tests.leaderboard.broker import broker_at
from tests.services import redis_url
from workers.fake_engine import FAKE_ANSWER, fake_image

# the answer sink writes from a thread of its own: the run must be committed
pytestmark = pytest.mark.django_db(transaction=True)
State = EvaluationRun.State
STAGES = {
    State.BUILDING: stage_tasks.build_task,
    State.RUNNING: stage_tasks.run_task,
    State.JUDGING: stage_tasks.judge_task,
    State.SCORING: stage_tasks.score_task,
}


@pytest.fixture
def broker():
    """Stage messages (sent after each commit, never consumed here) to this test's Redis."""
    with broker_at(redis_url("submit")) as client:
        yield client


@pytest.fixture
def fake_run(settings, tmp_path, broker) -> EvaluationRun:
    """A run of a submitted build context (never built: no engine is asked) on a split of 3
    conversations of 2 turns, on a node of the fake engine."""
    settings.PODIUM_AGENT_ENGINE = "fake"
    settings.VAR_DIR = tmp_path / "var"
    challenge = Challenge.objects.create(name="Fake", slug="fake", is_published=True)
    task = make_task(challenge, "multi-turn-qa")
    import_split_dir(task, "validation", write_split(tmp_path / "split", 3, 2))
    user = User.objects.create_user("fake-lead", password="pw-secret-123")
    team = Team.objects.create(name="Fake Lead")
    Membership.objects.create(team=team, user=user)
    submission = submit_agent(team, user, challenge, REPO / "examples/agents/idk", "idk")
    return EvaluationRun.objects.get(submission=submission)


def drive(run: EvaluationRun) -> list[str]:
    """Each stage's task, in this process, until the run ends; the states it went through."""
    seen = []
    for _ in range(len(STAGES) + 1):
        run.refresh_from_db()
        if run.state in EvaluationRun.TERMINAL_STATES:
            return seen
        stage = run.stage if run.state == State.QUEUED and run.stage else run.state
        stage = State.BUILDING if stage == State.QUEUED else stage
        assert STAGE_TASKS[stage] == STAGES[stage].name
        seen.append(STAGES[stage].apply(kwargs={"run_id": run.pk}).get())
    raise AssertionError(f"run #{run.pk} did not end: {seen}")


def test_the_fake_engine_drives_a_run_to_done_through_the_real_stages(fake_run):
    states = drive(fake_run)
    fake_run.refresh_from_db()
    assert fake_run.state == State.DONE, (fake_run.failure_reason, fake_run.operator_detail)
    assert states == [State.RUNNING, State.JUDGING, State.SCORING, State.DONE]
    answers = ItemAnswer.objects.filter(run=fake_run)
    assert sorted(answers.values_list("item_key", flat=True)) == [
        f"c{i}-t{j}" for i in range(3) for j in range(2)
    ]
    assert set(answers.values_list("response", "outcome")) == {(FAKE_ANSWER, "answered")}
    assert fake_run.items_done == fake_run.items_total == 6
    assert fake_run.slice_scores.exists()
    assert ItemAnswer.objects.filter(run=fake_run, verdict__isnull=False).count() == 6
    submission = fake_run.submission
    submission.refresh_from_db()
    assert submission.state == Submission.State.READY
    assert submission.image_digest == fake_image(submission.artifact.name).digest


def test_a_node_of_the_fake_engine_is_never_ready(settings):
    settings.PODIUM_AGENT_ENGINE = "fake"
    response = Client().get("/readyz")
    assert response.status_code == 503
    assert "engine" in response.json()["problems"]


def test_no_deployment_file_selects_the_fake_engine():
    files = [path for path in (REPO / "deploy").rglob("*") if path.is_file()]
    assert len(files) > 10
    named = [str(p) for p in files if b"PODIUM_AGENT_ENGINE" in p.read_bytes()]
    assert named == []
