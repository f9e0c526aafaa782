"""MRAG-Suite: the split file and its errors, the retrieval modes and depth, the answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.benchmarks.mrag_suite.items import load_split
from evaluator.benchmarks.mrag_suite.modes import (
    MAX_LONG_ANSWER_CHARS,
    read_answer,
    read_stored,
    retrieved,
    stored_answer,
)
from evaluator.records import EvaluatorError
from tests.evaluator.mrag_suite.split_data import record, write_split


def test_an_item_loads_in_the_normalised_shape_with_its_labels(tmp_path: Path) -> None:
    split = load_split(write_split(tmp_path, [record()]))
    item = split.item("q1")
    assert (item.short_answer, item.labels) == (
        "12 million",
        {"source": "chartqa", "variant": "filtered", "ambiguity": "clear"},
    )
    assert [(e.evidence_id, e.modality, e.gold) for e in item.evidence] == [
        ("chart", "image", True),
        ("p1", "text", True),
    ]
    assert [e.evidence_id for e in item.distractors] == ["d1", "d2", "x1", "x2", "x3"]
    assert split.image_files() == ["images/chart.png", "images/d1.png", "images/d2.png"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"question": ""}, "field 'question'"),
        ({"variant": "partial"}, "field 'variant': 'partial' is not filtered or full"),
        ({"evidence_imgs": ["images/none.png"]}, "no image file 'images/none.png'"),
        ({"evidence_imgs": ["../secret.png"]}, "no image file '../secret.png'"),
        ({"evidence_imgs": [], "evidence_txts": []}, "no evidence"),
        ({"distractor_txts": [{"id": "p1", "text": "x"}]}, "evidence id 'p1' twice"),
        ({"item_id": "a/b"}, "not a plain id"),
    ],
)
def test_a_bad_item_is_refused_naming_line_and_field(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    write_split(tmp_path, [record(), record("q2", **changes)])
    with pytest.raises(EvaluatorError, match=r"items\.jsonl:2") as error:
        load_split(tmp_path)
    assert message in str(error.value)


def test_an_item_id_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EvaluatorError, match="'q1' again"):
        load_split(write_split(tmp_path, [record(), record()]))


def ids(found: list) -> list[str]:
    return [entry.evidence_id for entry in found]


def test_each_mode_retrieves_its_own_items_up_to_the_depth(tmp_path: Path) -> None:
    item = load_split(write_split(tmp_path, [record()])).item("q1")
    assert ids(retrieved(item, "GO")) == ["p1", "chart"]
    assert ids(retrieved(item, "DO")) == ["x1", "x2", "x3", "d1", "d2"]
    assert ids(retrieved(item, "DO", (2, 1))) == ["x1", "x2", "d1"]
    gpd = retrieved(item, "GPD")
    # x2, the distractor equal to the gold passage p1, is retrieved too (as RAGChecker counts
    # a context list: twice); the gold always
    assert sorted(ids(gpd)) == ["chart", "d1", "d2", "p1", "x1", "x2", "x3"]
    assert sorted(ids(retrieved(item, "GPD", (2, 2)))) == ["chart", "d1", "p1", "x1"]
    assert sorted(ids(retrieved(item, "GPD", (3, 0)))) == ["p1", "x1", "x2"]
    assert retrieved(item, "GPD") == gpd  # the shuffle is seeded
    # Podium's distinct counting retrieves the same text once: x2 gives its place to x3
    distinct = retrieved(item, "GPD", counting="distinct")
    assert sorted(ids(distinct)) == ["chart", "d1", "d2", "p1", "x1", "x3"]
    assert sorted(ids(retrieved(item, "GPD", (3, 0), "distinct"))) == ["p1", "x1", "x3"]
    with pytest.raises(EvaluatorError, match="counting 'twice': expected one of"):
        retrieved(item, "GO", counting="twice")
    with pytest.raises(EvaluatorError, match="'XX' is not a retrieval mode"):
        retrieved(item, "XX")


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("text", "not an object {short_answer, long_answer}"),
        ({"short_answer": "a"}, "long_answer is missing or not a string"),
        ({"short_answer": 3, "long_answer": ""}, "short_answer is missing or not a string"),
        ({"short_answer": "a", "long_answer": "b", "x": 1}, "1 field(s) other than"),
        ({"short_answer": "a", "long_answer": "b" * (MAX_LONG_ANSWER_CHARS + 1)}, "longer than"),
        ({"short_answer": "a", "long_answer": "bad \udc80 bytes"}, "not valid UTF-8 text"),
    ],
)
def test_a_bad_answer_is_named_and_left_empty(reply: object, problem: str) -> None:
    answer, found = read_answer("q1", "GO", reply)
    assert found is not None and problem in found
    assert (answer.short_answer, answer.long_answer) == ("", "")


def test_an_answer_is_stored_and_read_back() -> None:
    answer, problem = read_answer("q1", "GPD", {"short_answer": "12", "long_answer": "It is 12."})
    assert problem is None
    assert read_stored("q1", "GPD", stored_answer(answer)) == answer
    assert read_stored("q1", "GPD", "not json").short_answer == ""
