"""The leaderboard reads any benchmark's stored scores through its declarations: a Visual-RAG
task's board, slice view, export and API show its own metrics, on its own scale."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from evaluator.benchmarks.visual_rag import VisualRAG
from evaluator.judges import MemoryCache, make_judge
from leaderboard.models import EvaluationRun, SliceScore, Split, Submission, Task
from leaderboard.scores import store_scores


@pytest.fixture(scope="module")
def visual_scores(
    tmp_path_factory: pytest.TempPathFactory, visual_rag_sample: Path
) -> list[dict[str, Any]]:
    """Two made-up agents' scores in the gt_clue setting (one answering, one not)."""
    root = tmp_path_factory.mktemp("vr")
    found = []
    for seed in (1, 2):
        benchmark = VisualRAG(("gt_clue",))
        split = benchmark.load_split(visual_rag_sample / "validation")
        benchmark.write_sample_predictions(split, root / f"p{seed}.jsonl", seed=seed)
        predictions, _ = benchmark.load_predictions(root / f"p{seed}.jsonl", split)
        judge = make_judge("rules", benchmark.rubric)
        graded = benchmark.grade(split, predictions, judge, MemoryCache(), progress=False)
        found.append(benchmark.aggregate(graded))
    return found


@pytest.fixture
def board(challenge, teams, visual_scores) -> Split:
    """A task evaluating gt_clue alone: one leaderboard, its runs' setting's."""
    task = Task.objects.create(
        challenge=challenge, task_id="visual-rag", name="Visual RAG", benchmark="visual-rag",
        primary_metric="accuracy", settings={"evaluated": ["gt_clue"]},
    )  # fmt: skip
    split = Split.objects.create(task=task, kind=Split.Kind.VALIDATION)
    for team, scores in zip(("alpha", "beta"), visual_scores, strict=True):
        submission = Submission.objects.create(
            team=teams[team], challenge=challenge, method_name=f"{team}-agent",
            artifact_kind=Submission.ArtifactKind.REGISTRY_REF, registry_ref="example/agent:1",
            state=Submission.State.READY,
        )  # fmt: skip
        run = EvaluationRun.objects.create(
            submission=submission, task=task, split=split, setting="gt_clue",
            state=EvaluationRun.State.DONE,
        )  # fmt: skip
        store_scores(run, scores)
    return split


def url(name: str, split: Split) -> str:
    task = split.task
    return reverse(f"leaderboard:{name}", args=[task.challenge.slug, task.task_id, split.kind])


def test_a_visual_rag_board_shows_its_metrics_on_their_scale(client, board, visual_scores):
    headline = [s["settings"]["gt_clue"] for s in visual_scores]
    best = max(headline, key=lambda block: block["accuracy"])
    page = client.get(url("leaderboard", board)).content.decode()
    for label in ("Accuracy", "I don&#x27;t know", "ROUGE-1 recall", "Queries"):
        assert label in page
    assert "Truthfulness" not in page
    assert f"{best['accuracy']:.1f}" in page  # already x100: shown as stored
    low, high = best["accuracy_ci95"]
    assert f"[{low:.1f}, {high:.1f}]" in page
    rows = SliceScore.objects.filter(run__split=board, dimension="all").order_by("-primary")
    assert [r.primary for r in rows] == sorted((b["accuracy"] for b in headline), reverse=True)
    assert rows[0].count == best["count"] == 28


def test_its_slices_export_and_api_read_the_same_rows(client, board, visual_scores):
    page = client.get(url("slices", board), {"dimension": "species", "metric": "idk_rate"})
    assert page.status_code == 200 and 'aria-label="I don&#x27;t know by species"' in (
        page.content.decode()
    )
    exported = list(csv.DictReader(io.StringIO(client.get(url("export-csv", board)).content
                                               .decode())))  # fmt: skip
    assert {"accuracy", "accuracy_ci_low", "idk_rate", "rouge1_recall"} <= set(exported[0])
    api = client.get(f"/api/splits/{board.pk}/leaderboard/").json()
    assert api["protocol"] == "visual-rag" and api["primary_metric"] == "accuracy"
    assert {m["name"] for m in api["metrics"]} >= {"accuracy", "recall@5", "gcue"}
    entry = api["entries"][0]
    assert entry["primary"] == entry["metrics"]["accuracy"] == float(exported[0]["accuracy"])
    assert client.get(url("slices", board), {"metric": "truthfulness"}).status_code == 404
