"""The per-answer arithmetic against the spec, by hand."""

from __future__ import annotations

import math

import pytest

from evaluator.benchmarks.m2rag.scoring import (
    average_precision,
    faithfulness,
    image_recall,
    official_clamp,
    official_score,
    strict_score,
)


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("Score: 7", 7),
        ("8/10", 10),  # the last integer, clamped: the documented quirk
        ("I give it 3 out of 5", 5),
        ("no digit at all", 0),
        ("12", 10),
        ("fine\n\n6\n", 6),
    ],
)
def test_the_official_parser_takes_the_last_integer_clamped(reply: str, score: int) -> None:
    assert official_score(reply) == score


@pytest.mark.parametrize(
    ("reply", "score"), [("reason\n7", 7), (" 10 \n", 10), ("8/10", None), ("great", None),
                         ("11", None), ("", None)],
)  # fmt: skip
def test_strict_parsing_wants_the_integer_alone_on_the_last_line(
    reply: str, score: int | None
) -> None:
    assert strict_score(reply) == score


def test_context_precision_is_ragas_average_precision() -> None:
    # verdicts 1,0,1: (1/1 * 1 + 2/3 * 1) / 2 = 5/6
    assert average_precision([1, 0, 1]) == pytest.approx(5 / 6)
    assert average_precision([0, 1]) == pytest.approx(0.5)  # (1/2) / 1
    assert average_precision([1, 1]) == pytest.approx(1.0)
    assert average_precision([0, 0]) == 0.0
    assert average_precision([]) == 0.0


def test_faithfulness_is_the_supported_share_and_nan_reads_one_officially() -> None:
    assert faithfulness([1, 0, 1, 1]) == 0.75
    assert math.isnan(faithfulness([]))
    assert official_clamp(faithfulness([])) == 1.0
    assert official_clamp(0.25) == 0.25


def test_image_recall_counts_images_by_file_as_the_official_code_counts_urls() -> None:
    """Official (evaluate.py): len(set(positive URLs) & set(placed URLs)) / len(positive URLs),
    the positive URLs a list with one entry per positive listing (repeats kept)."""
    # four distinct positives, two placed (a and c; a placed twice): |{a, c}| / 4 = 0.5
    assert image_recall(["a", "a", "c"], positives=["a", "b", "c", "d"]) == 0.5
    assert image_recall(["x"], positives=["a", "b"]) == 0.0
    assert image_recall([], positives=[]) == 1.0
    assert image_recall(["c"], positives=[]) == 1.0
    # one image listed twice, both listings positive, the answer places both: the set of
    # positives {a} meets the placed {a} in 1 image, over 2 positive listings = 1/2
    # (counting by index gave {0, 2} & {0, 2} / 2 = 1.0)
    assert image_recall(["a", "a"], positives=["a", "a"]) == 0.5
    # placing only one of the two listings reads the same 1/2 (by index: 1/2 too)
    assert image_recall(["a"], positives=["a", "a"]) == 0.5
    # with a third positive b placed as well: |{a, b}| / 3 listings = 2/3 (by index: 3/3)
    assert image_recall(["a", "a", "b"], positives=["a", "a", "b"]) == pytest.approx(2 / 3)
    # the image listed once scored 9 (index 0) and once scored 2 (index 1); the answer places
    # index 1: the positive a is placed, 1/1 = 1.0 (by index: {1} & {0} / 1 = 0.0)
    assert image_recall(["a"], positives=["a"]) == 1.0
