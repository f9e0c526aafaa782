"""The judge cost of a task, forecast for its organiser before any submission is judged.

For each imported split, the benchmark predicts the judge calls one submission's runs make with
the task's settings (``Benchmark.judge_forecast``: MRAG-Suite's claim extraction and checks;
None for a benchmark that forecasts none) and the least wall time they take: each
round's calls in waves of ``PODIUM_JUDGE_CONCURRENCY``, at the mean latency this installation
has measured on the task's judge endpoint (``podium_judge_latency_seconds``), or at
``ASSUMED_LATENCY_S`` before it has measured any. A split's forecast is kept in Django's
cache by the bundle's sha256 and the settings, so a page reads each split once.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass

import redis
from django.conf import settings
from django.core.cache import cache

from evaluator.records import EvaluatorError, JudgeForecast
from leaderboard.models import Split, Task
from leaderboard.pipeline.bundles import BundleError, split_dir
from podium.monitoring_events import JUDGE_LATENCY, events_redis, read

logger = logging.getLogger(__name__)
ASSUMED_LATENCY_S = 2.0  # a judge call before any has been measured
CACHE_S = 24 * 3600


@dataclass(frozen=True)
class SplitForecast:
    split: Split
    forecast: JudgeForecast | None  # None: the benchmark predicts nothing
    problem: str = ""  # why there is no forecast: the bundle could not be read


def measured_latency_s(endpoint: str) -> float | None:
    """The mean latency of the judge calls made on ``endpoint`` so far, None when none was
    measured (or the events cannot be read)."""
    try:
        series = read(JUDGE_LATENCY, events_redis()).get((endpoint,))
    except redis.RedisError as exc:
        logger.warning("judge latencies unreadable: %s", exc)
        return None
    return series.sum / series.count if series is not None and series.count else None


def split_forecast(split: Split) -> SplitForecast:
    """What one submission's runs on ``split`` cost its judge, with the task's settings."""
    task = split.task
    chosen = json.dumps([task.benchmark, task.settings], sort_keys=True).encode()
    key = f"judge-forecast:{split.sha256}:{hashlib.sha256(chosen).hexdigest()[:16]}"
    stored = cache.get(key)
    if stored is not None:
        return SplitForecast(split, JudgeForecast(tuple(stored[0]), stored[1]) if stored else None)
    try:
        benchmark = task.scoring()
        forecast = benchmark.judge_forecast(benchmark.load_split(split_dir(split)))
    except (BundleError, EvaluatorError, OSError) as exc:
        return SplitForecast(split, None, f"the bundle could not be read: {exc}")
    cache.set(key, [list(forecast.rounds), forecast.answers] if forecast else [], CACHE_S)
    return SplitForecast(split, forecast)


def forecast_lines(task: Task) -> list[str]:
    """The forecast as the organiser reads it: one line per imported split, or why none."""
    if task.pk is None:
        return ["Save the task and import a split: the judge calls are forecast from it."]
    splits = [s for s in task.splits.current().order_by("kind") if s.bundle and s.sha256]
    if not splits:
        return ["No split imported yet: the judge calls are forecast from each split."]
    concurrency = settings.PODIUM_JUDGE_CONCURRENCY
    model = task.judge_kind == Task.JudgeKind.OPENAI
    latency = measured_latency_s(task.judge_endpoint) if model else None
    pace = (
        f"{latency:.2f} s a call (measured on {task.judge_endpoint})"
        if latency is not None
        else f"{ASSUMED_LATENCY_S:g} s a call (assumed: none measured yet)"
    )
    lines = []
    for found in map(split_forecast, splits):
        name = f"{found.split.kind} ({found.split.items} items)"
        if found.problem:
            lines.append(f"{name}: no forecast, {found.problem}")
            continue
        if found.forecast is None:
            lines.append(f"{name}: {task.declared().title} does not forecast its judge calls")
            continue
        calls = found.forecast
        text = (
            f"{name}: at most {calls.calls:,} judge calls per submission "
            f"({calls.per_answer:.1f} per answer, {calls.answers:,} answers)"
        )
        if model:
            minutes = calls.wall_s(concurrency, latency or ASSUMED_LATENCY_S) / 60
            text += f"; about {minutes:,.1f} min of judging at {concurrency} calls at once"
            text += f" and {pace}"
        else:
            text += "; the rules judge decides them (no model is called)"
        lines.append(text)
    return lines
