"""Log lines of the web and worker processes: JSON (``python-json-logger``) or plain text, and
the run id on every line written while a worker works on a run.

``PODIUM_LOG_FORMAT`` picks the format (``json``, the default; ``plain`` for reading in a
terminal while developing); ``podium/settings.py`` builds ``LOGGING`` with ``logging_config``.
A stage task sets the run in ``run_context``; ``RunIdFilter``, on the handler, stamps each
record with it (``run_id``: null outside a run). Threads a stage starts carry the run when
started in a copy of its context (``contextvars.copy_context().run``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

LOG_FORMATS = ("json", "plain")
PODIUM_LOGGERS = ("podium", "leaderboard", "workers", "evaluator", "celery")
_run_id: ContextVar[int | None] = ContextVar("podium_run_id", default=None)


def current_run_id() -> int | None:
    """The run the current context works on, if any."""
    return _run_id.get()


@contextmanager
def run_context(run_id: int) -> Iterator[None]:
    """Every log line written inside the block (in this context) carries ``run_id``."""
    token = _run_id.set(run_id)
    try:
        yield
    finally:
        _run_id.reset(token)


class RunIdFilter(logging.Filter):
    """Adds ``run_id`` (the current run's, or None) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.run_id = _run_id.get()
        return True


class PlainFormatter(logging.Formatter):
    """``time level logger run #N: message``, the run left out outside a run."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s%(run_tag)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        run_id = getattr(record, "run_id", None)
        tag = f" run #{run_id}" if run_id is not None else ""
        return self._style.format(_Tagged(record, tag))


class _Tagged:
    """A record's attributes, plus ``run_tag``, for the plain format."""

    def __init__(self, record: logging.LogRecord, tag: str) -> None:
        self.__dict__.update(record.__dict__, run_tag=tag)


def logging_config(log_format: str, level: str = "INFO") -> dict[str, Any]:
    """Django's ``LOGGING``: one handler on stderr, in ``log_format``, on the root logger;
    Podium's and Celery's loggers from ``level``, everything else from WARNING."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format {log_format!r}: expected one of {', '.join(LOG_FORMATS)}")
    formatters = {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s %(run_id)s %(process)d",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
        "plain": {"()": PlainFormatter},
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"run_id": {"()": RunIdFilter}},
        "formatters": {log_format: formatters[log_format]},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": log_format,
                "filters": ["run_id"],
            }
        },
        "root": {"handlers": ["stderr"], "level": "WARNING"},
        # Podium's and Celery's at ``level``, written by the root's handler (where pytest's
        # ``caplog`` listens too).
        "loggers": {name: {"level": level} for name in PODIUM_LOGGERS},
    }
