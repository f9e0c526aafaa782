"""Events that Podium's processes count on any node, kept in Redis for ``/metrics`` to read.

Every worker node already reaches the broker's Redis, so that is where events go: one Redis hash
per metric, beside the Celery queues, in this install's namespace (``podium.install``). Worker
processes on every node add to the same figures (atomic ``HINCRBY``), and the web node reads
them when Prometheus scrapes it (``leaderboard.monitoring``), with no exporter port per worker
and no shared directory. Redis losing its data resets the counters, which Prometheus reads as a
counter reset. Recording never fails the work: a Redis error is logged and the event dropped.
Why this design: ``docs/deploy.md``, "Observability".
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from functools import cache

import redis
from redis.client import Pipeline

from podium.celery import app
from podium.install import key

logger = logging.getLogger("podium.metrics")


@dataclass(frozen=True)
class EventMetric:
    """A counter (no ``buckets``) or a histogram (upper bounds of its buckets, +Inf implied)."""

    name: str
    help: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...] = field(default=())

    @property
    def key(self) -> str:
        """Its Redis hash, in this install's namespace."""
        return key(f"metrics:{self.name}")


@dataclass
class Series:
    """One label set's figures: a counter's ``value``, or a histogram's ``count``, ``sum`` and
    its per-bucket counts (not cumulative; keyed by upper bound)."""

    value: float = 0.0
    count: int = 0
    sum: float = 0.0
    per_bucket: dict[float, int] = field(default_factory=dict)

    def cumulative(self, bounds: tuple[float, ...]) -> list[tuple[str, float]]:
        """The buckets as Prometheus reads them: counts up to each bound, then +Inf."""
        total, out = 0, []
        for bound in bounds:
            total += self.per_bucket.get(bound, 0)
            out.append((_bound_text(bound), float(total)))
        out.append(("+Inf", float(self.count)))
        return out


WORKER_DEAD_TIME = EventMetric(
    "podium_worker_dead_time_seconds",
    "Time a worker process was idle between the end of one stage task and its next claim.",
    ("node",),
    (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0),
)
JUDGE_LATENCY = EventMetric(
    "podium_judge_latency_seconds",
    "Seconds one judge call took (calls answered by the judgment cache are not counted).",
    ("judge",),
    (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0),
)
JUDGE_ERRORS = EventMetric(
    "podium_judge_errors",
    "Judge calls that came back undecided (endpoint down, time-out, a reply off the rubric).",
    ("judge",),
)
STORAGE_ERRORS = EventMetric(
    "podium_storage_errors",
    "Storage operations (local files or S3) that raised, by operation and error class.",
    ("operation", "error"),
)
STAGE_RETRIES = EventMetric(
    "podium_stage_retries",
    "Stage tasks given back to be retried later, by stage and the transient fault behind it.",
    ("stage", "fault"),
)
EVENT_METRICS = (WORKER_DEAD_TIME, JUDGE_LATENCY, JUDGE_ERRORS, STORAGE_ERRORS, STAGE_RETRIES)


def _bound_text(bound: float) -> str:
    return repr(float(bound))


@cache
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)


def events_redis() -> redis.Redis:
    """The Redis that holds the events: the Celery broker's."""
    return _client(str(app.conf.broker_url))


def record(metric: EventMetric, value: float = 1.0, **labels: str) -> None:
    """Add ``value`` to a counter, or observe it in a histogram, for the label values given."""
    record_many([(metric, value, labels)])


def record_many(events: list[tuple[EventMetric, float, dict[str, str]]]) -> None:
    """Several events (metric, value, labels) in one round trip to Redis."""
    if not events:
        return
    pipe = events_redis().pipeline(transaction=False)
    for metric, value, labels in events:
        _add(pipe, metric, value, labels)
    try:
        pipe.execute()
    except redis.RedisError as exc:
        names = sorted({metric.name for metric, _, _ in events})
        logger.warning("%d event(s) of %s not recorded: %s", len(events), ", ".join(names), exc)


def _add(pipe: Pipeline, metric: EventMetric, value: float, labels: dict[str, str]) -> None:
    if set(labels) != set(metric.labels):
        raise ValueError(f"{metric.name} takes the labels {metric.labels}, not {tuple(labels)}")
    if not math.isfinite(value) or (metric.buckets and value < 0):
        raise ValueError(f"{metric.name}: {value!r} is not a value it can record")
    series = json.dumps([str(labels[name]) for name in metric.labels])
    if metric.buckets:
        bound = next((b for b in metric.buckets if value <= b), math.inf)
        pipe.hincrby(metric.key, f"{series}|count", 1)
        pipe.hincrbyfloat(metric.key, f"{series}|sum", value)
        pipe.hincrby(metric.key, f"{series}|le={_bound_text(bound)}", 1)
    else:
        pipe.hincrbyfloat(metric.key, f"{series}|value", value)


def read(metric: EventMetric, client: redis.Redis) -> dict[tuple[str, ...], Series]:
    """Every label set's figures of ``metric`` as stored (raises ``redis.RedisError``)."""
    out: dict[tuple[str, ...], Series] = {}
    for raw_field, raw_value in client.hgetall(metric.key).items():
        field = raw_field.decode() if isinstance(raw_field, bytes) else raw_field
        series_text, _, part = field.rpartition("|")
        labels = tuple(json.loads(series_text))
        series = out.setdefault(labels, Series())
        number = float(raw_value)
        if part == "value":
            series.value = number
        elif part == "count":
            series.count = int(number)
        elif part == "sum":
            series.sum = number
        elif part.startswith("le="):
            series.per_bucket[float(part[3:])] = int(number)
    return out
