"""Agent images between nodes: a node lacking an image waits while another node owes it (and
tells that node so), never when nobody does; the owing node's exporter stores what is asked for
at once and the rest only while no timed run is on it; PODIUM_IMAGE_STORE's modes. What goes
through storage is tested on local files and on S3 (``each_storage``)."""

from __future__ import annotations

import threading
import time

import pytest
import redis
from django.utils import timezone

from leaderboard.kits import store
from leaderboard.models import Challenge, EvaluationRun, ImageArchive, Split, Submission, Team
from leaderboard.pipeline import image_store, node
from tests.e2e.harness import make_task
from tests.services import redis_url
from workers import image_export
from workers.image_export import archive_name
from workers.images import AgentImage

pytestmark = pytest.mark.django_db
DIGEST = "sha256:" + "ab" * 32
Owed = ImageArchive.State


def image(n: int) -> AgentImage:
    image_id = f"sha256:{n:064x}"
    return AgentImage(ref=image_id, image_id=image_id)


def test_an_archive_stored_meanwhile_is_waited_for(local_storage, each_storage, settings) -> None:
    settings.PODIUM_IMAGE_STORE_WAIT_S = 30
    writer = threading.Timer(
        1.0, store.store_once, (archive_name(DIGEST), lambda out: out.write(b"layers"))
    )
    writer.start()
    started = time.monotonic()
    archive = image_store._awaited(DIGEST)
    writer.join()
    assert archive is not None and archive.size == len(b"layers")
    assert 0.9 <= time.monotonic() - started < 10


def test_the_wait_ends_when_nothing_comes_and_the_owing_node_is_told(
    local_storage, settings
) -> None:
    settings.PODIUM_IMAGE_STORE_WAIT_S = 1
    ImageArchive.objects.create(image_id=DIGEST, node="node-a")
    started = time.monotonic()
    assert image_store._awaited(DIGEST) is None
    assert 0.9 <= time.monotonic() - started < 5
    assert ImageArchive.objects.get(image_id=DIGEST).wanted_at is not None


def test_nobody_waits_for_an_archive_nobody_owes(local_storage, settings) -> None:
    settings.PODIUM_IMAGE_STORE_WAIT_S = 30
    ImageArchive.objects.create(image_id=DIGEST, state=Owed.GONE)  # swept
    started = time.monotonic()
    assert image_store._awaited(DIGEST) is None
    assert time.monotonic() - started < 1


def test_a_pulled_image_is_never_waited_for_nor_owed(local_storage, settings) -> None:
    settings.PODIUM_IMAGE_STORE_WAIT_S = 30
    started = time.monotonic()
    assert image_store._awaited("registry.example/team/agent@sha256:" + "cd" * 32) is None
    assert time.monotonic() - started < 1
    pulled = AgentImage(ref="r", image_id=DIGEST, repo_digests=("registry.example/a@sha256:1",))
    image_store.offer(pulled)
    assert not ImageArchive.objects.exists()


def test_never_mode_owes_nothing_and_waits_for_nothing(local_storage, settings) -> None:
    settings.PODIUM_IMAGE_STORE = "never"
    settings.PODIUM_IMAGE_STORE_WAIT_S = 30
    image_store.offer(image(1))
    assert not ImageArchive.objects.exists()
    ImageArchive.objects.create(image_id=DIGEST, node="node-a")
    started = time.monotonic()
    assert image_store.fetch(DIGEST, client=None) is None  # type: ignore[arg-type]
    assert time.monotonic() - started < 1
    assert node.start_exporter(serves=True) is None


def test_a_node_owes_an_image_until_it_is_stored_and_again_once_swept(
    local_storage, each_storage, settings
) -> None:
    settings.PODIUM_NODE_ID = "node-a"
    image_store.offer(image(1))
    settings.PODIUM_NODE_ID = "node-b"
    image_store.offer(image(1))  # another node found it too: node-a still owes it
    assert ImageArchive.objects.get().node == "node-a"
    store.store_once(archive_name(image(1).image_id), lambda out: out.write(b"layers"))
    ImageArchive.objects.update(state=Owed.STORED, node="")
    image_store.offer(image(1))
    assert ImageArchive.objects.get().state == Owed.STORED
    ImageArchive.objects.update(state=Owed.GONE)  # the sweep removed it
    image_store.offer(image(1))
    record = ImageArchive.objects.get()
    assert (record.state, record.node) == (Owed.PENDING, "node-b")


def test_the_exporter_stores_what_is_asked_for_at_once_and_the_rest_when_ahead(
    local_storage, each_storage, settings, monkeypatch
) -> None:
    settings.PODIUM_NODE_ID = "node-a"
    lost = image(4).image_id

    def save(engine_image, out, client=None):
        if engine_image.image_id == lost:
            raise image_export.ImageMissing("gone")
        out.write(engine_image.image_id.encode())
        return ""

    monkeypatch.setattr(image_export, "save", save)
    for n, owner in ((1, "node-a"), (2, "node-a"), (3, "node-b"), (4, "node-a")):
        wanted = None if n == 1 else timezone.now()  # another node waits for 2, 3 and 4
        ImageArchive.objects.create(image_id=image(n).image_id, node=owner, wanted_at=wanted)

    def export(ahead: bool) -> list[str]:
        return image_store.export_owed(None, ahead=lambda: ahead)  # type: ignore[arg-type]

    assert export(ahead=False) == [image(2).image_id], "asked for: stored even beside a run"
    states = dict(ImageArchive.objects.values_list("image_id", "state"))
    assert states == {
        image(1).image_id: Owed.PENDING,  # not asked for, not stored ahead now
        image(2).image_id: Owed.STORED,
        image(3).image_id: Owed.PENDING,  # node-b's
        image(4).image_id: Owed.GONE,  # this engine lost it: nobody waits for it any more
    }
    assert export(ahead=True) == [image(1).image_id]
    stored = ImageArchive.objects.get(image_id=image(1).image_id)
    assert (stored.state, stored.node, stored.wanted_at) == (Owed.STORED, "", None)
    assert stored.size == len(image(1).image_id) and stored.stored_at is not None
    assert image_store.stored(image(1).image_id) is not None


@pytest.fixture
def nodes_redis(monkeypatch, settings):
    client = redis.Redis.from_url(redis_url("reaper"))
    client.delete(node.nodes_key())
    monkeypatch.setattr(node, "events_redis", lambda: client)
    yield client
    client.delete(node.nodes_key())


def _run(state: str, worker: str) -> EvaluationRun:
    challenge, _ = Challenge.objects.get_or_create(slug="nodes", defaults={"name": "Nodes"})
    task = challenge.tasks.first() or make_task(challenge, "single-source-augmentation")
    split, _ = Split.objects.get_or_create(task=task, kind=Split.Kind.VALIDATION)
    submission = Submission.objects.create(
        team=Team.objects.create(name=f"t{Team.objects.count()}"), challenge=challenge,
        method_name="m", artifact_kind=Submission.ArtifactKind.REGISTRY_REF,
    )  # fmt: skip
    return EvaluationRun.objects.create(
        submission=submission, task=task, split=split, state=state, worker_id=worker
    )


def test_a_timed_run_here_or_one_waiting_for_a_gpu_worker_here_is_busy(settings):
    settings.PODIUM_NODE_ID = "node-a"
    State = EvaluationRun.State
    _run(State.BUILDING, "node-a/host:1")
    _run(State.JUDGING, "node-a/host:1")
    _run(State.RUNNING, "node-b/host:1")
    assert not node.timed_run_here(serves=True), "building and judging are not timed"
    waiting = _run(State.RUNNING, "")
    assert node.timed_run_here(serves=True), "a GPU worker here may take it any moment"
    assert not node.timed_run_here(serves=False), "none here: a build node"
    EvaluationRun.objects.filter(pk=waiting.pk).update(worker_id="node-a/host:2")
    assert node.timed_run_here(serves=False)


def test_the_modes_decide_what_is_stored_ahead(nodes_redis, settings):
    settings.PODIUM_IMAGE_STORE = "auto"
    settings.PODIUM_NODE_ID = "node-b"
    node.announce()
    settings.PODIUM_NODE_ID = "node-a"
    assert node.ahead_now(), "node-b runs agents: it would wait for node-a's images"
    _run(EvaluationRun.State.RUNNING, "node-a/host:1")
    assert not node.ahead_now(), "an agent is timed here"
    settings.PODIUM_IMAGE_STORE = "always"
    assert node.ahead_now(), "always: beside the timed run too"
    settings.PODIUM_IMAGE_STORE = "never"
    assert not node.ahead_now()
    settings.PODIUM_IMAGE_STORE = "auto"
    EvaluationRun.objects.all().delete()
    nodes_redis.hset(node.nodes_key(), "node-b", str(time.time() - node.NODE_SEEN_S - 1))
    node.announce()
    assert node.serving_nodes() == {"node-a"}
    assert not node.ahead_now(), "node-a alone: nobody needs its archives"
