"""Ownership's database retry (``while_database_returns``): Django's own error for a database that
is not there is waited out, reconnecting; any other database error is raised at once."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.utils import DataError, OperationalError

from leaderboard.pipeline.ownership import while_database_returns
from tests.services import unreachable_database


def test_an_unreachable_database_is_tried_again_until_it_answers(settings, django_db_blocker):
    settings.PODIUM_DB_RETRY_S = 30
    unreachable, tries = unreachable_database(), []

    def write() -> str:
        tries.append(1)
        if len(tries) < 3:
            unreachable.ensure_connection()  # Django's OperationalError, from psycopg's
        return "stored"

    with django_db_blocker.unblock():
        assert while_database_returns()(write) == "stored"
    assert len(tries) == 3


def test_the_retry_ends_after_its_time_with_the_database_s_error(settings, django_db_blocker):
    settings.PODIUM_DB_RETRY_S = 0
    with django_db_blocker.unblock(), pytest.raises(OperationalError):
        while_database_returns()(unreachable_database().ensure_connection)


@pytest.mark.django_db
def test_an_error_of_the_statement_itself_is_not_tried_again():
    tries = []

    def write() -> None:
        tries.append(1)
        with connection.cursor() as cursor:
            cursor.execute("select 1 / 0")

    with pytest.raises(DataError):
        while_database_returns()(write)
    assert len(tries) == 1
