"""MRAG-Suite metrics: hand-computed cases for every metric, RAGChecker's two identities as
properties, and each guarded edge case (no claims, no items, label precedence)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.benchmarks.mrag_suite.answers import exact_match, normalise, rouge_l
from evaluator.benchmarks.mrag_suite.ragchecker import (
    ITEM_METRICS,
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
                                   "context_utilization", "noise_sensitivity_relevant",
                                   "noise_sensitivity_irrelevant")),
        (checks(2, 2, ()), ("claim_recall", "context_precision", "context_utilization",
                            "faithfulness", "hallucination", "self_knowledge",
                            "noise_sensitivity_relevant", "noise_sensitivity_irrelevant",
                            "items_used")),
    ],
)  # fmt: skip
def test_a_count_of_zero_makes_its_metrics_zero_never_nan(
    case: ClaimChecks, zero: tuple[str, ...]
) -> None:
    profile = answer_profile(case)
    assert all(not math.isnan(value) for value in profile.values())
    assert all(profile[name] == 0.0 for name in zero), profile


# 4 response claims (r0, r3 entailed by the reference), 2 reference claims, one passage that
# entails r0 and g0; no image retrieved
TEXT_ONLY = ClaimChecks(
    response_in_reference=(E, N, N, E),
    reference_in_response=(E, N),
    items=("text",),
    response_in_items=((E, N, N, N),),
    reference_in_items=((E, N),),
)


def test_an_answer_over_an_empty_retrieval_hallucinates_nothing_as_ragchecker_computes() -> None:
    # RAGChecker's evaluate_unfaithfulness computes hallucination and self_knowledge only when
    # len(answer2response) > 0 and len(retrieved2response[0]) > 0, else 0 for both; faithfulness
    # likewise. Over no item at all: 0, 0, 0 (unguarded: r1, r2 would be hallucinated, 2/4,
    # and r0, r3 self-knowledge, 2/4)
    empty = diagnose(checks(2, 2, ()))
    assert (empty["hallucination"], empty["self_knowledge"], empty["faithfulness"]) == (0, 0, 0)
    assert empty["precision"] == 1.0  # the answer metrics need no item
    # per modality (MM-RAGChecker): the image items are none, so the same guard holds there,
    # while the passage's figures are RAGChecker's over C = [t0]: unfaithful = r1, r2, r3;
    # hallucination = unfaithful and not by the reference = r1, r2 -> 2/4; self_knowledge = r3
    # -> 1/4; faithfulness = r0 -> 1/4 (and 1/4 + 2/4 + 1/4 = 1)
    image, text = diagnose(TEXT_ONLY, "image"), diagnose(TEXT_ONLY, "text")
    assert all(value == 0.0 for name, value in image.items() if name in ITEM_METRICS), image
    assert (text["faithfulness"], text["hallucination"]) == (0.25, 0.5)
    assert text["self_knowledge"] == 0.25
    profile = answer_profile(TEXT_ONLY)
    assert (profile["hallucination_image"], profile["self_knowledge_image"]) == (0.0, 0.0)
    assert (profile["hallucination_text"], profile["self_knowledge_text"]) == (0.5, 0.25)


def test_no_reference_claim_makes_both_noise_sensitivities_zero_as_ragchecker_computes() -> None:
    # 3 response claims (r2 entailed by the reference), no reference claim, a passage entailing
    # r0 and an image entailing r1. RAGChecker's evaluate_noise_sensitivity needs
    # len(retrieved2answer) > 0 (some reference claim), else 0 and 0 (unguarded: no item is
    # relevant, r0 and r1 are entailed by irrelevant items only and not by the reference:
    # 2/3). evaluate_unfaithfulness has |R| and |C|: unfaithful = r2, entailed by the
    # reference, so hallucination 0 and self_knowledge 1/3; faithfulness = r0, r1 -> 2/3;
    # precision = r2 -> 1/3; recall, f1, claim_recall, context_precision and utilization 0
    # (no reference claim); items_used = both items entail a response claim -> 2/2
    case = ClaimChecks((N, N, E), (), ("text", "image"), ((E, N, N), (N, E, N)), ((), ()))
    assert diagnose(case) == {
        "precision": pytest.approx(1 / 3),
        "recall": 0.0,
        "f1": 0.0,
        "claim_recall": 0.0,
        "context_precision": 0.0,
        "context_utilization": 0.0,
        "faithfulness": pytest.approx(2 / 3),
        "hallucination": 0.0,
        "self_knowledge": pytest.approx(1 / 3),
        "noise_sensitivity_relevant": 0.0,
        "noise_sensitivity_irrelevant": 0.0,
        "items_used": 1.0,
    }
    text = diagnose(case, "text")  # the passage alone: r0 faithful, r1 unfaithful, not by ref
    assert text["hallucination"] == pytest.approx(1 / 3)
    assert text["noise_sensitivity_irrelevant"] == 0.0


def test_an_item_retrieved_twice_counts_twice() -> None:
    # C = [t0, t0 again, t1]: t0 entails g0 and r0, t1 entails r1 only. RAGChecker's
    # context_precision = mean over C of "entails some reference claim" = (1 + 1 + 0) / 3;
    # items_used (Podium's, the same counting) = (1 + 1 + 1) / 3; once each it would be 1/2
    twice = ClaimChecks(
        response_in_reference=(E, N),
        reference_in_response=(E, N),
        items=("text", "text", "text"),
        response_in_items=((E, N), (E, N), (N, E)),
        reference_in_items=((E, N), (E, N), (N, N)),
    )
    metrics = diagnose(twice)
    assert metrics["context_precision"] == pytest.approx(2 / 3) and metrics["items_used"] == 1.0
    # the claim-side figures do not move: claim_recall = g0 -> 1/2; faithfulness = 2/2;
    # noise_sensitivity_irrelevant = r1 (not by the reference, only by t1, irrelevant) -> 1/2
    assert (metrics["claim_recall"], metrics["faithfulness"]) == (0.5, 1.0)
    assert metrics["noise_sensitivity_irrelevant"] == 0.5


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
