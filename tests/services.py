"""The Redis databases the tests use, one per purpose, kept apart between test processes; and a
Django connection to a database server that is not there (``unreachable_database``).

Every test that talks to Celery empties its database around itself, so two processes must never
share one. A purpose's database is fixed for one process; ``PYTEST_XDIST_WORKER`` (gw0, gw1)
moves the second xdist worker to its own four, and ``PODIUM_TEST_REDIS`` names another Redis
server altogether (a second checkout running its suite beside this one starts its own
``redis-server --port N`` and points this at it).
"""

from __future__ import annotations

import copy
import os
import socket
from typing import Any

# purpose -> database on the first worker; worker N uses database - 4 * N (gw1: 8-11)
_DATABASES = {"submit": 12, "e2e": 13, "reaper": 14, "journeys": 15}
_WORKERS = 2  # databases 8-15: 0 is the default, 1 and 3 appear in settings tests, 11 in a bench


def redis_url(purpose: str) -> str:
    """The Redis URL of ``purpose``'s database for this test process."""
    base = os.environ.get("PODIUM_TEST_REDIS", "redis://127.0.0.1:6379").rstrip("/")
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    if worker >= _WORKERS:
        raise RuntimeError(f"tests/services.py keeps Redis databases for {_WORKERS} xdist workers")
    return f"{base}/{_DATABASES[purpose] - len(_DATABASES) * worker}"


def unreachable_database(**changes: Any) -> Any:
    """A Django connection of its own (``DatabaseWrapper``): the default database's settings
    with ``changes``; by default the test database's host on a port nothing listens on, so
    ``ensure_connection()`` raises Django's ``OperationalError`` as a restart would (open it
    inside ``django_db_blocker.unblock()`` in a test not marked ``django_db``)."""
    from django.db import connections
    from django.db.utils import load_backend

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]  # nothing listens once it is closed
    settings_dict = copy.deepcopy(connections["default"].settings_dict)
    settings_dict |= {"HOST": "127.0.0.1", "PORT": closed_port, **changes}
    return load_backend(str(settings_dict["ENGINE"])).DatabaseWrapper(settings_dict, "unreachable")
