"""Simulated GPU nodes for ``bench/control_plane.py``: ``COUNT`` ``celery worker`` processes
(solo pool: one run at a time) on the GPU queue, each with a node id, cache directory and log
of its own, forked from this process once it has imported Podium (copy-on-write: 50 workers
started apart would take about 17 GiB). Run with ``PODIUM_AGENT_ENGINE=fake`` and the
bench's ``DATABASE_URL`` / ``REDIS_URL``; SIGTERM stops them all.

    python bench/control_plane_nodes.py COUNT PREFIX ROOT QUEUE
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from pathlib import Path

from celery import Celery

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")


def main() -> None:
    count, prefix, root, queue = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4]
    import django

    django.setup()
    from django.conf import settings
    from django.db import connections

    import leaderboard.pipeline.stage_tasks  # noqa: F401 (the tasks, imported once for all)
    from podium.celery import app

    if settings.PODIUM_AGENT_ENGINE != "fake":
        raise SystemExit("PODIUM_AGENT_ENGINE=fake only: these nodes have no Docker engine")
    connections.close_all()
    gc.freeze()  # the shared pages stay shared: no collection writes to them
    children = []
    for number in range(count):
        name = f"{prefix}-{number}"
        pid = os.fork()
        if pid == 0:
            _node(app, name, root, queue)
        children.append(pid)

    def forward(signum: int, _frame: object) -> None:
        for child in children:
            os.kill(child, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for child in children:
        os.waitpid(child, 0)


def _node(app: Celery, name: str, root: Path, queue: str) -> None:
    """In the forked child: become node ``name`` and run its worker until it is stopped."""
    from django.conf import settings

    var = root / name
    var.mkdir(parents=True, exist_ok=True)
    settings.PODIUM_NODE_ID = name
    settings.VAR_DIR = var
    log = os.open(root / f"{name}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    argv = ["worker", "--pool=solo", "-Q", queue, "-n", f"{name}@%h",
            "--without-gossip", "--without-mingle", "-l", "info"]  # fmt: skip
    try:
        app.worker_main(argv)
    finally:
        os._exit(0)


if __name__ == "__main__":
    main()
