"""Visual-RAG ROUGE-1 recall against the `rouge` package 1.0.1 itself, plus Podium's rules."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge import Rouge

from evaluator.benchmarks.visual_rag.rouge import rouge1_recall, rouge1_recall_one, unigrams

ROUGE = Rouge(metrics=["rouge-1"])


def package(prediction: str, reference: str) -> float | None:
    """The package's ROUGE-1 recall, or None where it raises."""
    try:
        return float(ROUGE.get_scores(prediction, reference)[0]["rouge-1"]["r"])
    except ValueError:
        return None


def has_word(text: str) -> bool:
    """Podium: a usable text has a character that is neither whitespace nor '.'."""
    return any(not (c.isspace() or c == ".") for c in text)


# (prediction, reference, the package's recall, checked against the package below)
PAIRS = [
    ("The hindwings are red.", "The hindwings are red.", 1.0),
    ("the hindwings are red", "The Hindwings are Red", 0.25),  # case-sensitive: only "are"
    ("red, black and white", "red black and white", 0.75),  # "red," is not "red"
    ("red red red", "red", 1.0),
    ("red", "red red blue blue", 0.5),  # the reference's unigrams are a set
    ("Red. Black.", "Red and black. White.", 0.25),
    ("red", "red.", 1.0),  # a trailing dot leaves an empty piece: dropped
    ("red", "red. ", 0.5),  # ... but " " after it is the empty token: {"red", ""}
    ("red. ", "red. ", 1.0),
    ("red...", "red", 1.0),
    ("3.5 cm", "3.5 cm", 1.0),  # "3", "5", "cm"
    ("3,5 cm", "3.5 cm", 1 / 3),
    ("café crème", "Café crème", 0.5),
    ("naïve 日本語", "日本語 text", 0.5),
    ("  red   and  black ", "red and black", 1.0),
    ("red\tand\nblack", "red and black", 1.0),
    ("red\u00a0black", "red black", 1.0),  # no-break space is whitespace to str.split()
    ("orange-brown", "orange brown", 0.0),
    ("(red)", "red", 0.0),
    ("Red!", "Red", 0.0),
    ("a. b. c", "c. b. a", 1.0),
    ("..red..", "red", 1.0),
    ("yellow", "the wings are yellow with black spots", 1 / 7),
    ("no idea", "yellow", 0.0),
    ("I don't know.", "I don't know", 1.0),
    ("red.\n", "red.\n", 1.0),
    ("Its wings are red .", "Its wings are red", 1.0),  # "red ." -> "red" and an empty piece
    ("ＲＥＤ", "RED", 0.0),  # full-width letters are other characters
    ("red\r\nblack", "red black", 1.0),
    ("The wings: red; the body: black.", "wings red body black", 0.25),  # only "black"
    ("e.g. red", "e g red", 1.0),
    ("red. . black", "red black", 1.0),  # the prediction's "" token is not in the reference
    ("red", "red. . black", 1 / 3),  # {"red", "", "black"}
    ("10.000 legs", "10,000 legs", 0.5),
    ("wings\u2003red", "wings red", 1.0),  # em space
]


@pytest.mark.parametrize(("prediction", "reference", "expected"), PAIRS)
def test_fixed_pairs_match_the_package(prediction: str, reference: str, expected: float) -> None:
    assert package(prediction, reference) == pytest.approx(expected, abs=1e-12)
    assert rouge1_recall_one(prediction, reference) == pytest.approx(expected, abs=1e-12)
    assert rouge1_recall(prediction, [reference]) == pytest.approx(expected, abs=1e-12)


def test_maximum_over_references() -> None:
    refs = ["red and black", "black", "it is red"]
    # 1/3, 0, 1/3 for "red"; "red black" -> 2/3, 1, 1/3
    assert rouge1_recall("red", refs) == pytest.approx(1 / 3)
    assert rouge1_recall("red black", refs) == 1.0


def test_podium_rules_where_the_package_raises_or_has_no_word() -> None:
    # the package raises on "" and "..."; it scores " " as the lone empty token
    assert package("", "red") is None and package("...", "red") is None
    assert package("   ", "red. ") == 0.5 and package("red. ", " ") == 1.0
    assert rouge1_recall("", ["red"]) == 0.0
    assert rouge1_recall("...", ["red"]) == 0.0
    assert rouge1_recall("   ", ["red. "]) == 0.0  # a blank prediction earns nothing
    assert rouge1_recall(" . \n", ["red. "]) == 0.0
    assert rouge1_recall("red. ", [" "]) == 0.0  # a blank reference is skipped
    assert rouge1_recall("red", [""]) == 0.0
    assert rouge1_recall("red", ["", "...", " ", "red blue"]) == 0.5
    assert rouge1_recall("red", []) == 0.0
    assert rouge1_recall_one("red", "") is None and rouge1_recall_one("red", " . ") is None
    assert rouge1_recall_one("", "red") == 0.0 and rouge1_recall_one(" ", "red. ") == 0.0
    assert unigrams("red. ") == frozenset({"red", ""}) and unigrams(" . ") is None
    with pytest.raises(TypeError):
        rouge1_recall("red", "red")


PIECES = ["red", "Red", "red,", "wing", "wings", "black", "3", "é", "日本", ".", ",", " ", "  "]
PIECES += ["\t", "\n", ". "]
texts = st.lists(st.sampled_from(PIECES), max_size=10).map("".join)


@settings(max_examples=500, deadline=None)
@given(texts, texts)
def test_generated_pairs_match_the_package(prediction: str, reference: str) -> None:
    expected = package(prediction, reference)
    ours = rouge1_recall_one(prediction, reference)
    if not has_word(reference):
        assert ours is None  # skipped: the package raises or sees only the empty token
        assert rouge1_recall(prediction, [reference]) == 0.0
    elif not has_word(prediction):
        assert ours == 0.0
        assert rouge1_recall(prediction, [reference]) == 0.0
    else:
        assert expected is not None
        assert ours == pytest.approx(expected, abs=1e-9)
        assert rouge1_recall(prediction, [reference]) == pytest.approx(expected, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(texts, st.lists(texts, max_size=4))
def test_generated_reference_lists(prediction: str, references: list[str]) -> None:
    usable = [r for r in references if has_word(r)]
    scores = [package(prediction, r) for r in usable] if has_word(prediction) else []
    assert None not in scores
    expected = max((s for s in scores if s is not None), default=0.0)
    assert rouge1_recall(prediction, references) == pytest.approx(expected, abs=1e-9)
