"""Aggregation by hand: pooling of the per-image metrics, failed answers, unjudged ones."""

from __future__ import annotations

import pytest

from evaluator.benchmarks.m2rag.metrics import METRICS, block, compare_answers, score_answers
from evaluator.benchmarks.m2rag.record import FAILED, GradedAnswer, from_row, to_row
from evaluator.judges.rubric import UNJUDGED


def answer(query_id: str, topic: str, value: float, images: tuple[float, ...]) -> GradedAnswer:
    item = GradedAnswer(
        query_id, {"topic": topic}, "q", "a", "", "rules@x", "v", "h",
        placed=tuple(range(len(images))), fluency=value, relevance=value,
        context_precision=value, faithfulness=value, image_recall=value,
        coherence=images, helpfulness=images, reference=images,
    )  # fmt: skip
    return item.with_grade()


def failed(query_id: str, topic: str) -> GradedAnswer:
    return GradedAnswer(query_id, {"topic": topic}, "q", "", FAILED, "rules@x", "v", "h")


def test_per_image_metrics_are_pooled_over_every_placed_image() -> None:
    # answer a: 1 image scored 1.0; answer b: 3 images scored 0.2; c: none
    items = [answer("a", "t", 1.0, (1.0,)), answer("b", "t", 0.5, (0.2, 0.2, 0.2)),
             answer("c", "t", 0.0, ())]  # fmt: skip
    result = block(items, seed=0)
    assert result["coherence"] == pytest.approx((1.0 + 0.6) / 4)  # pooled, not (1 + 0.2) / 2
    assert result["fluency"] == pytest.approx(0.5)  # (1 + 0.5 + 0) / 3
    expected = (5 * 0.5 + 3 * 0.4) / 8
    assert result["overall"] == pytest.approx(expected)
    low, high = result["overall_ci95"]
    assert low <= expected <= high and low < high


def test_a_failed_answer_is_zero_in_the_headline_and_skipped_in_the_official_figure() -> None:
    items = [answer("a", "t", 0.8, (0.6,)), failed("b", "t")]
    result = block(items, seed=0)
    assert result["failed"] == 1
    assert result["fluency"] == pytest.approx(0.4)
    assert result["skip"]["fluency"] == pytest.approx(0.8)
    assert result["coherence"] == result["skip"]["coherence"] == pytest.approx(0.6)
    assert result["overall"] == pytest.approx((5 * 0.4 + 3 * 0.6) / 8)
    assert result["skip"]["overall"] == pytest.approx((5 * 0.8 + 3 * 0.6) / 8)


def test_an_unjudged_answer_withholds_the_figures_and_is_never_zero() -> None:
    unjudged = GradedAnswer("b", {"topic": "t"}, "q", "a", UNJUDGED, "j", "v", "h",
                            judge_error="fluency: no score")  # fmt: skip
    scores = score_answers([answer("a", "t", 1.0, ()), unjudged])
    assert scores["complete"] is False and scores["unjudged"] == 1
    assert all(scores["all"][name] is None for name in (*METRICS, "overall"))


def test_topics_are_slices_with_their_counts() -> None:
    scores = score_answers([answer("a", "x", 1.0, ()), answer("b", "y", 0.0, ()), failed("c", "y")])
    assert set(scores["slices"]["topic"]) == {"x", "y"}
    assert scores["slices"]["topic"]["y"]["count"] == 2
    assert scores["slices"]["topic"]["x"]["fluency"] == 1.0


def test_a_row_reads_back_and_a_run_compares_with_another() -> None:
    item = answer("a", "t", 0.5, (0.1, 0.9))
    assert from_row(to_row(item), "row") == item
    a = [answer("a", "t", 1.0, ()), answer("b", "t", 1.0, ()), failed("c", "t")]
    b = [answer("a", "t", 0.0, ()), answer("b", "t", 0.0, ()), failed("c", "t")]
    result = compare_answers(a, b)
    assert result["difference"] == pytest.approx(2 / 3) and result["metric"] == "overall"


def test_the_stored_rows_hold_numbers_and_the_official_figures_beside_them() -> None:
    from evaluator.benchmarks.m2rag import M2RAG

    scores = score_answers([answer("a", "x", 0.8, (0.6,)), failed("b", "y")])
    all_row, *slices = M2RAG().score_blocks(scores)
    assert (all_row.dimension, all_row.value, all_row.count) == ("all", "all", 2)
    assert all_row.metrics["fluency"] == pytest.approx(0.4)
    assert all_row.metrics["skip.fluency"] == pytest.approx(0.8)
    assert [(row.value, row.count) for row in slices] == [("x", 1), ("y", 1)]
    assert "skip.fluency" not in slices[1].metrics  # every answer of y failed: no official figure
