"""A run's output files, read back, and the summary people read."""

from __future__ import annotations

import csv
import json

import pytest

from evaluator.benchmarks import get_benchmark
from evaluator.benchmarks.crag_mm.prompt import CragMMRubric
from evaluator.benchmarks.crag_mm.records import GradedTurn, Verdict
from evaluator.benchmarks.crag_mm.summary import format_summary
from evaluator.benchmarks.crag_mm.truncation import FallbackTruncator
from evaluator.judges import RulesJudge
from evaluator.records import EvaluatorError
from evaluator.report import (
    SCORES_JSON,
    judge_record,
    read_items,
    read_scores,
    scores_document,
    write_report,
)

RUBRIC = CragMMRubric()

OFFICIAL = [
    "session_id",
    "interaction_id",
    "turn_idx",
    "is_ego",
    "image_quality",
    "query_category",
    "domain",
    "dynamism",
    "query",
    "ground_truth",
    "agent_response",
    "is_exact_match",
    "is_correct",
    "is_miss",
]
LABELS = {
    "domain": "food",
    "query_category": "simple",
    "dynamism": "static",
    "image_quality": "normal",
}


def turn(iid: str, verdict: Verdict, session: str = "s1", idx: int = 0, **extra) -> GradedTurn:
    fields = {
        "session_id": session,
        "interaction_id": iid,
        "turn_idx": idx,
        "is_ego": True,
        "labels": LABELS | {"entity_popularity": "tail"},
        "query": 'What, "exactly", is this?\nSay it.',
        "ground_truth": "A teapot",
        "agent_response": "A kettle, ünïcödé",
        "is_exact_match": verdict is Verdict.CORRECT,
        "is_miss": verdict is Verdict.MISSING,
        "verdict": verdict,
        "judge_id": "rules@1",
        "prompt_version": "crag-mm-rules-v1",
        "prompt_hash": "abc",
    }
    return GradedTurn(**(fields | extra))


@pytest.fixture
def graded() -> list[GradedTurn]:
    return [
        turn("t1", Verdict.CORRECT, "s1", 0),
        turn("t2", Verdict.HALLUCINATED, "s1", 1),
        turn("t3", Verdict.MISSING, "s2", 0, is_ego=False, labels={"domain": "animal"}),
        turn("t4", Verdict.CORRECT, "s3", 0),
    ]


def written(tmp_path, graded, truncator=None):
    benchmark = get_benchmark("crag-mm", truncator=truncator or FallbackTruncator("no tokenizer"))
    judge = RulesJudge(RUBRIC)
    document = scores_document(benchmark, benchmark.aggregate(graded), judge, ["1 turn lacks x"], 7)
    write_report(tmp_path / "run", benchmark, graded, document)
    return tmp_path / "run", document


def test_turn_tables_carry_the_official_columns_then_podiums(tmp_path, graded):
    run, _ = written(tmp_path, graded)
    with (run / "turns.csv").open(newline="", encoding="utf-8") as table:
        rows = list(csv.DictReader(table))
    header = list(rows[0])
    assert header[:14] == OFFICIAL
    assert header[14:19] == ["verdict", "judge_id", "prompt_version", "prompt_hash", "judge_error"]
    assert header[19:] == ["entity_popularity"]
    assert rows[0]["query"] == 'What, "exactly", is this?\nSay it.'
    assert [row["is_correct"] for row in rows] == ["True", "False", "False", "True"]
    assert [row["is_miss"] for row in rows] == ["False", "False", "True", "False"]
    assert rows[2]["image_quality"] == "" and rows[2]["entity_popularity"] == ""
    lines = (run / "turns.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    assert list(first)[:14] == OFFICIAL and first["verdict"] == "correct"
    assert first["is_ego"] is True and first["turn_idx"] == 0


def test_turns_read_back_equal_what_was_written(tmp_path, graded):
    run, _ = written(tmp_path, graded)
    assert read_items(run) == graded


def test_scores_document_names_benchmark_judge_and_settings(tmp_path, graded):
    run, document = written(tmp_path, graded)
    scores = read_scores(run)
    assert scores == json.loads(json.dumps(document))
    assert list(scores)[:11] == [
        "protocol",
        "judge",
        "truncation",
        "missing_variant",
        "counting",
        "seed",
        "warnings",
        "multi_turn",
        "complete",
        "unjudged",
        "all",
    ]
    assert scores["judge"] == judge_record(RulesJudge(RUBRIC)) | {"kind": "rules"}
    assert scores["truncation"].startswith("fallback:")
    assert scores["warnings"] == ["1 turn lacks x"]
    assert scores["seed"] == 7 and scores["complete"] is True
    assert scores["all"]["turns"] == 4 and scores["ego"]["turns"] == 3
    assert scores["slices"]["entity_popularity"]["tail"]["turns"] == 3


def test_summary_shows_the_table_and_loud_notices(tmp_path, graded):
    _, document = written(tmp_path, graded)
    summary = format_summary(document, graded)
    lines = summary.splitlines()
    assert any(line.startswith("all ") and "50.0" in line for line in lines)  # accuracy 2/4
    assert any(line.startswith("ego ") for line in lines)
    assert "-- domain" in summary and "  animal" in summary
    assert "warning: 1 turn lacks x" in summary
    assert "NOT an LLM judge" in summary
    assert "fallback" in summary and "INCOMPLETE" not in summary


def test_incomplete_run_summary_says_why_and_what_to_do(tmp_path, graded):
    graded[1] = turn("t2", Verdict.UNJUDGED, "s1", 1, judge_error="HTTP 500 after 3 attempts")
    run, document = written(tmp_path, graded)
    assert document["complete"] is False and document["unjudged"] == 1
    summary = format_summary(document, graded)
    assert "INCOMPLETE: 1 turns unjudged" in summary
    assert "1 x HTTP 500 after 3 attempts" in summary
    assert "Re-run the same command" in summary
    assert read_items(run)[1].judge_error == "HTTP 500 after 3 attempts"


def test_llm_judge_has_no_rules_notice(tmp_path, graded):
    _, document = written(tmp_path, graded)
    document["judge"] = document["judge"] | {"id": "openai:m@1", "kind": "llm"}
    document["truncation"] = "llama-3.2 (tokenizer.json sha256:0)"
    assert "NOTICE" not in format_summary(document, graded)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "turns.jsonl:2: malformed JSON"),
        ("[1, 2]", "turns.jsonl:2: expected a JSON object, got list"),
        ('{"session_id": "s"}', "turns.jsonl:2: field 'verdict': missing"),
    ],
)
def test_corrupt_turn_rows_are_errors_with_file_and_line(tmp_path, graded, line, message):
    run, _ = written(tmp_path, graded)
    path = run / "turns.jsonl"
    rows = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([rows[0], line, *rows[2:]]) + "\n", encoding="utf-8")
    with pytest.raises(EvaluatorError, match=message):
        read_items(run)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("turn_idx", "0", "field 'turn_idx': expected int"),
        ("turn_idx", True, "field 'turn_idx': expected int"),
        ("is_ego", "yes", "field 'is_ego': expected bool"),
        ("verdict", "maybe", "field 'verdict': 'maybe' is not one of"),
        ("is_correct", False, "field 'is_correct': disagrees with verdict correct"),
        ("domain", 3, "field 'domain': expected str"),
    ],
)
def test_edited_turn_fields_are_refused(tmp_path, graded, field, value, message):
    run, _ = written(tmp_path, graded)
    path = run / "turns.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows[0][field] = value
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with pytest.raises(EvaluatorError, match=rf"turns\.jsonl:1: {message}"):
        read_items(run)


def test_missing_or_foreign_run_directories(tmp_path):
    with pytest.raises(EvaluatorError, match=r"scores\.json: not found"):
        read_items(tmp_path)
    (tmp_path / SCORES_JSON).write_text('{"protocol": "mrag"}')
    with pytest.raises(EvaluatorError, match="benchmark 'mrag': unknown"):
        read_items(tmp_path)
    (tmp_path / SCORES_JSON).write_text("[]")
    with pytest.raises(EvaluatorError, match="field 'protocol': missing"):
        read_scores(tmp_path)


def test_label_named_like_a_column_is_refused(tmp_path):
    clash = turn("t1", Verdict.CORRECT, labels=LABELS | {"judge_error": "x"})
    with pytest.raises(EvaluatorError, match="label 'judge_error' has the name of a column"):
        written(tmp_path, [clash])
