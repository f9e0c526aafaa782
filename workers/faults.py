"""Whose fault a failure is: the one module that says so. Every error the pipeline acts on
derives from one of these three, or is a library's error that ``is_transient`` names, and the
stage tasks (``leaderboard/pipeline/stage_tasks.py``) decide by them.

- ``TeamFault``: what the team sent is at fault (its upload, its image, its agent's behaviour).
  The submission or run fails; the team reads the reason, in Podium's words only (never bytes
  its agent sent, for a private split); it counts against the team's quota.
- ``PodiumFault``: Podium cannot evaluate it (its configuration, stored data, a base image or a
  bug). The run fails with a fixed reason safe for the team; organisers read the detail; the
  quota is refunded.
- ``TransientFault``: Podium's side failed for now (the Docker engine, storage, the judge
  endpoint, the search process). The stage is retried later, with back-off, and resumes from
  what is stored; after too many retries the run fails as Podium's fault.

Services Podium depends on raise their own libraries' errors when they are unreachable; those
are transient too (``TRANSIENT_ERRORS``, ``is_transient``): the database (PostgreSQL restarted),
the broker (Redis restarted), object storage (an S3 endpoint unreachable, or answering 5xx
past botocore's own retries) and the Docker engine (``requests``' connection errors).
"""

from __future__ import annotations

from botocore.exceptions import ClientError
from botocore.exceptions import ConnectionError as BotoConnectionError
from botocore.exceptions import HTTPClientError as BotoHTTPClientError
from django.db.utils import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from requests.exceptions import ConnectionError as RequestsConnectionError


class TeamFault(Exception):
    """The team's submission or agent is at fault; ``str(exc)`` is the reason the team reads."""


class PodiumFault(Exception):
    """Podium cannot evaluate the run; the team's quota is refunded, organisers see why."""


class TransientFault(Exception):
    """Podium's side failed for now: retry the stage later."""


# The database, by Django's wrappers (psycopg's errors arrive as these).
DATABASE_ERRORS: tuple[type[Exception], ...] = (OperationalError, InterfaceError)
# The Celery broker: kombu's error when a message cannot be sent, redis-py's underneath it.
BROKER_ERRORS: tuple[type[Exception], ...] = (
    BrokerError,
    RedisConnectionError,
    RedisTimeoutError,
)
# Object storage: botocore's connection errors (refused, closed, timed out).
STORAGE_ERRORS: tuple[type[Exception], ...] = (BotoConnectionError, BotoHTTPClientError)
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    TransientFault,
    *DATABASE_ERRORS,
    *BROKER_ERRORS,
    *STORAGE_ERRORS,
    RequestsConnectionError,  # the Docker engine gone away mid-run
)


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a service of Podium's failing for now: retry, never the team's fault
    and never a failed run. An S3 error answer counts when it is the server's (5xx, throttling)."""
    if isinstance(exc, (TeamFault, PodiumFault)):
        return False
    if isinstance(exc, TRANSIENT_ERRORS):
        return True
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        code = exc.response.get("Error", {}).get("Code", "")
        return int(status) >= 500 or code in {"SlowDown", "Throttling", "RequestTimeout"}
    return False
