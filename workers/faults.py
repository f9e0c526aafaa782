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

This module is the engine's (``workers/``), which imports no Django: the database's errors are
known by its drivers' classes, which Django keeps as the ``__cause__`` of its own
(``is_database_error``).
"""

from __future__ import annotations

import sqlite3

import psycopg
from botocore.exceptions import ClientError
from botocore.exceptions import ConnectionError as BotoConnectionError
from botocore.exceptions import HTTPClientError as BotoHTTPClientError
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


class RuntimeMissing(PodiumFault):
    """The agent runtime a run must use (``workers.runtimes``) is not offered by the node's
    Docker engine: the run is refused, never started under another runtime; the operator
    registers it (docs/deploy.md) or the organiser chooses another."""


# The database, by its drivers' errors: PostgreSQL's (psycopg) and the embedded default's
# (sqlite3). Django raises each as its own ``OperationalError`` / ``InterfaceError`` *from* the
# driver's (``django.db.utils.DatabaseErrorWrapper``): ``is_database_error`` looks at the causes.
DATABASE_ERRORS: tuple[type[Exception], ...] = (
    psycopg.OperationalError,
    psycopg.InterfaceError,
    sqlite3.OperationalError,
    sqlite3.InterfaceError,
)
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
    *BROKER_ERRORS,
    *STORAGE_ERRORS,
    RequestsConnectionError,  # the Docker engine gone away mid-run
)


def is_database_error(exc: BaseException) -> bool:
    """Whether ``exc``, or an error it was raised from, is the database failing (unreachable,
    restarted, the connection lost): a driver's error in ``DATABASE_ERRORS``, as Django's
    wrapper carries it."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, DATABASE_ERRORS):
            return True
        seen.add(id(cause))
        cause = cause.__cause__
    return False


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a service of Podium's failing for now: retry, never the team's fault
    and never a failed run. An S3 error answer counts when it is the server's (5xx, throttling)."""
    if isinstance(exc, (TeamFault, PodiumFault)):
        return False
    if isinstance(exc, TRANSIENT_ERRORS) or is_database_error(exc):
        return True
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        code = exc.response.get("Error", {}).get("Code", "")
        return int(status) >= 500 or code in {"SlowDown", "Throttling", "RequestTimeout"}
    return False
