"""``python -m evaluator`` end to end on the generated sample data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluator.benchmarks.crag_mm.sample import SPLITS
from evaluator.cli import EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_OK, main
from evaluator.report import SCORES_JSON, read_items
from tests.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
TASK = "multi-turn-qa"


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sample") / "data"
    assert main(["sample", str(out)]) == EXIT_OK
    return out


@pytest.fixture(scope="module")
def split(sample) -> Path:
    return sample / TASK / SPLITS[0]


def write_predictions(split: Path, path: Path, wrong_every: int = 3) -> Path:
    """Every turn answered: the ground truth, "I don't know", or a wrong answer in turn."""
    lines = []
    index = 0
    for line in (split / "sessions.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for answer in record["answers"]:
            choice = index % wrong_every
            response = (
                answer["ans_full"]
                if choice == 0
                else "I don't know."
                if choice == 1
                else f"Probably the blue one, number {index}."
            )
            lines.append(
                {
                    "session_id": record["session_id"],
                    "interaction_id": answer["interaction_id"],
                    "response": response,
                }
            )
            index += 1
    path.write_text("".join(json.dumps(row) + "\n" for row in lines), encoding="utf-8")
    return path


@pytest.fixture
def predictions(split, tmp_path) -> Path:
    return write_predictions(split, tmp_path / "predictions.jsonl")


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(reply="WRONG") as fake:
        yield fake


def score(split: Path, predictions: Path, out: Path, *extra: str) -> int:
    args = ["score", "--split", str(split), "--predictions", str(predictions), "--out", str(out)]
    return main([*args, "--no-progress", *extra])


def openai_flags(server: FakeOpenAI, cache: Path) -> list[str]:
    return [
        "--judge=openai",
        f"--judge-base-url={server.url}",
        "--judge-model=fake-judge",
        "--judge-retries=0",
        "--judge-timeout=5",
        f"--cache={cache}",
    ]


def test_score_with_the_rules_judge(split, predictions, tmp_path, capsys):
    assert score(split, predictions, tmp_path / "run", "--no-cache") == EXIT_OK
    out = capsys.readouterr().out
    assert "NOTICE: verdicts by the 'rules@1' judge" in out
    assert out.splitlines()[4].startswith("all ")
    scores = json.loads((tmp_path / "run" / SCORES_JSON).read_text())
    assert scores["judge"]["kind"] == "rules" and scores["complete"]
    assert scores["truncation"].startswith("llama-3.2")
    assert (scores["missing_variant"], scores["counting"], scores["seed"]) == ("kit-b", "paper", 0)
    turns = read_items(tmp_path / "run")
    assert len(turns) == scores["all"]["turns"] == len(predictions.read_text().splitlines())
    assert (tmp_path / "run" / "turns.csv").is_file() and (
        tmp_path / "run" / "turns.jsonl"
    ).is_file()


def test_score_with_an_openai_judge_then_a_warm_cache(split, predictions, server, tmp_path, capsys):
    cache = tmp_path / "judgments.sqlite"
    assert score(split, predictions, tmp_path / "a", *openai_flags(server, cache)) == EXIT_OK
    out = capsys.readouterr().out
    assert "NOTICE" not in out and "judge openai:fake-judge@unspecified (llm" in out
    judged = server.count
    assert judged > 0
    first = json.loads((tmp_path / "a" / SCORES_JSON).read_text())
    assert first["judge"]["id"] == "openai:fake-judge@unspecified"
    assert first["all"]["hallucination"] == judged  # every judged answer came back WRONG

    assert score(split, predictions, tmp_path / "b", *openai_flags(server, cache)) == EXIT_OK
    assert server.count == judged  # re-scoring with the same judge makes no model calls
    second = json.loads((tmp_path / "b" / SCORES_JSON).read_text())
    assert second["all"] == first["all"]


def test_incomplete_run_exits_3_and_a_rerun_finishes_it(split, predictions, server, tmp_path):
    cache = tmp_path / "judgments.sqlite"
    server.fail(500, times=5)
    run = tmp_path / "run"
    code = score(split, predictions, run, *openai_flags(server, cache))
    assert code == EXIT_INCOMPLETE
    scores = json.loads((run / SCORES_JSON).read_text())
    assert scores["complete"] is False and scores["unjudged"] == 5
    assert scores["all"]["truthfulness"] is None
    assert sum(t.verdict.value == "unjudged" for t in read_items(run)) == 5
    before = server.count

    assert score(split, predictions, run, *openai_flags(server, cache)) == EXIT_OK
    assert server.count == before + 5  # only the unjudged turns went back to the judge
    assert json.loads((run / SCORES_JSON).read_text())["complete"] is True


def test_incomplete_run_output_says_so(split, predictions, server, tmp_path, capsys):
    server.fail(500, times=1)
    flags = openai_flags(server, tmp_path / "c.sqlite")
    assert score(split, predictions, tmp_path / "run", *flags) == EXIT_INCOMPLETE
    out = capsys.readouterr().out
    assert "INCOMPLETE: 1 turns unjudged" in out and "Re-run the same command" in out


def test_compare_two_runs(split, predictions, tmp_path, capsys):
    worse = write_predictions(split, tmp_path / "worse.jsonl", wrong_every=2)
    assert score(split, predictions, tmp_path / "a", "--no-cache") == EXIT_OK
    assert score(split, worse, tmp_path / "b", "--no-cache") == EXIT_OK
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == EXIT_OK
    out = capsys.readouterr().out
    assert "Truthfulness (paper counting, multi-turn" in out
    assert f"difference {tmp_path / 'a'} - {tmp_path / 'b'}" in out


def test_compare_refuses_an_incomplete_run(split, predictions, server, tmp_path, capsys):
    assert score(split, predictions, tmp_path / "a", "--no-cache") == EXIT_OK
    server.fail(500, times=1)
    flags = openai_flags(server, tmp_path / "c.sqlite")
    assert score(split, predictions, tmp_path / "b", *flags) == EXIT_INCOMPLETE
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "warning: the runs differ in judge" in err
    assert "error: run B has 1 unjudged turn(s)" in err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"split": "absent"}, "absent"),
        ({"predictions": "unknown-id"}, "field 'interaction_id': 'nope' is not in the split"),
        ({"flags": ["--tokenizer", "absent.json"]}, "tokenizer: absent.json does not exist"),
        ({"flags": ["--judge=openai", "--judge-api-key-env=PODIUM_TEST_UNSET"]}, "is not set"),
        ({"flags": ["--judge=rules", "--judge-model=x"]}, "rules judge: takes no options"),
    ],
    ids=["split", "predictions", "tokenizer", "api-key", "rules-options"],
)
def test_bad_input_exits_2_with_one_line(split, predictions, tmp_path, capsys, change, message):
    if change.get("predictions"):
        predictions.write_text('{"session_id": "s", "interaction_id": "nope", "response": "x"}\n')
    chosen = tmp_path / change["split"] if "split" in change else split
    code = score(chosen, predictions, tmp_path / "run", "--no-cache", *change.get("flags", []))
    assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0]
    assert not (tmp_path / "run").exists()


def test_compare_and_convert_bad_input(tmp_path, capsys):
    assert main(["compare", str(tmp_path), str(tmp_path)]) == EXIT_BAD_INPUT
    assert "scores.json: not found" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "absent"), str(tmp_path / "out")]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.startswith("error: ")


def test_sample_refuses_a_non_empty_directory(sample, capsys):
    assert main(["sample", str(sample)]) == EXIT_BAD_INPUT
    assert "already exists" in capsys.readouterr().err


def test_python_dash_m_entry_point(split, predictions, tmp_path):
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "evaluator", "score", "--split", str(split)]
    command += ["--predictions", str(predictions), "--out", str(tmp_path / "run"), "--no-cache"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == EXIT_OK, done.stderr
    assert "judging" in done.stderr  # the progress bar
    assert done.stdout.startswith("protocol crag-mm")
    bad = subprocess.run(
        [*command[:5], str(tmp_path / "absent"), *command[6:]],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == EXIT_BAD_INPUT
    assert "Traceback" not in bad.stderr and bad.stderr.startswith("error: ")
