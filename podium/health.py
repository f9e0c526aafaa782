"""Probes for load balancers, Docker health checks and Kubernetes.

- ``GET /healthz``: the process answers requests (liveness); touches nothing else.
- ``GET /readyz``: this node can serve (readiness): the database answers a query and the broker
  (Redis) a ping. 200 with ``{"ready": true, ...}``, else 503 naming what failed. A process
  configured with the fake agent engine (``PODIUM_AGENT_ENGINE=fake``: the control plane's
  bench) is never ready, nor is a Celery process by ``main``: it is never taken into service.

Both are answered by ``ProbeMiddleware``, first in ``MIDDLEWARE``: before the host check (a
kubelet or a health check asks by the pod's or container's address, not a name in
``ALLOWED_HOSTS``), HTTPS redirects, sessions and sign-in throttling.

``python -m podium.health worker|beat`` is the probe of the Celery processes (see ``main``).
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys
from collections.abc import Callable

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers

TIMEOUT_S = 3.0
log = logging.getLogger(__name__)


def _database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        return f"database: {type(exc).__name__}: {exc}"
    return None


def _broker() -> str | None:
    try:
        redis.Redis.from_url(
            settings.CELERY_BROKER_URL, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S
        ).ping()
    except Exception as exc:
        return f"broker: {type(exc).__name__}: {exc}"
    return None


def _engine() -> str | None:
    if settings.PODIUM_AGENT_ENGINE == "fake":
        return "engine: PODIUM_AGENT_ENGINE=fake answers runs with no agent (benches only)"
    return None


def _readiness() -> JsonResponse:
    """Anyone may ask, so the reply names only the failing part (``database``, ``broker``,
    ``engine``); the error itself, which can name hosts and users, goes to this process's log."""
    problems = [p for p in (_engine(), _database(), _broker()) if p]
    for problem in problems:
        log.warning("not ready: %s", problem)
    return JsonResponse(
        {"ready": not problems, "problems": [p.split(":", 1)[0] for p in problems]},
        status=503 if problems else 200,
    )


PROBES = {"/healthz": lambda: JsonResponse({"alive": True}), "/readyz": _readiness}


class ProbeMiddleware:
    """Answers ``GET``/``HEAD`` of the probe paths; every other request passes through."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path_info)
        if probe is None or request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        response = probe()
        add_never_cache_headers(response)
        return response


def _worker_answers(name: str) -> str | None:
    from podium.celery import app

    replies = app.control.ping(destination=[name], timeout=TIMEOUT_S)
    return None if replies else f"worker {name} did not answer a ping within {TIMEOUT_S:.0f} s"


def main(argv: list[str] | None = None) -> int:
    """``worker [NAME]``: that Celery worker answers a broadcast ping (default
    ``celery@<hostname>``, the name ``celery worker`` takes unless ``-n`` says otherwise);
    ``beat``: the broker and the database answer (beat only needs them). Exit 0 or 1 with the
    reason on stderr."""
    import django

    parser = argparse.ArgumentParser(prog="python -m podium.health")
    parser.add_argument("role", choices=["worker", "beat"])
    parser.add_argument("name", nargs="?", default=f"celery@{socket.gethostname()}")
    args = parser.parse_args(argv)
    django.setup()
    problems = [p for p in (_engine(), _broker(), _database()) if p]
    if not problems and args.role == "worker":
        problems = [p for p in [_worker_answers(args.name)] if p]
    for problem in problems:
        print(f"podium.health {args.role}: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
