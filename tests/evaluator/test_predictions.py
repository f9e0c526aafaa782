"""Predictions: Podium JSONL, the official kit's response.jsonl and per-turn CSV, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evaluator.benchmarks.crag_mm.predictions import load_predictions, write_predictions
from evaluator.benchmarks.crag_mm.records import Conversation, Prediction, Split, Turn
from evaluator.records import EvaluatorError

LABELS = {"domain": "food", "query_category": "reasoning", "dynamism": "static"}
LABELS = LABELS | {"image_quality": "normal"}
TRICKY = 'He said "no", then\nleft; ünïcödé, 42'


@pytest.fixture
def split(tmp_path: Path) -> Split:
    conversations = [
        Conversation(
            session_id,
            None,
            "https://example.org/x.jpg",
            tuple(Turn(f"{session_id}-{n}", "q?", "a", LABELS) for n in range(turns)),
        )
        for session_id, turns in (("s1", 2), ("s2", 1), ("s3", 3))
    ]
    return Split(root=tmp_path, conversations=conversations)


def ids(split: Split) -> list[tuple[str, str]]:
    return [(c.session_id, t.interaction_id) for c, _, t in split.turns()]


def write_jsonl(path: Path, records: list) -> Path:
    lines = (r if isinstance(r, str) else json.dumps(r) for r in records)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_podium_jsonl_round_trips_through_write_predictions(tmp_path: Path, split: Split) -> None:
    expected = [Prediction(s, i, f"answer for {i}") for s, i in ids(split)]
    expected[1] = Prediction("s1", "s1-1", TRICKY)
    expected[2] = Prediction("s2", "s2-0", "")
    write_predictions(tmp_path / "out" / "predictions.jsonl", expected)
    predictions, warnings = load_predictions(tmp_path / "out" / "predictions.jsonl", split)
    assert warnings == []
    assert list(predictions.values()) == expected
    assert list(predictions) == [i for _, i in ids(split)]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["predictions.jsonl"]


def test_missing_predictions_are_listed_in_a_warning(tmp_path: Path, split: Split) -> None:
    records = [{"session_id": "s1", "interaction_id": "s1-1", "response": "x"}]
    predictions, warnings = load_predictions(write_jsonl(tmp_path / "p.jsonl", records), split)
    assert list(predictions) == ["s1-1"]
    assert len(warnings) == 1
    assert "5 of 6 turns have no prediction and count as missing" in warnings[0]
    for missing in ("s1-0", "s2-0", "s3-0", "s3-1", "s3-2"):
        assert missing in warnings[0]


def test_the_warning_names_the_first_ids_and_counts_the_rest(tmp_path: Path) -> None:
    turns = tuple(Turn(f"t{n}", "q?", "a", LABELS) for n in range(25))
    big = Split(tmp_path, [Conversation("s", None, "https://example.org/x", turns)])
    _, warnings = load_predictions(write_jsonl(tmp_path / "p.jsonl", []), big)
    assert "25 of 25 turns" in warnings[0] and "t9 and 15 more" in warnings[0]
    assert "t10" not in warnings[0]


GOOD = {"session_id": "s1", "interaction_id": "s1-0", "response": "x"}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ({**GOOD, "interaction_id": "zz"}, r":2: field 'interaction_id': 'zz' is not in the split"),
        ({**GOOD, "session_id": "s2"}, r":2: field 'session_id': 's1-0' belongs to session 's1'"),
        (GOOD, r":2: field 'interaction_id': duplicate 's1-0' \(first at line 1\)"),
        ({**GOOD, "interaction_id": "s1-1", "response": 3}, r":2: field 'response'.*got int"),
        ({**GOOD, "interaction_id": "s1-1", "response": None}, r":2: field 'response' is missing"),
        ({"session_id": "s1", "interaction_id": "s1-1"}, r":2: field 'response' is missing"),
        ('{"session_id": "s1", ', r":2: malformed JSON"),
        ('["s1", "s1-1", "x"]', r":2: expected a JSON object, got list"),
    ],
)
def test_bad_lines_are_errors_with_the_line_number(
    tmp_path: Path, split: Split, line: object, expected: str
) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [GOOD, line])
    with pytest.raises(EvaluatorError, match=expected):
        load_predictions(path, split)


def official_rows(split: Split) -> list[dict]:
    """Rows as the official kit builds them before writing (ints for labels, lists, booleans)."""
    return [
        {
            "session_id": session_id,
            "interaction_id": interaction_id,
            "turn_idx": n,
            "is_ego": False,
            "image_quality": 3,
            "query_category": 1,
            "domain": 5,
            "dynamism": 0,
            "query": "q?",
            "ground_truth": "a",
            "agent_response": TRICKY if n == 0 else f"answer, {interaction_id}",
            "total_turn_count": 2,
            "interaction_id_history": [],
        }
        for n, (session_id, interaction_id) in enumerate(ids(split))
    ]


def test_official_response_jsonl_is_accepted(tmp_path: Path, split: Split) -> None:
    path = write_jsonl(tmp_path / "response.jsonl", official_rows(split))
    predictions, warnings = load_predictions(path, split)
    assert warnings == []
    assert predictions["s1-0"] == Prediction("s1", "s1-0", TRICKY)
    assert predictions["s3-2"].response == "answer, s3-2"


def test_official_per_turn_csv_is_accepted(tmp_path: Path, split: Split) -> None:
    table = pd.DataFrame(official_rows(split))
    table["is_exact_match"] = False
    table["is_correct"] = [True, False, True, False, False, True]
    table["api_response"] = None
    table.to_csv(tmp_path / "turn_evaluation_results_all.csv", index=False)
    predictions, warnings = load_predictions(tmp_path / "turn_evaluation_results_all.csv", split)
    assert warnings == []
    assert predictions["s1-0"] == Prediction("s1", "s1-0", TRICKY)
    assert [p.response for p in predictions.values()][1:] == [
        f"answer, {i}" for _, i in ids(split)[1:]
    ]


def test_official_csv_problems(tmp_path: Path, split: Split) -> None:
    no_column = tmp_path / "a.csv"
    no_column.write_text("session_id,interaction_id,response\ns1,s1-0,x\n")
    with pytest.raises(EvaluatorError, match=r"a\.csv:1: missing column\(s\) agent_response"):
        load_predictions(no_column, split)
    ragged = tmp_path / "b.csv"
    ragged.write_text("session_id,interaction_id,agent_response\ns1,s1-0,x\ns1,s1-1\n")
    with pytest.raises(EvaluatorError, match=r"b\.csv:3: row has 3 columns"):
        load_predictions(ragged, split)
    unknown = tmp_path / "c.csv"
    unknown.write_text("session_id,interaction_id,agent_response\ns9,s9-0,x\n")
    with pytest.raises(EvaluatorError, match=r"c\.csv:2: field 'interaction_id': 's9-0'"):
        load_predictions(unknown, split)


def test_unreadable_files(tmp_path: Path, split: Split) -> None:
    with pytest.raises(EvaluatorError, match="does not exist"):
        load_predictions(tmp_path / "nope.jsonl", split)
    (tmp_path / "latin1.jsonl").write_bytes(b'{"response": "caf\xe9"}\n')
    with pytest.raises(EvaluatorError, match="not UTF-8"):
        load_predictions(tmp_path / "latin1.jsonl", split)
