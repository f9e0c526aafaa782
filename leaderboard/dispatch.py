"""Celery messages sent once the database transaction commits: the worker that takes one then
finds what the sender wrote. The one way Podium sends its tasks from a request or a stage
(``leaderboard.tasks.dispatch_stage``, ``leaderboard.mailing``).

With the broker unreachable the message is not sent and that is logged: the caller's change
stands, and whatever re-sends it (the reaper, for stages) does so later."""

from __future__ import annotations

import logging

from django.db import transaction

from podium.celery import app, queue_for
from workers.faults import BROKER_ERRORS

logger = logging.getLogger("podium")


def send_after_commit(
    name: str, kwargs: dict[str, object], what: str, queue: str | None = None
) -> None:
    """Send the task ``name`` with ``kwargs`` (to ``queue``, else the queue its name routes
    to) after the commit; ``what`` names it in the log when it cannot be sent."""

    def send() -> None:
        try:
            app.send_task(name, kwargs=kwargs, queue=queue or queue_for(name))
        except BROKER_ERRORS as exc:
            logger.warning("%s: %s not sent (%s)", what, name, exc)
        except Exception:  # kombu's own state, torn while the broker went away: never the caller's
            logger.exception("%s: %s not sent", what, name)

    transaction.on_commit(send)
