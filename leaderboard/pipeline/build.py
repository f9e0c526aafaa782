"""The build stage: the submission's artifact becomes a local image, pinned by digest.

The first run of a submission loads (or builds, or pulls) its image, records the digest on the
submission and hands the run over; the node then owes the image's archive to the other nodes
(``image_store.offer``: its exporter stores it when another node asks, or ahead as
``PODIUM_IMAGE_STORE`` says; in ``always`` mode this stage stores it right after the hand-over).
Its other runs find the image by that digest, in their engine or in storage.

The submission's state always ends (``Submission.State``): ``building`` once a run starts
making its image, then ``ready``; or ``failed``, with the engine's reason, when the team's upload
is at fault; or ``podium-failed`` (refunded) when Podium is: a ``PodiumFault`` (a base image
missing on this node, a bad package index setting), a bug, or a Docker engine or build engine
that stayed unreachable through the bounded retries of ``stage_tasks``
(``MAX_INFRASTRUCTURE_RETRIES``, with back-off; meanwhile the submission stays ``building`` and
the run names the fault it waits on) or a worker lost too often (``leaderboard.tasks``). Either
failure ends its other runs as they reach this stage, and an organiser's re-run starts again
from ``received``.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import docker
import docker.errors
import requests.exceptions
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from leaderboard.models import EvaluationRun, Submission
from leaderboard.pipeline import image_store
from leaderboard.pipeline.ownership import hand_over
from leaderboard.submitting.artifacts import check_stored_archive
from leaderboard.submitting.hub_models import allowed_models, image_models
from workers.builds import BaseImageMissing, build_context
from workers.fake_engine import fake_image
from workers.faults import PodiumFault, TransientFault
from workers.images import AgentImage, ImageError, load_archive, local_image, pull
from workers.package_index import IndexURLError

State = EvaluationRun.State
Kind = Submission.ArtifactKind
BUILD_TIMEOUT_S = 1800
UPLOAD_NAME = "your upload"
logger = logging.getLogger("podium.pipeline")


def engine_is_fake() -> bool:
    """Whether this process answers runs with the fake engine (``PODIUM_AGENT_ENGINE=fake``:
    ``workers.fake_engine``, benches only), which needs no Docker engine."""
    return bool(settings.PODIUM_AGENT_ENGINE == "fake")


def fake_submission_image(submission: Submission) -> AgentImage:
    """The submission's image on a node of the fake engine: a name made from its upload."""
    return fake_image(submission.artifact.name or f"submission-{submission.pk}")


def _fake_build(submission: Submission) -> None:
    """The fake engine's build: the image is a name, recorded once as a build records it."""
    digest = fake_submission_image(submission).digest
    Submission.objects.filter(pk=submission.pk, image_digest="").update(
        image_digest=digest, state=Submission.State.READY
    )


@contextmanager
def engine_client() -> Iterator[docker.DockerClient]:
    """A client of the local engine (``docker_client``), closed on leaving."""
    client = docker_client()
    try:
        yield client
    finally:
        client.close()


def docker_client() -> docker.DockerClient:
    """A client of the local engine, or TransientFault when it does not answer."""
    try:
        client = docker.from_env()
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise TransientFault(f"the Docker engine does not answer: {exc}") from exc
    return client


@contextmanager
def _artifact_file(submission: Submission) -> Iterator[Path]:
    """The artifact as a local file (a copy when storage is remote)."""
    if not submission.artifact:
        raise ImageError(f"submission #{submission.pk}: no artifact was uploaded")
    try:
        yield Path(submission.artifact.path)
        return
    except NotImplementedError:  # remote storage has no local path
        pass
    with tempfile.NamedTemporaryFile(suffix=".tar") as copy:
        with submission.artifact.open("rb") as source:
            shutil.copyfileobj(source, copy, 1024 * 1024)
        copy.flush()
        yield Path(copy.name)


def _materialise(submission: Submission, client: docker.DockerClient) -> AgentImage:
    image = _image(submission, client)
    if submission.artifact_kind != Kind.BUILD_CONTEXT:  # an image declares models by label
        labels = client.images.get(image.image_id).labels or {}
        try:
            models = image_models(labels, submission.challenge)
        except ValidationError as exc:
            raise ImageError(" ".join(exc.messages)) from None
        _declare(submission, models)
    return image


def _declare(submission: Submission, models: list[dict[str, str]]) -> None:
    if models != submission.declared_models:
        submission.declared_models = models
        submission.save(update_fields=["declared_models"])


def _image(submission: Submission, client: docker.DockerClient) -> AgentImage:
    if submission.artifact_kind == Kind.REGISTRY_REF:
        return pull(submission.registry_ref, client)
    with _artifact_file(submission) as path:
        try:
            facts = check_stored_archive(path, submission.artifact_kind, UPLOAD_NAME)
            models = allowed_models(facts.manifests or {}, submission.challenge, UPLOAD_NAME)
        except ValidationError as exc:  # the team's upload: its own words, Podium's reason
            raise ImageError(" ".join(exc.messages)) from None
        try:
            package_index = submission.challenge.build_index()
        except IndexURLError as exc:
            raise PodiumFault(f"{submission.challenge.slug}: package index: {exc}") from None
        _declare(submission, models)
        try:
            if submission.artifact_kind == Kind.IMAGE_ARCHIVE:
                return load_archive(path, client)
            return build_context(
                path,
                base_images=settings.PODIUM_BUILD_BASE_IMAGES,
                labels={"podium.submission": str(submission.pk)},
                timeout_s=BUILD_TIMEOUT_S,
                max_layer_bytes=settings.PODIUM_BUILD_MAX_LAYER_BYTES,
                max_image_bytes=settings.PODIUM_BUILD_MAX_IMAGE_BYTES,
                package_index=package_index,
                client=client,
                engine_url=settings.PODIUM_BUILD_ENGINE,
            )
        except ImageError as exc:  # name the upload, not a path on Podium's disk
            raise ImageError(str(exc).replace(str(path), UPLOAD_NAME)) from None
        except BaseImageMissing as exc:
            raise PodiumFault(f"submission #{submission.pk}: {exc}") from None


def _on_this_node(digest: str, client: docker.DockerClient) -> AgentImage | None:
    """The recorded image in this engine: there already (this node owes its archive if
    storage lost it: swept), else loaded from storage."""
    try:
        image = local_image(digest, client)
    except ImageError:
        return image_store.fetch(digest, client)
    image_store.offer(image)
    return image


def submission_image(submission: Submission, client: docker.DockerClient) -> AgentImage:
    """The submission's image in this engine: made and pinned the first time (this node then
    owes its archive to the others: ``image_store.offer``), afterwards found here or loaded from
    storage (``image_store``); made again when neither has it."""
    if submission.image_digest:
        found = _on_this_node(submission.image_digest, client)
        if found is not None:
            return found
    Submission.objects.filter(pk=submission.pk, state=Submission.State.RECEIVED).update(
        state=Submission.State.BUILDING
    )  # seen while it builds; a failure ends it (build_stage, fail_for_podium)
    with transaction.atomic():
        locked = Submission.objects.select_for_update().get(pk=submission.pk)
        if locked.image_digest and locked.image_digest != submission.image_digest:
            found = _on_this_node(locked.image_digest, client)
            if found is not None:
                submission.image_digest = locked.image_digest
                return found
        try:
            image = _materialise(locked, client)
        except ImageError:
            docker_client()  # an engine that went away is Podium's failure, not the team's
            raise
        # The first digest recorded stays: it is what the leaderboard shows for the submission.
        Submission.objects.filter(pk=locked.pk).update(
            image_digest=locked.image_digest or image.digest,
            state=Submission.State.READY,
            build_log=image.build_log or locked.build_log,
        )
        if image.digest == (locked.image_digest or image.digest):  # not a rebuild's new ID
            image_store.offer(image)
    submission.image_digest = locked.image_digest or image.digest
    return image


def fail_submission(submission: Submission, reason: str) -> None:
    Submission.objects.filter(pk=submission.pk).update(
        state=Submission.State.FAILED, failure_reason=reason
    )


def build_stage(run: EvaluationRun) -> None:
    """Stage ``building``: the image is there and pinned; hand the run to ``running``."""
    submission = run.submission
    if submission.state == Submission.State.FAILED:
        run.move_to(State.FAILED, failure_reason=submission.failure_reason)
        return
    if submission.state == Submission.State.PODIUM_FAILED:  # fail_for_podium ends the run
        raise PodiumFault(f"submission #{submission.pk}: its build failed on Podium's side")
    if engine_is_fake():
        _fake_build(submission)
        hand_over(run, State.RUNNING)
        return
    with engine_client() as client:
        try:
            image = submission_image(submission, client)
        except ImageError as exc:
            reason = f"your agent image could not be prepared: {exc}"
            fail_submission(submission, reason)
            run.move_to(State.FAILED, failure_reason=reason)
            return
        hand_over(run, State.RUNNING)
        if settings.PODIUM_IMAGE_STORE == "always" and image.digest == submission.image_digest:
            _store_now(image, client)


def _store_now(image: AgentImage, client: docker.DockerClient) -> None:
    """``always`` mode: the image stored right after the run went on (beside it, if it runs
    on this node), so it is in storage even if this node is lost during that run. The run is
    not this step's: a failure is logged, and the node's exporter tries again."""
    if image_store.stored(image.digest) is not None or image.digest != image.image_id:
        return
    try:
        image_store.export(image.image_id, client)
    except Exception as exc:
        logger.warning("image %s not stored for the other nodes: %r", image.image_id, exc)
