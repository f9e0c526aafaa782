"""The organiser's forecast of an MRAG-Suite task's judge calls and wall time, per split."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from django.urls import reverse

from evaluator.benchmarks.mrag_suite import MragSuite
from leaderboard.judge_forecast import ASSUMED_LATENCY_S, forecast_lines
from leaderboard.models import Task
from leaderboard.splits import import_split_dir
from podium.monitoring_events import JUDGE_LATENCY, record
from tests.leaderboard.broker import broker_at
from tests.leaderboard.factories import write_small_split
from tests.services import redis_url


@pytest.fixture
def mrag_task(challenge, settings, tmp_path) -> Task:
    settings.VAR_DIR = tmp_path / "var"  # the extracted bundles
    settings.PODIUM_JUDGE_CONCURRENCY = 7
    settings.PODIUM_JUDGE_ENDPOINTS = {"default": {"base_url": "http://127.0.0.1:9/v1"}}
    return Task.objects.create(
        challenge=challenge, task_id="mrag", name="MRAG", benchmark="mrag-suite",
        primary_metric="accuracy", image_search_enabled=False, web_search_enabled=False,
        judge_kind=Task.JudgeKind.OPENAI, judge_model="judge-1",
    )  # fmt: skip


@pytest.fixture
def sample(tmp_path) -> Path:
    MragSuite().write_sample(tmp_path / "sample")
    return tmp_path / "sample" / "validation"


def test_a_task_without_a_split_says_where_the_forecast_comes_from(mrag_task):
    assert forecast_lines(mrag_task) == [
        "No split imported yet: the judge calls are forecast from each split."
    ]
    assert "Save the task" in forecast_lines(Task(benchmark="mrag-suite"))[0]


def test_the_forecast_follows_the_split_and_the_task_settings(mrag_task, sample):
    split = import_split_dir(mrag_task, "validation", sample)
    every = MragSuite().judge_forecast(MragSuite().load_split(sample))
    assert every.answers == 3 * split.items and every.rounds[0] == 3 * every.answers
    (line,) = forecast_lines(mrag_task)
    minutes = sum(math.ceil(c / 7) * ASSUMED_LATENCY_S for c in every.rounds) / 60
    assert line == (
        f"validation ({split.items} items): at most {every.calls:,} judge calls per submission "
        f"({every.calls / every.answers:.1f} per answer, {every.answers:,} answers); about "
        f"{minutes:,.1f} min of judging at 7 calls at once and {ASSUMED_LATENCY_S:g} s a call "
        "(assumed: none measured yet)"
    )
    # one mode, deeper retrieval: the settings change the forecast (a new cache key)
    mrag_task.settings = {"modes": ["GPD"], "passages": 8}
    mrag_task.save()
    gpd = MragSuite(("GPD",), passages=8).judge_forecast(MragSuite().load_split(sample))
    assert gpd.answers == split.items and gpd.calls < every.calls
    assert f"at most {gpd.calls:,} judge calls" in forecast_lines(mrag_task)[0]
    # the rules judge makes the same calls and asks no model
    mrag_task.judge_kind = Task.JudgeKind.RULES
    rules = forecast_lines(mrag_task)[0]
    assert rules.endswith("answers); the rules judge decides them (no model is called)")


def test_the_wall_time_uses_the_latency_measured_on_the_endpoint(mrag_task, sample):
    import_split_dir(mrag_task, "validation", sample)
    every = MragSuite().judge_forecast(MragSuite().load_split(sample))
    with broker_at(redis_url("submit")):
        for seconds in (0.5, 1.5, 1.0):
            record(JUDGE_LATENCY, seconds, judge="default")
        record(JUDGE_LATENCY, 60.0, judge="elsewhere")  # another endpoint's calls
        (line,) = forecast_lines(mrag_task)
    minutes = sum(math.ceil(c / 7) * 1.0 for c in every.rounds) / 60
    assert line.endswith(
        f"about {minutes:,.1f} min of judging at 7 calls at once and 1.00 s a call "
        "(measured on default)"
    )


def test_a_benchmark_without_a_forecast_and_an_unreadable_bundle(mrag_task, task, sample, tmp_path):
    crag = import_split_dir(task, "validation", write_small_split(tmp_path / "crag", 2))
    (line,) = forecast_lines(task)
    assert line == f"validation ({crag.items} items): CRAG-MM does not forecast its judge calls"
    split = import_split_dir(mrag_task, "validation", sample)
    split.sha256 = "0" * 64  # not the bundle's: refused when extracted
    split.save()
    (line,) = forecast_lines(mrag_task)
    assert line.startswith(
        f"validation ({split.items} items): no forecast, the bundle could not be read: "
    )


def test_the_task_admin_page_shows_the_forecast(client, make_user, mrag_task, sample):
    admin = make_user(staff=True)
    admin.is_superuser = True
    admin.save()
    client.force_login(admin)
    import_split_dir(mrag_task, "validation", sample)
    page = client.get(reverse("admin:leaderboard_task_change", args=[mrag_task.pk]))
    assert "Judge forecast" in page.content.decode()
    assert forecast_lines(mrag_task)[0].replace("'", "&#x27;") in page.content.decode()
    adding = client.get(reverse("admin:leaderboard_task_add"), {"benchmark": "mrag-suite"})
    assert "Save the task and import a split" in adding.content.decode()
