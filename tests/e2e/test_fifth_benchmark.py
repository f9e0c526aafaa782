"""Issue #33's proof of the seam: a fifth benchmark (``tests/fifth_benchmark``: capitals,
graded by exact match) lives in its own package, installed as a plugin (an entry point of
group ``podium.benchmarks``), with no edit of Podium and no migration, and runs end to end:
scored by the evaluator's CLI, run by the pipeline's worker process (which sees the plugin
through ``PYTHONPATH``) against an agent in a real container, judged, aggregated, and shown
on the leaderboard page and the API's board."""

from __future__ import annotations

import ast
import csv
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from evaluator import benchmarks
from evaluator.cli import EXIT_OK, main
from evaluator.records import EvaluatorError
from leaderboard.models import Challenge, EvaluationRun, ItemAnswer, SliceScore, Task
from leaderboard.splits import import_split_dir
from tests.e2e.harness import REPO, pipeline, submit_agent, team_member
from tests.e2e.test_pipeline_e2e import _same
from tests.fifth_benchmark import AGENT, PLUGIN, Installed, install

__all__ = ["pipeline", "team_member"]  # fixtures used by the tests below


@pytest.fixture
def toy(tmp_path: Path) -> Iterator[Installed]:
    with install(tmp_path / "site") as installed:
        yield installed


def sample(root: Path) -> tuple[Path, Path]:
    """The toy's sample split and made-up predictions (4 right, 4 wrong, 4 "I don't know")."""
    benchmark = benchmarks.get_benchmark("toy")
    benchmark.write_sample(root)
    split = benchmark.load_split(root / "validation")
    benchmark.write_sample_predictions(split, root / "predictions.jsonl", seed=1)
    return root / "validation", root / "predictions.jsonl"


def test_the_registry_lists_a_plugin_only_while_it_is_installed(tmp_path: Path) -> None:
    assert "toy" not in benchmarks.names()
    with install(tmp_path / "site"):
        assert "toy" in benchmarks.names() and benchmarks.is_known("toy")
        toy = benchmarks.benchmark_class("toy")
        assert (toy.name, toy.title, toy.__module__) == ("toy", "Capitals (toy)", "podium_toy")
        assert ("toy", "Capitals (toy)") in benchmarks.choices()  # a task's choices
    assert "toy" not in benchmarks.names()
    with pytest.raises(EvaluatorError, match="'toy': unknown"):
        benchmarks.benchmark_class("toy")


# What the plugin may import besides the standard library: the seam's public parts.
SEAM = ("evaluator.seam", "evaluator.judges", "evaluator.records", "evaluator.stats",
        "evaluator.report", "evaluator.notices", "agentkit.protocol")  # fmt: skip


def test_the_plugin_lives_in_its_own_package() -> None:
    imported = set()
    for path in (PLUGIN / "podium_toy").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and not node.level:
                imported.add(node.module or "")
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
    outside = {name for name in imported if name.split(".")[0] not in sys.stdlib_module_names}
    assert outside and all(name.startswith(SEAM) for name in outside), sorted(outside)


def test_the_registry_refuses_a_plugin_that_is_not_a_benchmark(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "not_a_benchmark.py").write_text("BENCHMARK = 'toy'\n")
    points = {"other": "podium_toy", "nothing": "not_a_benchmark"}
    with install(tmp_path / "site", points):
        assert {"other", "nothing"} <= set(benchmarks.names())
        calls_itself = re.escape("'other': podium_toy.BENCHMARK calls itself 'toy'")
        with pytest.raises(EvaluatorError, match=calls_itself):
            benchmarks.benchmark_class("other")
        not_a_class = re.escape("'nothing': not_a_benchmark.BENCHMARK is not a Benchmark class")
        with pytest.raises(EvaluatorError, match=not_a_class):
            benchmarks.get_benchmark("nothing")


def test_the_cli_scores_the_toy(toy: Installed, tmp_path: Path, capsys) -> None:
    split_dir, predictions = sample(tmp_path / "sample")
    out = tmp_path / "out"
    argv = ["score", "--protocol", "toy", "--split", str(split_dir), "--predictions",
            str(predictions), "--judge", "rules", "--no-cache", "--no-progress",
            "--out", str(out)]  # fmt: skip
    assert main(argv) == EXIT_OK
    scores = json.loads((out / "scores.json").read_text())
    assert scores["protocol"] == "toy" and scores["judge"]["id"] == "rules@toy-1"
    assert scores["complete"] is True and scores["all"]["count"] == 12
    assert scores["all"]["accuracy"] == scores["all"]["idk_rate"] == pytest.approx(4 / 12)
    low, high = scores["all"]["accuracy_ci95"]
    assert 0 < low < 4 / 12 < high < 1
    assert set(scores["slices"]["region"]) == {"europe", "asia", "americas"}
    assert len((out / "questions.jsonl").read_text().splitlines()) == 12
    assert "protocol toy" in capsys.readouterr().out


@pytest.mark.django_db
def test_a_task_takes_the_plugin_with_no_migration(toy: Installed) -> None:
    challenge = Challenge.objects.create(name="Capitals", slug="capitals")
    task = Task(challenge=challenge, task_id="capitals", name="Capitals", benchmark="toy",
                primary_metric="accuracy", image_search_enabled=False,
                web_search_enabled=False)  # fmt: skip
    task.full_clean()
    task.primary_metric = "count"
    with pytest.raises(ValidationError, match="primary_metric"):
        task.full_clean()
    task.benchmark = "toy-2"
    with pytest.raises(ValidationError, match="benchmark"):
        task.full_clean()


def cli_scores(run: EvaluationRun, split_dir: Path, tmp_path: Path, toy: Installed) -> dict:
    """``python -m evaluator score --protocol toy`` (another process: it sees the plugin
    through PYTHONPATH) on the run's stored answers."""
    predictions = tmp_path / f"run-{run.pk}.jsonl"
    answered = run.answers.filter(outcome=ItemAnswer.Outcome.ANSWERED)
    predictions.write_text(
        "".join(json.dumps({"id": a.item_key, "answer": a.response}) + "\n" for a in answered)
    )
    out = tmp_path / f"scores-{run.pk}"
    subprocess.run(
        [sys.executable, "-m", "evaluator", "score", "--protocol", "toy", "--split",
         str(split_dir), "--predictions", str(predictions), "--out", str(out), "--no-cache",
         "--no-progress"],
        cwd=REPO, check=True, capture_output=True, env={"PYTHONPATH": toy.pythonpath,
                                                       "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    return json.loads((out / "scores.json").read_text())


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_toy_task_runs_from_submission_to_its_boards(
    toy: Installed, pipeline, team_member, client, tmp_path: Path
) -> None:
    team, user = team_member
    split_dir, _ = sample(tmp_path / "sample")
    challenge = Challenge.objects.create(name="Capitals", slug="capitals", is_published=True)
    task = Task(
        challenge=challenge, task_id="capitals", name="Capitals", benchmark="toy",
        primary_metric="accuracy", readiness_s=60, per_item_s=5.0, quota_per_day=None,
        quota_concurrent=None, image_search_enabled=False, web_search_enabled=False,
    )  # fmt: skip
    task.full_clean()
    task.save()
    split = import_split_dir(task, "validation", split_dir)
    assert (split.groups, split.items) == (3, 12)
    submission = submit_agent(team, user, challenge, AGENT, "capitals-agent")

    pipeline.start_worker("worker", PYTHONPATH=toy.pythonpath)
    (run,) = pipeline.wait_finished(submission)
    assert run.state == EvaluationRun.State.DONE, (run.failure_reason, run.operator_detail)
    answers = {a.item_key: a.response for a in run.answers.all()}
    assert len(answers) == 12 and answers["q00"] == "Paris" and answers["q08"] == "Toronto"

    # Judged and aggregated: 9 right, Canada wrong, Nepal and Chile "I don't know".
    rows = {(r.dimension, r.value): r for r in SliceScore.objects.filter(run=run)}
    headline = rows["all", "all"]
    assert headline.primary == headline.metrics["accuracy"] == 0.75
    assert headline.metrics["idk_rate"] == pytest.approx(2 / 12) and headline.count == 12
    expected = cli_scores(run, split_dir, tmp_path, toy)
    assert set(rows) == {("all", "all")} | {("region", r) for r in expected["slices"]["region"]}
    for (dimension, value), row in rows.items():
        block = expected["all"] if dimension == "all" else expected["slices"][dimension][value]
        _same(row.metrics, block, f"{dimension}={value}")

    # The board: the page and the API show the entry with the toy's metric.
    page = client.get(
        reverse("leaderboard:leaderboard", args=["capitals", "capitals", "validation"])
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert "capitals-agent" in html and "Accuracy" in html and "75.0" in html
    api = client.get(f"/api/splits/{split.pk}/leaderboard/").json()
    assert api["protocol"] == "toy" and api["primary_metric"] == "accuracy"
    (entry,) = api["entries"]
    assert entry["method_name"] == "capitals-agent" and entry["metrics"]["accuracy"] == 0.75

    # The other pages read it through the seam alone.
    board = ["capitals", "capitals", "validation"]
    client.force_login(user)  # the team's own run
    pages = {
        "run": reverse("leaderboard:run", args=[run.pk]),
        "entry": reverse("leaderboard:entry", args=[*board, run.pk]),
        "slices": reverse("leaderboard:slices", args=board) + "?dimension=region&metric=accuracy",
        "export": reverse("leaderboard:export-csv", args=board),
        "challenge": reverse("leaderboard:challenge", args=["capitals"]),
    }
    shown = {name: client.get(url) for name, url in pages.items()}
    assert {name: page.status_code for name, page in shown.items()} == dict.fromkeys(pages, 200)
    text = {name: page.content.decode() for name, page in shown.items()}
    assert "Toronto" in text["run"] and "What is the capital of Canada?" in text["run"]
    assert "rules@toy-1" in text["run"] and ">idk<" in text["run"]  # its grades, its words
    assert "[50.0, 100.0]" in text["entry"] and "Accuracy by region" in text["entry"]
    assert "region" in text["slices"] and "americas" in text["slices"] and "50.0" in text["slices"]
    exported = next(csv.DictReader(io.StringIO(text["export"])))
    assert (exported["method_name"], exported["accuracy"], exported["judge_id"]) == (
        "capitals-agent",
        "0.75",
        "rules@toy-1",
    )
    assert 'href="/c/capitals/capitals/validation/"' in text["challenge"]
