"""``/metrics``: what operators watch, in Prometheus' text format (``prometheus_client``).

Everything is computed when Prometheus scrapes: the state of runs from PostgreSQL, the depth of
each Celery queue from Redis (the length of its list), and the events worker processes counted
on any node (``podium.monitoring_events``). No figure lives in a web process, so any web process
answers the same. Staff signed in, or ``Authorization: Bearer <PODIUM_METRICS_TOKEN>``; nobody else.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import redis
from django.conf import settings
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, QuerySet, Sum
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from kombu.transport.redis import PRIORITY_STEPS, Channel
from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from leaderboard.models import EvaluationRun
from podium import monitoring_events
from podium.celery import app
from podium.install import key

logger = logging.getLogger("podium.metrics")
State = EvaluationRun.State
# Upper bounds of the run-duration buckets (seconds from its first stage to its end).
RUN_DURATION_BUCKETS = (60.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 86400.0)


def queue_names() -> list[str]:
    """Every Celery queue Podium declares (``podium/celery.py``)."""
    return sorted(queue.name for queue in app.conf.task_queues)


def queue_depths(client: redis.Redis) -> dict[str, int]:
    """Messages waiting in each of this install's queues: the length of its Redis list(s)."""
    depths = {}
    for name in queue_names():
        # kombu keeps a queue's prioritised messages in lists beside its own (step 0: itself),
        # each under the broker's global_keyprefix: this install's.
        lists = [name, *(f"{name}{Channel.sep}{step}" for step in PRIORITY_STEPS if step)]
        pipe = client.pipeline(transaction=False)
        for each in lists:
            pipe.llen(key(each))
        depths[name] = sum(pipe.execute())
    return depths


def runs_by_state() -> dict[str, int]:
    """How many runs are in each state (every state, zero included)."""
    counts = dict.fromkeys(State.values, 0)
    rows = EvaluationRun.objects.values_list("state").annotate(n=Count("pk")).order_by()
    counts.update(dict(rows))
    return counts


def stale_cutoff() -> timedelta:
    return timedelta(seconds=settings.PODIUM_HEARTBEAT_TIMEOUT_S)


class PodiumCollector(Collector):
    """Reads PostgreSQL and Redis on each scrape."""

    def collect(self) -> Iterator[Metric]:
        yield from self._runs()
        yield from self._redis()

    def _runs(self) -> Iterator[Metric]:
        runs = EvaluationRun.objects.all()
        gauge = GaugeMetricFamily("podium_runs", "Evaluation runs by state.", labels=["state"])
        for state, count in runs_by_state().items():
            gauge.add_metric([state], count)
        yield gauge
        failed = dict(
            runs.filter(state=State.FAILED)
            .values_list("failure_kind")
            .annotate(n=Count("pk"))
            .order_by()
        )
        gauge = GaugeMetricFamily(
            "podium_failed_runs",
            "Failed runs by whose fault: team, podium, lost_worker (workers/faults.py).",
            labels=["kind"],
        )
        for kind in EvaluationRun.FailureKind.values:
            gauge.add_metric([kind], failed.get(kind, 0))
        yield gauge
        yield from self._active(runs)
        yield self._durations(runs)

    def _active(self, runs: QuerySet[EvaluationRun]) -> Iterator[Metric]:
        active = runs.filter(state__in=EvaluationRun.ACTIVE_STATES)
        stale = timezone.now() - stale_cutoff()
        figures = active.aggregate(
            stuck=Count("pk", filter=~Q(worker_id="") & Q(heartbeat_at__lt=stale)),
            retrying=Count("pk", filter=Q(worker_id="") & ~Q(retry_reason="")),
        )
        yield GaugeMetricFamily(
            "podium_stuck_runs",
            "Active runs whose worker sent no heartbeat within PODIUM_HEARTBEAT_TIMEOUT_S.",
            value=figures["stuck"],
        )
        yield GaugeMetricFamily(
            "podium_retrying_runs",
            "Active runs waiting, with no worker, to retry their stage after a fault.",
            value=figures["retrying"],
        )

    def _durations(self, runs: QuerySet[EvaluationRun]) -> Metric:
        took = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
        finished = runs.filter(state__in=EvaluationRun.TERMINAL_STATES).exclude(started_at=None)
        finished = finished.exclude(finished_at=None).annotate(took=took)
        buckets = {
            f"le{i}": Count("pk", filter=Q(took__lte=timedelta(seconds=bound)))
            for i, bound in enumerate(RUN_DURATION_BUCKETS)
        }
        rows = finished.values("state").annotate(n=Count("pk"), total=Sum("took"), **buckets)
        histogram = HistogramMetricFamily(
            "podium_run_duration_seconds",
            "Finished runs: seconds from their first stage to their end, by final state.",
            labels=["state"],
        )
        for row in rows.order_by("state"):
            counts: dict[str, Any] = dict(row)  # the buckets' keys are made above
            cumulative = [
                (repr(bound), float(counts[f"le{i}"]))
                for i, bound in enumerate(RUN_DURATION_BUCKETS)
            ]
            cumulative.append(("+Inf", float(row["n"])))
            total = row["total"].total_seconds() if row["total"] else 0.0
            histogram.add_metric([row["state"]], cumulative, total)
        return histogram

    def _redis(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "podium_metrics_redis_up",
            "1 when Redis answered this scrape (queue depths and worker events are read there).",
        )
        try:
            client = monitoring_events.events_redis()
            depths = queue_depths(client)
            events = {m: monitoring_events.read(m, client) for m in monitoring_events.EVENT_METRICS}
        except redis.RedisError as exc:
            logger.warning("/metrics: Redis did not answer: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        gauge = GaugeMetricFamily(
            "podium_queue_depth", "Messages waiting in each Celery queue.", labels=["queue"]
        )
        for name, depth in depths.items():
            gauge.add_metric([name], depth)
        yield gauge
        for metric, series in events.items():
            yield _event_family(metric, series)


def _event_family(
    metric: monitoring_events.EventMetric, series: dict[tuple[str, ...], monitoring_events.Series]
) -> Metric:
    labels = list(metric.labels)
    if not metric.buckets:
        counter = CounterMetricFamily(metric.name, metric.help, labels=labels)
        for values, figures in sorted(series.items()):
            counter.add_metric(list(values), figures.value)
        return counter
    histogram = HistogramMetricFamily(metric.name, metric.help, labels=labels)
    for values, figures in sorted(series.items()):
        histogram.add_metric(list(values), figures.cumulative(metric.buckets), figures.sum)
    return histogram


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PodiumCollector())
    return registry


def may_scrape(request: HttpRequest) -> bool:
    """Staff signed in, or the bearer token of ``PODIUM_METRICS_TOKEN`` (when one is set)."""
    if request.user.is_authenticated and request.user.is_staff:
        return True
    token = settings.PODIUM_METRICS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if not token or scheme.lower() != "bearer" or not given.strip():
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


def metrics_view(request: HttpRequest) -> HttpResponse:
    """The scrape; 401 with a ``WWW-Authenticate`` challenge for anyone else."""
    if not may_scrape(request):
        response = HttpResponse("staff or the metrics bearer token only\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="podium-metrics"'
        response["Content-Type"] = "text/plain; charset=utf-8"
        return response
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encoder(_registry()), content_type=content_type)
