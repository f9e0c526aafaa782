"""MRAG-Suite metrics: hand-computed cases for every metric, RAGChecker's two identities as
properties, and each guarded edge case (no claims, no items, label precedence)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.benchmarks.mrag_suite.answers import exact_match, normalise, rouge_l
from evaluator.benchmarks.mrag_suite.ragchecker import (
    LABELS,
    ClaimChecks,
    answer_profile,
    cross_modal,
    diagnose,
    merge_labels,
)

E, N, C = "Entailment", "Neutral", "Contradiction"
# 4 response claims, 2 reference claims, a passage t0 and an image i0 (module doc's example)
CHECKS = ClaimChecks(
    response_in_reference=(E, N, C, E),
    reference_in_response=(E, N),
    items=("text", "image"),
    response_in_items=((E, E, N, N), (N, N, E, C)),
    reference_in_items=((E, N), (N, N)),
)


def test_exact_match_after_squad_normalisation() -> None:
    assert normalise("The  Eiffel Tower!") == "eiffel tower"
    assert exact_match("An apple.", "apple") == 1.0
    assert exact_match("12 million", "12 millions") == 0.0
    assert exact_match("the", "a") == 1.0  # both normalise to nothing


def test_rouge_l_is_the_f_measure_of_the_longest_common_subsequence() -> None:
    # LCS "the cat on the mat" = 5 of 6 tokens each side: P = R = F = 5/6
    assert rouge_l("the cat sat on the mat", "the cat lay on the mat") == pytest.approx(5 / 6)
    # LCS 2 ("a c"): P = 2/3, R = 2/2, F = 2PR/(P+R) = 0.8; no stemming: "cats" != "cat"
    assert rouge_l("a b c", "a c") == pytest.approx(0.8)
    assert rouge_l("cats", "cat") == 0.0
    assert rouge_l("", "anything") == 0.0


def test_every_ragchecker_metric_on_a_hand_computed_answer() -> None:
    assert diagnose(CHECKS) == {
        "precision": 0.5,
        "recall": 0.5,
        "f1": 0.5,
        "claim_recall": 0.5,
        "context_precision": 0.5,
        "context_utilization": 1.0,
        "faithfulness": 0.75,
        "hallucination": 0.0,
        "self_knowledge": 0.25,
        "noise_sensitivity_relevant": 0.25,
        "noise_sensitivity_irrelevant": 0.25,
        "items_used": 1.0,
    }


def test_per_modality_metrics_count_only_that_modalitys_items() -> None:
    image = diagnose(CHECKS, "image")
    assert (image["claim_recall"], image["context_precision"], image["context_utilization"]) == (
        0.0,
        0.0,
        0.0,
    )
    assert (image["faithfulness"], image["hallucination"], image["self_knowledge"]) == (
        0.25,
        0.25,
        0.5,
    )
    assert (image["noise_sensitivity_relevant"], image["noise_sensitivity_irrelevant"]) == (0, 0.25)
    text = diagnose(CHECKS, "text")
    assert (text["context_precision"], text["faithfulness"], text["hallucination"]) == (
        1.0,
        0.5,
        0.25,
    )
    assert (text["noise_sensitivity_relevant"], text["noise_sensitivity_irrelevant"]) == (0.25, 0)
    profile = answer_profile(CHECKS)
    assert profile["faithfulness_image"] == 0.25 and profile["faithfulness_text"] == 0.5


def test_podiums_cross_modal_figures() -> None:
    assert cross_modal(CHECKS) == {
        "image_support": 0.25,
        "text_support": 0.5,
        "contradicted": 0.25,  # r3: contradicted by the image, entailed by nothing
        "modality_gap": -0.25,
    }


def test_labels_merge_entailment_over_contradiction_over_neutral() -> None:
    assert merge_labels([N, C, E]) == E
    assert merge_labels([N, C]) == C
    assert merge_labels([N, N]) == N
    assert merge_labels([]) == N


def checks(n_r: int, n_g: int, kinds: tuple[str, ...]) -> ClaimChecks:
    return ClaimChecks(
        response_in_reference=(E,) * n_r,
        reference_in_response=(E,) * n_g,
        items=kinds,
        response_in_items=tuple((E,) * n_r for _ in kinds),
        reference_in_items=tuple((E,) * n_g for _ in kinds),
    )


@pytest.mark.parametrize(
    ("case", "zero"),
    [
        (checks(0, 2, ("text",)), ("precision", "f1", "faithfulness", "self_knowledge",
                                   "hallucination", "items_used")),
        (checks(2, 0, ("text",)), ("recall", "f1", "claim_recall", "context_precision",
                                   "context_utilization", "noise_sensitivity_relevant")),
        (checks(2, 2, ()), ("claim_recall", "context_precision", "context_utilization",
                            "faithfulness", "items_used")),
    ],
)  # fmt: skip
def test_a_count_of_zero_makes_its_metrics_zero_never_nan(
    case: ClaimChecks, zero: tuple[str, ...]
) -> None:
    profile = answer_profile(case)
    assert all(not math.isnan(value) for value in profile.values())
    assert all(profile[name] == 0.0 for name in zero), profile


def test_no_retrieved_item_leaves_supported_claims_as_self_knowledge() -> None:
    metrics = diagnose(checks(2, 2, ()))
    assert metrics["self_knowledge"] == 1.0 and metrics["precision"] == 1.0


@st.composite
def labelled(draw: st.DrawFn, least: int = 1) -> ClaimChecks:
    n_r, n_g = draw(st.integers(least, 6)), draw(st.integers(least, 6))
    kinds = tuple(draw(st.lists(st.sampled_from(["text", "image"]), min_size=least, max_size=5)))
    label = st.sampled_from(LABELS)
    row = lambda n: tuple(draw(st.lists(label, min_size=n, max_size=n)))  # noqa: E731
    return ClaimChecks(row(n_r), row(n_g), kinds, tuple(row(n_r) for _ in kinds),
                       tuple(row(n_g) for _ in kinds))  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(labelled())
def test_the_two_identities_hold_when_every_count_is_non_zero(case: ClaimChecks) -> None:
    m = diagnose(case)
    assert m["faithfulness"] + m["hallucination"] + m["self_knowledge"] == pytest.approx(1.0)
    total = m["precision"] + m["noise_sensitivity_relevant"]
    total += m["noise_sensitivity_irrelevant"] + m["hallucination"]
    assert total == pytest.approx(1.0)


@settings(max_examples=150, deadline=None)
@given(labelled(least=0))
def test_every_metric_is_a_rate_whatever_the_counts(case: ClaimChecks) -> None:
    for name, value in answer_profile(case).items():
        low = -1.0 if name == "modality_gap" else 0.0
        assert low <= value <= 1.0, name
