"""Invariants of the CRAG-MM metrics on generated runs (hypothesis)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.benchmarks.crag_mm.metrics import COUNTINGS, count_turns, score_turns
from tests.evaluator.crag_mm_runs import conversation

N_BOOT = 200
PROPERTY_SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def runs(draw: st.DrawFn, codes: str = "CEHMX") -> list:
    """A run of 1 to 12 conversations; single-turn or 1 to 6 turns each."""
    multi_turn = draw(st.booleans())
    turns = []
    for n in range(draw(st.integers(1, 12))):
        length = draw(st.integers(1, 6)) if multi_turn else 1
        verdicts = "".join(draw(st.lists(st.sampled_from(codes), min_size=length, max_size=length)))
        labels = [
            {
                "domain": draw(st.sampled_from(["book", "food", "vehicle"])),
                **draw(st.sampled_from([{}, {"entity_popularity": "head"}])),
            }
            for _ in range(length)
        ]
        turns += conversation(f"s{n}", verdicts, is_ego=draw(st.booleans()), labels=labels)
    return turns


def blocks(scores: dict) -> list[dict]:
    found = [scores["all"], scores["ego"]]
    for values in scores["slices"].values():
        found += values.values()
    return [b for b in found if b["turns"] > 0]


@PROPERTY_SETTINGS
@given(turns=runs(), counting=st.sampled_from(COUNTINGS))
def test_rates_add_up(turns: list, counting: str) -> None:
    for block in blocks(score_turns(turns, counting=counting, n_boot=N_BOOT)):
        total = block["accuracy"] + block["missing"] + block["hallucination_rate"]
        assert total == pytest.approx(1.0)
        assert block["correct"] + block["miss"] + block["hallucination"] == block["turns"]
        if block["turns"] > 1:
            expected = block["accuracy"] - block["hallucination_rate"]
            assert block["truthfulness_turn"] == pytest.approx(expected)
        else:
            assert block["truthfulness_turn"] == 0.0


@PROPERTY_SETTINGS
@given(turns=runs(), counting=st.sampled_from(COUNTINGS))
def test_slices_partition_the_turns(turns: list, counting: str) -> None:
    scores = score_turns(turns, counting=counting, n_boot=N_BOOT)
    total = scores["all"]
    for values in scores["slices"].values():
        assert sum(b["turns"] for b in values.values()) == total["turns"]
        assert sum(b["correct"] for b in values.values()) == total["correct"]
        assert sum(b["miss"] for b in values.values()) == total["miss"]
        assert sum(b["conversations"] for b in values.values()) >= total["conversations"]
    assert scores["slices"]["is_ego"].get("true", {"turns": 0})["turns"] == scores["ego"]["turns"]


@PROPERTY_SETTINGS
@given(turns=runs(), counting=st.sampled_from(COUNTINGS))
def test_interval_contains_the_point_estimate(turns: list, counting: str) -> None:
    for block in blocks(score_turns(turns, counting=counting, n_boot=N_BOOT)):
        low, high = block["truthfulness_ci95"]
        assert low - 1e-9 <= block["truthfulness"] <= high + 1e-9


@PROPERTY_SETTINGS
@given(turns=runs(), seed=st.integers(0, 2**32 - 1), order=st.randoms(use_true_random=False))
def test_seeded_scores_are_deterministic_and_order_free(
    turns: list, seed: int, order: random.Random
) -> None:
    shuffled = list(turns)
    order.shuffle(shuffled)
    first = score_turns(turns, seed=seed, n_boot=N_BOOT)
    assert first == score_turns(shuffled, seed=seed, n_boot=N_BOOT)


@PROPERTY_SETTINGS
@given(turns=runs(codes="CEHMXU"), counting=st.sampled_from(COUNTINGS))
def test_rates_exist_exactly_when_every_turn_is_judged(turns: list, counting: str) -> None:
    scores = score_turns(turns, counting=counting, n_boot=N_BOOT)
    unjudged = sum(t.verdict.value == "unjudged" for t in turns)
    assert scores["unjudged"] == scores["all"]["unjudged"] == unjudged
    assert scores["complete"] is (unjudged == 0)
    assert (scores["all"]["truthfulness"] is None) is (unjudged > 0)


@PROPERTY_SETTINGS
@given(turns=runs(codes="CEHM"))
def test_kit_b_equals_paper_when_no_exact_match_says_i_dont_know(turns: list) -> None:
    paper = score_turns(turns, counting="paper", n_boot=N_BOOT)
    assert score_turns(turns, counting="kit-b", n_boot=N_BOOT) == paper | {"counting": "kit-b"}


@PROPERTY_SETTINGS
@given(turns=runs())
def test_early_stop_only_turns_correct_into_missing(turns: list) -> None:
    counted = count_turns(turns, "paper")
    assert not (counted.stopped_correct & ~counted.correct).any()
    assert not (counted.stopped_hallucinated & ~(~counted.correct & ~counted.miss)).any()
    kit_a = score_turns(turns, counting="kit-a", n_boot=N_BOOT)["all"]
    kit_b = score_turns(turns, counting="kit-b", n_boot=N_BOOT)["all"]
    assert kit_a["correct"] <= kit_b["correct"] and kit_a["miss"] >= kit_b["miss"]
    assert kit_a["conversation_score"] == kit_b["conversation_score"]
