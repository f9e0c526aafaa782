"""The stage tasks' decisions: whose run it is, bad images, faults on Podium's side, an
unreachable Docker engine (real worker processes, Redis, PostgreSQL, Docker)."""

from __future__ import annotations

import contextlib
from datetime import timedelta

import docker
import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from leaderboard import run_actions
from leaderboard.models import Challenge, EvaluationRun, Submission
from leaderboard.models.submission import PODIUM_BUILD_REASON
from leaderboard.pipeline import stage_tasks
from leaderboard.pipeline.ownership import PODIUM_FAULT_REASON, claim, hand_over, worker_id
from leaderboard.splits import import_split_dir
from leaderboard.submitting import Artifact, MethodInfo, submit
from leaderboard.tasks import requeue_stale_runs
from tests.e2e.harness import REPO, make_task, pipeline, submit_agent, team_member, write_split
from tests.workers.conftest import tar_bytes

# Every test here runs real Celery workers whose stages build and run agents on the Docker engine.
pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]
__all__ = ["pipeline", "team_member"]  # fixtures used by the tests below

State = EvaluationRun.State
IDK = REPO / "examples/agents/idk"


@pytest.fixture
def challenge_with_split(pipeline, tmp_path):
    challenge = Challenge.objects.create(name="Stages", slug="stages", is_published=True)
    task = make_task(challenge, "single-source-augmentation")
    import_split_dir(task, "validation", write_split(tmp_path / "split", 3, 1))
    return challenge


def submit_image(team, challenge, user, image, name: str) -> Submission:
    """An engine's image, saved unnamed and submitted as the team's image archive."""
    return submit(
        team,
        challenge,
        user,
        Artifact(
            kind=Submission.ArtifactKind.IMAGE_ARCHIVE,
            file=SimpleUploadedFile(f"{name}.tar", b"".join(image.save(named=False))),
        ),
        MethodInfo(method_name=name),
    )


def test_a_run_belongs_to_the_stage_that_claims_it_and_to_nobody_else(
    challenge_with_split, team_member
):
    team, user = team_member
    submission = submit_agent(team, user, challenge_with_split, IDK, "idk")
    run = EvaluationRun.objects.get(submission=submission)
    assert claim(run.pk, State.RUNNING) is None, "a queued run starts with the build stage"
    mine = claim(run.pk, State.BUILDING)
    assert mine is not None and mine.worker_id == worker_id()
    assert claim(run.pk, State.BUILDING) is None, "a second delivery finds it taken"
    hand_over(mine, State.RUNNING)
    mine.refresh_from_db()
    assert (mine.state, mine.worker_id) == (State.RUNNING, "")
    assert claim(run.pk, State.BUILDING) is None
    assert claim(run.pk, State.RUNNING).worker_id == worker_id()
    assert claim(run.pk, State.RUNNING) is None
    assert stage_tasks.judge_task(run_id=run.pk) == "not mine"
    assert stage_tasks.judge_task(run_id=10**9) == "not mine"


def test_a_run_waiting_for_its_next_stage_is_not_reaped_but_a_silent_worker_is(
    challenge_with_split, team_member, settings
):
    team, user = team_member
    submission = submit_agent(team, user, challenge_with_split, IDK, "idk")
    run = EvaluationRun.objects.get(submission=submission)
    hand_over(claim(run.pk, State.BUILDING), State.RUNNING)
    long_ago = timezone.now() - timedelta(seconds=settings.PODIUM_HEARTBEAT_TIMEOUT_S + 1)
    EvaluationRun.objects.filter(pk=run.pk).update(heartbeat_at=long_ago)
    assert requeue_stale_runs() == {"requeued": [], "failed": []}, "queued for a GPU worker"
    claim(run.pk, State.RUNNING)
    EvaluationRun.objects.filter(pk=run.pk).update(heartbeat_at=long_ago)
    assert requeue_stale_runs()["requeued"] == [run.pk], "its worker went silent"
    run.refresh_from_db()
    assert (run.state, run.stage, run.attempt) == (State.QUEUED, State.RUNNING, 1)
    assert claim(run.pk, State.RUNNING) is not None, "the resumed stage claims it"


def test_a_bad_image_fails_the_submission_with_a_reason_the_team_can_read(
    challenge_with_split, team_member
):
    team, user = team_member
    context = tar_bytes({"Dockerfile": b"FROM podium/agent-base:py3.11\nRUN exit 3\n"})
    upload = SimpleUploadedFile("broken.tar", context)
    submission = submit(
        team,
        challenge_with_split,
        user,
        Artifact(kind=Submission.ArtifactKind.BUILD_CONTEXT, file=upload),
        MethodInfo(method_name="broken"),
    )
    run = EvaluationRun.objects.get(submission=submission)
    assert stage_tasks.build_task(run_id=run.pk) == State.FAILED
    run.refresh_from_db()
    submission.refresh_from_db()
    assert submission.state == Submission.State.FAILED
    assert run.failure_reason == submission.failure_reason
    assert "build failed" in run.failure_reason and "exit 3" in run.failure_reason.lower()
    assert "your upload" in run.failure_reason
    assert str(REPO) not in run.failure_reason and "/media/" not in run.failure_reason
    assert submission.consumes_quota, "the team's own failure counts"


def test_an_upload_left_unchecked_by_the_web_request_is_refused_by_the_build_stage(
    challenge_with_split, team_member, settings
):
    settings.PODIUM_UPLOAD_CHECK_S = 0.001  # the web request's check cannot finish
    team, user = team_member
    evil = tar_bytes({"Dockerfile": b"FROM podium/agent-base:py3.11\n", "a/../../evil": b"x"})
    submission = submit(
        team,
        challenge_with_split,
        user,
        Artifact(
            kind=Submission.ArtifactKind.BUILD_CONTEXT, file=SimpleUploadedFile("e.tar", evil)
        ),
        MethodInfo(method_name="evil"),
    )
    run = EvaluationRun.objects.get(submission=submission)
    assert stage_tasks.build_task(run_id=run.pk) == State.FAILED
    submission.refresh_from_db()
    assert submission.state == Submission.State.FAILED
    assert "your upload: entry 'a/../../evil' is a path leading outside the archive" in (
        submission.failure_reason
    )
    assert submission.image_digest == "", "Docker never saw it"


def test_a_fault_on_podiums_side_fails_the_run_and_refunds_the_quota(
    challenge_with_split, team_member
):
    team, user = team_member
    task = challenge_with_split.tasks.get()
    task.image_search_enabled = True  # but the challenge has no search corpus stored
    task.save()
    submission = submit_agent(team, user, challenge_with_split, IDK, "idk")
    run = EvaluationRun.objects.get(submission=submission)
    EvaluationRun.objects.filter(pk=run.pk).update(state=State.RUNNING, stage=State.RUNNING)
    assert stage_tasks.run_task(run_id=run.pk) == State.FAILED
    run.refresh_from_db()
    assert run.failure_reason == PODIUM_FAULT_REASON
    assert "no search corpus" in run.operator_detail
    assert not Submission.objects.get(pk=submission.pk).consumes_quota


@pytest.mark.slow
def test_a_base_image_missing_on_the_node_ends_the_submission_as_podiums_failure(
    pipeline, challenge_with_split, team_member, settings, tmp_path
):
    """The docs' advice for GPU tasks, ``FROM podium/agent-base:cuda12``, where that image is
    not built: each run fails as Podium's fault, and the submission ends ``podium-failed``,
    refunded, instead of staying "received"; an organiser's re-run starts it again."""
    missing = "podium/agent-base:cuda12"
    if docker.from_env().images.list(name=missing):
        pytest.skip(f"{missing} is built on this node")
    assert missing in settings.PODIUM_BUILD_BASE_IMAGES
    team, user = team_member
    task = challenge_with_split.tasks.get()
    import_split_dir(task, "public-test", write_split(tmp_path / "public", 2, 1))
    context = tar_bytes({"Dockerfile": f"FROM {missing}\nCOPY . /agent\n".encode()})
    submission = submit(
        team,
        challenge_with_split,
        user,
        Artifact(
            kind=Submission.ArtifactKind.BUILD_CONTEXT, file=SimpleUploadedFile("gpu.tar", context)
        ),
        MethodInfo(method_name="gpu"),
    )
    pipeline.start_worker("worker")
    runs = pipeline.wait_finished(submission, timeout_s=120)
    assert [(r.state, r.failure_kind, r.failure_reason) for r in runs] == [
        (State.FAILED, "podium", PODIUM_FAULT_REASON)
    ] * 2
    assert any(
        f"Podium's base image {missing} is not in this engine" in r.operator_detail for r in runs
    )
    submission.refresh_from_db()
    assert (submission.state, submission.failure_reason, submission.consumes_quota) == (
        Submission.State.PODIUM_FAILED, PODIUM_BUILD_REASON, False,
    )  # fmt: skip
    organiser = User.objects.create_superuser("org", password="pw-secret-123")
    assert run_actions.rerun(runs, organiser, "cuda12 built") == []
    submission.refresh_from_db()
    assert submission.state == Submission.State.RECEIVED
    runs = pipeline.wait_finished(submission, timeout_s=120)  # still missing: ends again
    submission.refresh_from_db()
    assert submission.state == Submission.State.PODIUM_FAILED
    assert [r.state for r in runs] == [State.FAILED] * 2


@pytest.mark.slow
def test_an_unreachable_docker_engine_is_retried_until_it_answers(
    pipeline, challenge_with_split, team_member
):
    team, user = team_member
    submission = submit_agent(team, user, challenge_with_split, IDK, "idk")
    run = EvaluationRun.objects.get(submission=submission)
    cut_off = pipeline.start_worker("cut-off", DOCKER_HOST="unix:///nonexistent/docker.sock")
    pipeline.wait_for("two retries", lambda: pipeline.log("cut-off").count("does not answer") >= 2)
    run.refresh_from_db()
    assert (run.state, run.worker_id) == (State.BUILDING, ""), "given back, not failed"
    cut_off.terminate()
    cut_off.wait()
    pipeline.start_worker("connected")
    (run,) = pipeline.wait_finished(submission, timeout_s=120)
    assert run.state == State.DONE, (run.failure_reason, run.operator_detail)


def test_an_image_declares_its_models_by_label_and_only_the_challenges_are_taken(
    challenge_with_split, team_member, tmp_path
):
    import io

    import docker

    from leaderboard.models import HubModel

    team, user = team_member
    HubModel.objects.create(challenge=challenge_with_split, hub_id="org/tiny", snapshot="a" * 40)
    engine = docker.from_env()

    def send(name: str, label: str) -> Submission:
        dockerfile = f"FROM podium/agent-base:py3.11\nLABEL org.podium.models='{label}'\n"
        image, _ = engine.images.build(fileobj=io.BytesIO(dockerfile.encode()), rm=True)
        return submit_image(team, challenge_with_split, user, image, name)

    refused = send("absent", '["org/tiny", "org/absent"]')
    run = EvaluationRun.objects.get(submission=refused)
    assert stage_tasks.build_task(run_id=run.pk) == State.FAILED
    refused.refresh_from_db()
    assert refused.failure_reason == (
        "your agent image could not be prepared: Stages does not provide org/absent@main: "
        "the models agents may load are org/tiny@main"
    )
    malformed = send("malformed", '{"models": "org/tiny"}')
    run = EvaluationRun.objects.get(submission=malformed)
    assert stage_tasks.build_task(run_id=run.pk) == State.FAILED
    malformed.refresh_from_db()
    assert malformed.failure_reason == (
        "your agent image could not be prepared: the image's label org.podium.models must hold "
        "a JSON list of hub ids"
    )

    taken = send("tiny", '["org/tiny"]')
    run = EvaluationRun.objects.get(submission=taken)
    assert stage_tasks.build_task(run_id=run.pk) == State.RUNNING
    taken.refresh_from_db()
    assert taken.declared_models == [{"hub_id": "org/tiny", "revision": "main"}]


def test_always_mode_stores_the_image_right_after_the_run_is_handed_over(
    challenge_with_split, team_member, settings, monkeypatch
):
    """A run on the building node never waits for the export (hundreds of MB); the archive is
    in storage before that run ends, should this node be lost meanwhile."""
    import io

    import docker

    from leaderboard.pipeline import image_store

    settings.PODIUM_IMAGE_STORE = "always"
    team, user = team_member
    engine = docker.from_env()
    dockerfile = b"FROM podium/agent-base:py3.11\nLABEL org.podium.test=stored-after\n"
    image, _ = engine.images.build(fileobj=io.BytesIO(dockerfile), rm=True)
    submission = submit_image(team, challenge_with_split, user, image, "stored after")
    run = EvaluationRun.objects.get(submission=submission)
    seen: list[tuple[str, str]] = []
    export = image_store.export

    def watched(image_id, client):
        run.refresh_from_db()
        seen.append((run.state, Submission.objects.get(pk=submission.pk).image_digest))
        return export(image_id, client)

    monkeypatch.setattr(image_store, "export", watched)
    assert stage_tasks.build_task(run_id=run.pk) == State.RUNNING
    submission.refresh_from_db()
    assert seen == [(State.RUNNING, submission.image_digest)]
    assert image_store.stored(submission.image_digest) is not None


def test_the_image_is_stored_once_no_run_is_timed_and_a_rerun_after_its_sweep_works(
    challenge_with_split, team_member, settings
):
    """The build stage hands the run over; the node owes the image's archive, and its exporter
    stores it only once the timed run is over. Swept later, a re-run on a node whose engine
    lost the image does not wait for the archive: it loads the upload again, runs, and the
    node owes the archive again."""
    import io
    import time

    import docker
    import docker.errors

    from leaderboard import image_retention
    from leaderboard.models import ImageArchive
    from leaderboard.pipeline import image_store, node
    from leaderboard.run_actions import rerun

    settings.PODIUM_IMAGE_STORE = "auto"
    settings.PODIUM_IMAGE_STORE_WAIT_S = 60
    settings.PODIUM_IMAGE_STORE_KEEP_S = 0
    team, user = team_member

    def exporter_pass() -> list[str]:
        """This node's exporter, while another GPU node is seen (it would want the image)."""
        node.events_redis().hset(node.nodes_key(), "another-node", str(time.time()))
        return node.export_pass(serves=True)

    engine = docker.from_env()
    dockerfile = (IDK / "Dockerfile").read_bytes() + b"LABEL org.podium.test=swept-rerun\n"
    context = tar_bytes({"Dockerfile": dockerfile, "agent.py": (IDK / "agent.py").read_bytes()})
    built, _ = engine.images.build(fileobj=io.BytesIO(context), custom_context=True, rm=True)
    submission = submit_image(team, challenge_with_split, user, built, "swept")
    run = EvaluationRun.objects.get(submission=submission)
    try:
        assert stage_tasks.build_task(run_id=run.pk) == State.RUNNING
        submission.refresh_from_db()
        digest = submission.image_digest
        owed = ImageArchive.objects.get(image_id=digest)
        assert (owed.state, owed.node) == (ImageArchive.State.PENDING, settings.PODIUM_NODE_ID)
        assert exporter_pass() == [], "a GPU worker here may take the run"
        assert image_store.stored(digest) is None
        assert stage_tasks.run_task(run_id=run.pk) == State.JUDGING
        assert exporter_pass() == [digest], "no timed run any more"
        assert image_store.stored(digest) is not None

        EvaluationRun.objects.filter(pk=run.pk).update(state=State.DONE, finished_at=timezone.now())
        later = timezone.now() + timedelta(seconds=1)
        assert image_retention.sweep(now=later).removed == [digest]
        assert image_store.stored(digest) is None

        assert rerun([run], user, "the split was fixed") == []
        engine.images.remove(digest, force=True)  # this node's engine lost it meanwhile
        started = time.monotonic()
        assert stage_tasks.build_task(run_id=run.pk) == State.RUNNING
        assert time.monotonic() - started < 30, "waited for an archive nobody owes"
        submission.refresh_from_db()
        assert submission.image_digest == digest, "the upload loads as the same image"
        assert ImageArchive.objects.get(image_id=digest).state == ImageArchive.State.PENDING
        assert stage_tasks.run_task(run_id=run.pk) == State.JUDGING
        assert exporter_pass() == [digest]
        assert image_store.stored(digest) is not None
    finally:
        with contextlib.suppress(docker.errors.ImageNotFound):
            engine.images.remove(built.id, force=True)
