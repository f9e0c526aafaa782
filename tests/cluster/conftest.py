"""The ``cluster`` fixture: worker nodes (``tests/cluster/nodes.py``) on the test database, a
Redis database of their own (emptied around each test) and an S3 server that this test process
uses too (submissions and split bundles are stored there)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from podium.settings import s3_storage
from tests import required, seaweedfs
from tests.cluster.nodes import Cluster
from tests.e2e.harness import BROKER, database_url, own_broker
from tests.workers.conftest import build_agent_base

# What the nodes of a test run with: quick retries, a reaper and a janitor that act in seconds.
FAST = {
    "PODIUM_RETRY_BACKOFF_S": "1",
    "PODIUM_RETRY_BACKOFF_MAX_S": "2",
    "PODIUM_HEARTBEAT_TIMEOUT_S": "4",
    "PODIUM_REAPER_INTERVAL_S": "1",
    "PODIUM_JANITOR_INTERVAL_S": "2",
    # the image stored by the build stage, beside the run: a node lost mid-run leaves it behind
    "PODIUM_IMAGE_STORE": "always",
}


@pytest.fixture
def cluster(transactional_db, settings) -> Iterator[Cluster]:
    for program in ("dockerd", "docker"):
        if shutil.which(program) is None:
            required.unavailable(f"{program} is not installed")
    seaweedfs.require()
    build_agent_base()  # the nodes that build load it from the machine's engine
    root = Path(tempfile.mkdtemp(prefix="podium-nodes-", dir="/var/tmp"))
    nodes = Cluster(root, {"DATABASE_URL": database_url(), "REDIS_URL": BROKER, **FAST})
    settings.STORAGES = {**settings.STORAGES, "default": s3_storage(nodes.s3_env)}
    settings.VAR_DIR = root / "test-process"
    try:
        with own_broker():
            yield nodes
    finally:
        nodes.close()
