"""For every test: Django's default cache starts empty, so the API throttles (and cached pages)
carry nothing over from another test. For any test: Visual-RAG's generated sample, once. For
the session: the worker processes tests start (on the test database, whose name differs) are
this install (``PODIUM_INSTALL_ID``), so they consume the queues the tests send to. For tests of
Podium on S3: a real S3 server (SeaweedFS, ``tests/seaweedfs.py``) per test process, and
Podium's storage there in a bucket of the test's own (``s3_storage``; ``each_storage`` runs a
test on local files, then on S3). Property tests (Hypothesis) are judged on what they find,
not on the machine's speed: no per-example deadline and no "input generation is slow" health
check, which a loaded CI machine trips."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.seaweedfs import SeaweedFS
from tests.seaweedfs import require as seaweedfs_required

settings.register_profile("podium", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("podium")


@pytest.fixture(scope="session")
def visual_rag_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Visual-RAG's generated sample (seed 0), written once a session: read it, never write
    into it (tests that write make their own directory)."""
    from evaluator.benchmarks.visual_rag.sample import write_sample

    root = tmp_path_factory.mktemp("visual-rag-sample")
    write_sample(root, seed=0)
    return root


@pytest.fixture(scope="session")
def seaweedfs() -> Iterator[SeaweedFS]:
    """SeaweedFS's S3, started once for this test process (tests take buckets of their own)."""
    seaweedfs_required()
    server = SeaweedFS()
    try:
        server.start()
        yield server
    finally:
        server.close()


@pytest.fixture
def s3_storage(seaweedfs: SeaweedFS, settings: Any) -> str:
    """Podium's storage (``podium.storage.S3Storage``, as production's) on SeaweedFS, in a new
    bucket: returns its name."""
    from podium.settings import s3_storage as storage_on

    bucket = seaweedfs.create_bucket()
    settings.STORAGES = {**settings.STORAGES, "default": storage_on(seaweedfs.env(bucket))}
    return bucket


@pytest.fixture(params=["files", "s3"])
def each_storage(request: pytest.FixtureRequest) -> str:
    """The test twice: on local files (as the fixtures before this one set them), then on S3
    (``s3_storage``). Returns which."""
    if request.param == "s3":
        request.getfixturevalue("s3_storage")
    return str(request.param)


@pytest.fixture(scope="session", autouse=True)
def _one_install() -> None:
    from django.conf import settings

    os.environ["PODIUM_INSTALL_ID"] = settings.PODIUM_INSTALL_ID  # inherited by subprocesses


@pytest.fixture(autouse=True)
def _empty_cache() -> None:
    from django.core.cache import cache

    cache.clear()


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups into node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under xdist (``-n 2 --dist loadgroup``, as scripts/test.sh runs), every test that needs the
    Docker engine goes to one worker: they share session-built images and the engine's CPU, and
    the other worker takes the rest (tests/services.py keeps their Redis databases apart)."""
    for item in items:
        if item.get_closest_marker("docker"):
            item.add_marker(pytest.mark.xdist_group("docker"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Fail loudly if the Docker group did not reach xdist (its node ids carry ``@docker``):
    split over both workers, the Docker tests remove each other's images and containers."""
    if not getattr(session.config.option, "loadgroup", False):
        return  # not an xdist worker under --dist loadgroup
    ungrouped = [
        item.nodeid
        for item in session.items
        if item.get_closest_marker("docker") and not item.nodeid.endswith("@docker")
    ]
    if ungrouped:
        raise pytest.UsageError(f"Docker tests outside the xdist group 'docker': {ungrouped[:3]}")
