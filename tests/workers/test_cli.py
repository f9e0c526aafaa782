"""``python -m workers.cli`` end to end: predictions the evaluator scores, resuming."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.workers.conftest import REPO, make_split
from workers.cli import parse_size

SMALL = [
    "--per-turn-s",
    "2",
    "--readiness-s",
    "30",
    "--memory",
    "256m",
    "--cpus",
    "1",
    "--no-progress",
]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workers.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_parse_size():
    assert parse_size("512m") == 512 * 1024**2
    assert parse_size("16g") == parse_size("16GiB") == 16 * 1024**3
    assert parse_size("1048576") == 1048576


def test_bad_arguments_are_named(tmp_path):
    result = cli(
        "--image",
        "x",
        "--split",
        str(tmp_path / "absent"),
        "--task",
        "multi-turn-qa",
        "--out",
        str(tmp_path / "p.jsonl"),
        "--report",
        str(tmp_path / "r.json"),
    )
    assert result.returncode == 2 and "absent" in result.stderr
    result = cli(
        "--image",
        "x",
        "--split",
        str(tmp_path),
        "--task",
        "multi-turn-qa",
        "--out",
        "p",
        "--report",
        "r",
        "--memory",
        "lots",
    )
    assert result.returncode == 2 and "'lots' is not a size" in result.stderr


@pytest.mark.docker
def test_cli_writes_predictions_the_evaluator_scores(agent_image, tmp_path, no_leftovers):
    split_dir = tmp_path / "split"
    split = make_split(split_dir, [2, 1, 3])
    image = agent_image("agents/recorder")
    out, report = tmp_path / "run" / "predictions.jsonl", tmp_path / "run" / "report.json"
    result = cli(
        "--image",
        image.ref,
        "--split",
        str(split_dir),
        "--task",
        "multi-turn-qa",
        "--out",
        str(out),
        "--report",
        str(report),
        *SMALL,
    )
    assert result.returncode == 0, result.stderr
    predictions = lines(out)
    assert {p["interaction_id"] for p in predictions} == {
        t.interaction_id for _, _, t in split.turns()
    }
    assert all(set(p) == {"session_id", "interaction_id", "response"} for p in predictions)
    document = json.loads(report.read_text())
    assert document["status"] == "completed" and document["counts"]["answered"] == 6
    assert document["image_digest"] == image.image_id
    scored = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator",
            "score",
            "--split",
            str(split_dir),
            "--predictions",
            str(out),
            "--out",
            str(tmp_path / "scores"),
            "--judge",
            "rules",
            "--no-cache",
            "--no-progress",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert scored.returncode in (0, 3), scored.stderr  # 3: some turns left unjudged by rules
    assert "warning" not in scored.stderr, "every turn has a prediction"


@pytest.mark.docker
def test_cli_resumes_and_a_second_start_answers_nothing_twice(agent_image, tmp_path, no_leftovers):
    split_dir = tmp_path / "split"
    make_split(split_dir, [1, 1, 1, 1], {"c1-t0": "slow one"})
    image = agent_image("agents/slow_turns")
    out, report = tmp_path / "predictions.jsonl", tmp_path / "report.json"
    # An earlier run answered c0 and died while writing the next line.
    out.write_text(
        '{"session_id": "c0", "interaction_id": "c0-t0", "response": "kept"}\n'
        '{"session_id": "c2", "interac'
    )
    args = (
        "--image",
        image.ref,
        "--split",
        str(split_dir),
        "--task",
        "single-source-augmentation",
        "--out",
        str(out),
        "--report",
        str(report),
        "--max-consecutive-timeouts",
        "1",
        *SMALL,
    )
    first = cli(*args)
    assert first.returncode == 0, first.stderr
    assert "dropped an incomplete last line" in first.stderr
    predictions = {p["interaction_id"]: p["response"] for p in lines(out)}
    assert predictions == {
        "c0-t0": "kept",
        "c2-t0": "answer to question 0 about conversation 2?",
        "c3-t0": "answer to question 0 about conversation 3?",
    }
    outcomes = {o["key"]: o["outcome"] for o in lines(out.with_name(out.name + ".outcomes.jsonl"))}
    assert outcomes == {"c1-t0": "timeout", "c2-t0": "answered", "c3-t0": "answered"}
    document = json.loads(report.read_text())
    assert document["resumed_items"] == 1 and document["restarts"] == 1
    before = out.read_bytes()
    second = cli(*args)
    assert second.returncode == 0, second.stderr
    assert out.read_bytes() == before
    assert json.loads(report.read_text())["items"] == []
    assert json.loads(report.read_text())["resumed_items"] == 4


def test_a_setting_the_benchmark_does_not_know_is_named(tmp_path):
    result = cli(
        "--image", "x", "--split", str(tmp_path), "--task", "visual-rag",
        "--protocol", "visual-rag", "--setting", "one_in_x",
        "--out", str(tmp_path / "p.jsonl"), "--report", str(tmp_path / "r.json"),
    )  # fmt: skip
    assert result.returncode == 2 and "one_in_x" in result.stderr


@pytest.mark.docker
def test_a_visual_rag_setting_through_the_cli_is_scored_by_the_evaluator(
    agent_image, tmp_path, no_leftovers
):
    from evaluator.benchmarks.visual_rag.sample import write_sample

    write_sample(tmp_path / "sample", seed=0)
    split_dir = tmp_path / "sample" / "validation"
    out, report = tmp_path / "run" / "predictions.jsonl", tmp_path / "run" / "report.json"
    args = (
        "--image", agent_image("examples/agents/visual-rag-colour").ref,
        "--split", str(split_dir), "--task", "visual-rag",
        "--protocol", "visual-rag", "--setting", "retrieval",
        "--out", str(out), "--report", str(report), *SMALL,
    )  # fmt: skip
    result = cli(*args)
    assert result.returncode == 0, result.stderr
    predictions = lines(out)
    assert len(predictions) == 28 and {p["setting"] for p in predictions} == {"retrieval"}
    assert all(p["ranking"] for p in predictions)
    outcomes = lines(out.with_name(out.name + ".outcomes.jsonl"))
    assert [o["key"] for o in outcomes] == [f"retrieval/{p['query_id']}" for p in predictions]
    # resumed: nothing is asked again
    again = cli(*args)
    assert again.returncode == 0 and json.loads(report.read_text())["resumed_items"] == 28
    scored = subprocess.run(
        [
            sys.executable, "-m", "evaluator", "score", "--protocol", "visual-rag",
            "--split", str(split_dir), "--predictions", str(out), "--judge", "rules",
            "--out", str(tmp_path / "scores"), "--no-cache", "--no-progress",
        ],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    scores = json.loads((tmp_path / "scores" / "scores.json").read_text())
    assert scores["retrieval"]["count"] == 28 and scores["retrieval"]["hit@5"] > 50
