"""The one taxonomy of failures: each error the pipeline acts on says whose fault it is; the
database's errors are known without Django, through the driver's error Django raises from."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError
from django.db import connection
from django.db.utils import DataError, InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerError
from requests.exceptions import ConnectionError as RequestsConnectionError

from leaderboard.pipeline.bundles import BundleError
from tests.services import unreachable_database
from workers.builds import BaseImageMissing
from workers.faults import PodiumFault, TeamFault, TransientFault, is_database_error, is_transient
from workers.images import ImageError
from workers.outcomes import RunFailed, SearchUnavailable


@pytest.mark.parametrize(
    ("error", "fault"),
    [
        (RunFailed, TeamFault),
        (ImageError, TeamFault),
        (BundleError, PodiumFault),
        (BaseImageMissing, PodiumFault),
        (SearchUnavailable, TransientFault),
    ],
)
def test_each_error_names_whose_fault_it_is_and_only_one(error, fault):
    kinds = [kind for kind in (TeamFault, PodiumFault, TransientFault) if issubclass(error, kind)]
    assert kinds == [fault]


def _s3_error(status: int, code: str) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "PutObject",
    )


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (EndpointConnectionError(endpoint_url="http://127.0.0.1:9/bucket"), True),
        (ConnectionClosedError(endpoint_url="http://127.0.0.1:9/bucket"), True),
        (_s3_error(503, "ServiceUnavailable"), True),
        (_s3_error(400, "SlowDown"), True),
        (_s3_error(403, "AccessDenied"), False),
        (_s3_error(404, "NoSuchKey"), False),
        (psycopg.OperationalError("server closed the connection unexpectedly"), True),
        (psycopg.InterfaceError("connection already closed"), True),
        (sqlite3.OperationalError("database is locked"), True),
        (psycopg.errors.UniqueViolation("duplicate key"), False),
        (BrokerError("Error 111 connecting to 127.0.0.1:6379"), True),
        (RequestsConnectionError("the Docker engine went away"), True),
        (SearchUnavailable("the search process stopped"), True),
        (BundleError("damaged"), False),
        (RunFailed("crash loop"), False),
        (ValueError("a bug"), False),
    ],
)
def test_services_failing_for_now_are_transient_and_nothing_else_is(error, transient):
    assert is_transient(error) is transient


def test_django_s_own_error_for_an_unreachable_database_is_transient(django_db_blocker, tmp_path):
    """What a stage meets when PostgreSQL restarts: Django's OperationalError, raised from
    psycopg's; and the embedded default's (SQLite) unable to open its file."""
    postgres = unreachable_database()
    sqlite = unreachable_database(ENGINE="django.db.backends.sqlite3", NAME=str(tmp_path / "no/db"))
    with django_db_blocker.unblock():
        for wrapper in (postgres, sqlite):
            with pytest.raises(OperationalError) as caught:
                wrapper.ensure_connection()
            assert is_database_error(caught.value) and is_transient(caught.value)


@pytest.mark.django_db
def test_a_lost_connection_is_transient_and_a_bad_statement_is_not():
    """Django's InterfaceError (a cursor whose connection is gone) is transient; Django's
    DataError, from psycopg's error for the statement itself, is a bug to fail on."""
    cursor = connection.cursor()
    cursor.close()
    with pytest.raises(InterfaceError) as lost:
        cursor.execute("select 1")
    assert is_transient(lost.value)
    with pytest.raises(DataError) as bad, connection.cursor() as cursor:
        cursor.execute("select 1 / 0")
    assert isinstance(bad.value.__cause__, psycopg.Error)
    assert not is_database_error(bad.value) and not is_transient(bad.value)


def test_whose_fault_is_decided_before_the_database_error_it_came_from():
    try:
        try:
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        except psycopg.Error as exc:
            raise TeamFault("the team's upload is damaged") from exc
    except TeamFault as fault:
        assert is_database_error(fault) and not is_transient(fault)
