"""Judge audits' arithmetic (evaluator.judge_audit): the stratified sample and the agreement
figures, on confusion matrices computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from evaluator.benchmarks import get_benchmark
from evaluator.judge_audit import agreement, allocate, confusion, draw, kappa

MENU = ("correct", "missing", "hallucinated")


def pairs(matrix: list[list[int]], classes=MENU) -> tuple[list[str], list[str]]:
    """The (judge, people) lists behind a confusion matrix (rows people, columns judge)."""
    judge, people = [], []
    for r, row in enumerate(matrix):
        for c, n in enumerate(row):
            judge += [classes[c]] * n
            people += [classes[r]] * n
    return judge, people


# rows: people's correct / missing / hallucinated; columns: the judge's
THREE = [[40, 0, 10], [0, 20, 0], [5, 0, 25]]


def test_agreement_kappa_and_per_class_figures_match_the_hand_computed_ones():
    found = agreement(*pairs(THREE), MENU)
    assert found["n"] == 100
    assert found["confusion"]["counts"] == THREE
    # p_o = 85/100; p_e = (50*45 + 20*20 + 30*35) / 100^2 = 0.37; kappa = 0.48 / 0.63
    assert found["agreement"]["value"] == pytest.approx(0.85)
    assert found["kappa"]["value"] == pytest.approx(0.48 / 0.63)
    correct, hallucinated = found["classes"]["correct"], found["classes"]["hallucinated"]
    assert correct["precision"]["value"] == pytest.approx(40 / 45)
    assert correct["precision"]["n"] == 45  # what the judge called correct
    assert correct["recall"]["value"] == pytest.approx(40 / 50)
    assert correct["recall"]["n"] == 50  # what people called correct
    assert correct["f1"]["value"] == pytest.approx(80 / 95)
    assert correct["f1"]["n"] == 55  # either side said correct
    assert hallucinated["precision"]["value"] == pytest.approx(25 / 35)
    assert hallucinated["recall"]["value"] == pytest.approx(25 / 30)
    assert hallucinated["f1"]["value"] == pytest.approx(50 / 65)
    assert found["classes"]["missing"]["f1"]["value"] == 1.0


def test_intervals_are_wilson_for_shares_and_bootstrap_for_kappa_and_f1():
    found = agreement(*pairs(THREE), MENU, seed=3)
    # Wilson, 85 of 100: centre (0.85 + z²/200) / (1 + z²/100), by hand
    assert found["agreement"]["ci95"] == pytest.approx([0.7672, 0.9069], abs=2e-4)
    low, high = found["kappa"]["ci95"]
    assert low < found["kappa"]["value"] < high
    assert low > 0.6 and high < 0.9
    f1_low, f1_high = found["classes"]["correct"]["f1"]["ci95"]
    assert f1_low < 80 / 95 < f1_high
    assert agreement(*pairs(THREE), MENU, seed=3) == found  # seeded


def test_kappa_of_a_two_by_two_matrix_and_where_it_is_undefined():
    # p_o = 35/50 = 0.7; p_e = (25*30 + 25*20) / 50^2 = 0.5; kappa = 0.4
    assert kappa(np.array([[20, 5], [10, 15]])) == pytest.approx(0.4)
    # both sides always say the same one class: chance agreement is 1, kappa undefined
    one = agreement(["correct"] * 4, ["correct"] * 4, MENU)
    assert one["agreement"]["value"] == 1.0
    assert one["kappa"] == {"value": None, "ci95": None, "n": 4}
    # perfect disagreement on two classes
    assert kappa(np.array([[0, 5], [5, 0]])) == pytest.approx(-1.0)


def test_no_labels_give_no_figures_and_unknown_classes_are_named():
    empty = agreement([], [], MENU)
    assert empty["n"] == 0
    assert empty["agreement"] == {"value": None, "ci95": None, "n": 0}
    assert empty["classes"]["correct"]["precision"]["value"] is None
    with pytest.raises(ValueError, match="'wrong' is not one of the classes"):
        confusion(["correct"], ["wrong"], MENU)
    with pytest.raises(ValueError, match="2 verdicts against 1 labels"):
        confusion(["correct", "missing"], ["correct"], MENU)


def test_allocation_is_proportional_with_every_stratum_seen():
    # one each, then 17 by (size - 1): 13.85, 2.45, 0.70; the largest remainders (a, c) +1
    assert allocate({"a": 80, "b": 15, "c": 5}, 20) == {"a": 15, "b": 3, "c": 2}
    assert allocate({"a": 3, "b": 2, "empty": 0}, 10) == {"a": 3, "b": 2}  # all there is
    assert allocate({"a": 50, "b": 30, "c": 2}, 2) == {"a": 1, "b": 1}  # the largest first
    assert sum(allocate({k: 7 * k + 1 for k in range(9)}, 101).values()) == 101
    with pytest.raises(ValueError, match="at least 1 item"):
        allocate({"a": 3}, 0)


def test_a_draw_keeps_the_allocation_and_shuffles_the_strata_together():
    sizes = (("correct", "food", 120), ("hallucinated", "food", 40),
             ("correct", "plant", 30), ("missing", "plant", 10))  # fmt: skip
    strata = {(verdict, d): [f"{verdict}-{d}-{i}" for i in range(n)] for verdict, d, n in sizes}
    sample = draw(strata, 50, seed=7)
    assert len(sample) == len({item for _, item in sample}) == 50
    counts = {key: sum(1 for k, _ in sample if k == key) for key in strata}
    assert counts == allocate({k: len(v) for k, v in strata.items()}, 50)
    assert all(item.startswith(f"{k[0]}-{k[1]}-") for k, item in sample)
    order = [key for key, _ in sample]
    assert order != sorted(order, key=str)  # not grouped by stratum
    assert draw(strata, 50, seed=7) == sample
    assert draw(strata, 50, seed=8) != sample


@pytest.mark.parametrize(
    ("benchmark", "menu"),
    [
        ("crag-mm", ("correct", "missing", "hallucinated")),
        ("visual-rag", ("1", "0.5", "0", "no_answer")),
        ("mrag-suite", ("correct", "incorrect", "no_answer")),
        ("m2rag", ()),  # a number per answer: no menu
    ],
)
def test_each_benchmarks_verdict_menu_comes_from_its_rubric(benchmark, menu):
    found = get_benchmark(benchmark)
    assert found.verdict_menu() == menu
    assert set(found.rubric.menu()) <= set(menu) | {"unjudged"}
