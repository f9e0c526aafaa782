"""Loading M2RAG splits and predictions, the agent's replies, answers as an attack surface."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluator.benchmarks.m2rag import M2RAG
from evaluator.benchmarks.m2rag.agent import MAX_ANSWER_CHARS, read_response, stored_prediction
from evaluator.benchmarks.m2rag.items import M2Prediction, load_predictions, load_split
from evaluator.judges import make_judge
from evaluator.records import EvaluatorError


def write(root: Path, **change: Any) -> Path:
    (root / "images").mkdir(exist_ok=True)
    (root / "images" / "a.png").write_bytes(b"png")
    record = {"query_id": "q", "query": "Q?", "topic": "t",
              "pages": [{"title": "", "text": "T.", "images": [
                  {"file": "images/a.png", "score": 9, "caption": "c"}]}]} | change  # fmt: skip
    (root / "queries.jsonl").write_text(json.dumps(record) + "\n")
    return root


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"pages": []}, "field 'pages': expected a non-empty list"),
        ({"topic": ""}, "field 'topic': expected a non-empty string"),
        ({"extra_images": [{"file": "images/b.png", "score": 1, "caption": ""}]},
         "field 'file': no image file 'images/b.png'"),
        ({"extra_images": [{"file": "../a.png", "score": 1, "caption": ""}]}, "no image file"),
        ({"extra_images": [{"file": "images/a.png", "score": 11, "caption": ""}]},
         "field 'score': expected an integer 0-10"),
        ({"ground_truth": "x"}, "field 'ground_truth': not a query field"),
    ],
)  # fmt: skip
def test_a_bad_split_is_refused_naming_line_and_field(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    with pytest.raises(EvaluatorError, match=r"queries\.jsonl:1") as error:
        load_split(write(tmp_path, **change))
    assert message in str(error.value)


def test_predictions_warn_of_missing_queries_and_refuse_unknown_ones(tmp_path: Path) -> None:
    split = load_split(write(tmp_path))
    file = tmp_path / "p.jsonl"
    file.write_text("")
    assert load_predictions(file, split)[1] == [
        "1 queries without a prediction (scored as failed): q"
    ]
    file.write_text('{"query_id": "zz", "answer": "a"}\n')
    with pytest.raises(EvaluatorError, match="'zz' is not in the split"):
        load_predictions(file, split)


def test_a_broken_reply_is_a_failed_answer_with_a_problem_in_podiums_words() -> None:
    assert read_response("q", {"answer": "ok"}) == (M2Prediction("q", "ok"), None)
    prediction, problem = read_response("q", ["<script>"])
    assert prediction.failed and problem == 'the reply is not {"answer": <markdown text>}'
    prediction, problem = read_response("q", {"answer": "x" * (MAX_ANSWER_CHARS + 1)})
    assert prediction.failed and problem and "more than" in problem
    assert stored_prediction("q", "not json").failed


def test_hostile_markdown_is_scored_as_text_and_huge_indices_are_dropped(tmp_path: Path) -> None:
    split = load_split(write(tmp_path))
    answer = ('<script>alert(1)</script> [x](javascript:alert(1)) '
              "![a](image 99999999999999999999999) ![b](http://evil.example/0.png)")  # fmt: skip
    benchmark = M2RAG()
    (item,) = benchmark.grade(split, {"q": M2Prediction("q", answer)},
                             make_judge("rules", benchmark.rubric), None, False)  # fmt: skip
    assert item.dropped == 1 and item.placed == (0,)  # the remote URL's digit is image 0
    assert item.judged and item.image_recall == 1.0
