"""CRAG-MM metrics: hand-computed expectations for every rule, and parity with the kits."""

from __future__ import annotations

import dataclasses
import json

import pytest

from evaluator.benchmarks.crag_mm.metrics import (
    COUNTINGS,
    RATE_KEYS,
    UNLABELLED,
    official_scores,
    score_turns,
)
from evaluator.benchmarks.crag_mm.records import Verdict
from evaluator.records import EvaluatorError
from tests.evaluator.crag_mm_runs import (
    PARITY_DIR,
    conversation,
    graded_turn,
    load_parity_fixture,
    run,
)


def test_single_turn_counts_and_rates() -> None:
    scores = score_turns(run("C", "E", "C", "M", "H"), n_boot=200)
    block = scores["all"]
    assert scores["multi_turn"] is False and scores["complete"] is True
    assert {k: block[k] for k in ("turns", "conversations", "correct", "correct_exact")} == {
        "turns": 5,
        "conversations": 5,
        "correct": 3,
        "correct_exact": 1,
    }
    assert (block["miss"], block["hallucination"], block["unjudged"]) == (1, 1, 0)
    assert block["accuracy"] == pytest.approx(0.6)
    assert block["exact_match"] == pytest.approx(0.2)
    assert block["missing"] == pytest.approx(0.2)
    assert block["hallucination_rate"] == pytest.approx(0.2)
    # (2 * 3 + 1) / 5 - 1
    assert block["truthfulness_turn"] == pytest.approx(0.4)
    assert block["truthfulness"] == block["truthfulness_turn"]
    assert block["early_stop_rate"] == 0.0
    assert block["avg_successful_turns"] == pytest.approx(0.6)
    low, high = block["truthfulness_ci95"]
    assert -1.0 <= low < 0.4 < high <= 1.0


def test_one_turn_has_truthfulness_zero_as_the_official_code() -> None:
    block = score_turns(run("C"))["all"]
    assert block["accuracy"] == 1.0
    assert block["truthfulness_turn"] == 0.0
    assert block["truthfulness"] == 0.0
    assert block["truthfulness_ci95"] == [0.0, 0.0]


def test_slice_with_a_single_turn_follows_the_n_le_1_rule() -> None:
    turns = [
        graded_turn("a", 0, "C", labels={"domain": "book"}),
        graded_turn("b", 0, "C", labels={"domain": "food"}),
        graded_turn("c", 0, "H", labels={"domain": "food"}),
    ]
    slices = score_turns(turns)["slices"]["domain"]
    assert slices["book"]["truthfulness"] == 0.0
    assert slices["food"]["truthfulness"] == 0.0  # (2 * 1 + 0) / 2 - 1
    assert slices["food"]["accuracy"] == 0.5


def test_early_stop_at_turn_one_zeroes_later_correct_turns() -> None:
    # H H C C: turns 0 and 1 both wrong -> turns 2 and 3 become missing.
    scores = {c: score_turns(run("HHCC", "CCC"), counting=c) for c in COUNTINGS}
    stopped = conversation("x", "HHCC")
    for counting in ("paper", "kit-b"):
        block = score_turns(stopped + run("CC"), counting=counting)["all"]
        assert (block["correct"], block["miss"], block["hallucination"]) == (4, 0, 2)
    block = score_turns(stopped + run("CC"), counting="kit-a")["all"]
    assert (block["correct"], block["miss"], block["hallucination"]) == (2, 2, 2)
    for counting, result in scores.items():
        # conversation scores: H H M M -> 0 - 2/4; C C C -> 1
        assert result["all"]["truthfulness"] == pytest.approx(0.25), counting
        assert result["all"]["early_stop_rate"] == 0.5
        assert result["all"]["avg_successful_turns"] == pytest.approx(1.5)  # (0 + 3) / 2


def test_missing_then_missing_stops_the_conversation() -> None:
    block = score_turns(run("MMC", "CC"))["all"]
    # M M M -> 0; C C -> 1
    assert block["truthfulness"] == pytest.approx(0.5)
    assert block["early_stop_rate"] == 0.5
    assert block["avg_successful_turns"] == pytest.approx(1.0)


def test_stop_on_the_last_turn_is_not_an_early_stop() -> None:
    block = score_turns(run("CHH", "HCHC"))["all"]
    # C H H -> 1/3 - 2/3; H C H C never stops -> 0
    assert block["truthfulness"] == pytest.approx(-1 / 6)
    assert block["early_stop_rate"] == 0.0
    assert block["conversation_score"] == block["truthfulness"]


def test_stop_position_is_the_first_pair_of_wrong_turns() -> None:
    # C H M H C: positions 1, 2 both not correct -> 3 and 4 become missing: 1/5 - 1/5.
    block = score_turns(run("CHMHC", "ECHMMC"))["all"]
    # E C H M M C: stop at 3 -> C at 5 zeroed: 2/6 - 1/6.
    assert block["truthfulness"] == pytest.approx((0.0 + 1 / 6) / 2)
    assert block["early_stop_rate"] == 1.0
    assert block["avg_successful_turns"] == pytest.approx(1.5)


def test_exact_match_saying_i_dont_know_differs_between_paper_and_kits() -> None:
    turns = run("XHC", "CC")
    paper = score_turns(turns, counting="paper")["all"]
    kit_a = score_turns(turns, counting="kit-a")["all"]
    kit_b = score_turns(turns, counting="kit-b")["all"]
    # Paper: X is missing; M H -> stop, C zeroed: 0 - 1/3.
    assert (paper["correct"], paper["miss"], paper["hallucination"]) == (3, 1, 1)
    assert paper["correct_exact"] == 0
    assert paper["truthfulness"] == pytest.approx((-1 / 3 + 1) / 2)
    # Kits: X is correct and missing at once; no stop; hallucination = 5 - 4 - 1 = 0.
    for kit in (kit_a, kit_b):
        assert (kit["correct"], kit["miss"], kit["hallucination"]) == (4, 1, 0)
        assert kit["correct_exact"] == 1
        assert kit["truthfulness"] == pytest.approx((1 / 3 + 1) / 2)
        assert kit["truthfulness_turn"] == pytest.approx((2 * 4 + 1) / 5 - 1)


def test_early_stop_is_decided_on_the_whole_conversation_before_slicing() -> None:
    labels = [{"domain": "book"}, {"domain": "book"}, {"domain": "food"}, {"domain": "food"}]
    turns = conversation("s", "HHCC", labels=labels) + conversation(
        "t", "CC", labels=[{"domain": "food"}] * 2
    )
    food = score_turns(turns)["slices"]["domain"]["food"]
    assert (food["turns"], food["conversations"], food["correct"]) == (4, 2, 4)
    # s's food turns were stopped (missing: score 0); t scores 1.
    assert food["truthfulness"] == pytest.approx(0.5)
    assert food["avg_successful_turns"] == pytest.approx(1.0)
    assert food["early_stop_rate"] == 0.5


def test_slices_cover_labels_ego_and_turn_index() -> None:
    turns = conversation("a", "CH", is_ego=True, labels=[{"domain": "book"}, {}])
    turns += conversation("b", "CCC", labels=[{"domain": "food", "entity_popularity": "tail"}] * 3)
    scores = score_turns(turns)
    slices = scores["slices"]
    assert set(slices) == {"domain", "entity_popularity", "is_ego", "turn"}
    assert {v: b["turns"] for v, b in slices["domain"].items()} == {
        "book": 1,
        "food": 3,
        UNLABELLED: 1,
    }
    assert {v: b["turns"] for v, b in slices["entity_popularity"].items()} == {
        "tail": 3,
        UNLABELLED: 2,
    }
    assert {v: b["turns"] for v, b in slices["is_ego"].items()} == {"false": 3, "true": 2}
    assert list(slices["turn"]) == ["0", "1", "2"]
    assert slices["turn"]["2"]["conversations"] == 1
    assert scores["ego"]["turns"] == 2
    assert scores["ego"]["truthfulness"] == pytest.approx(0.0)  # 1/2 - 1/2


def test_turn_slice_orders_turn_indices_numerically() -> None:
    turns = conversation("long", "C" * 12)
    assert list(score_turns(turns, n_boot=50)["slices"]["turn"])[:3] == ["0", "1", "2"]
    assert list(score_turns(turns, n_boot=50)["slices"]["turn"])[-2:] == ["10", "11"]


def test_empty_ego_block_has_counts_and_no_rates() -> None:
    ego = score_turns(run("CH", "HH"))["ego"]
    assert ego["turns"] == 0 and ego["conversations"] == 0
    assert all(ego[rate] is None for rate in RATE_KEYS)


@pytest.mark.parametrize("counting", ["paper", "kit-a", "kit-b"])
def test_unjudged_turns_make_the_run_incomplete(counting: str) -> None:
    scores = score_turns(run("HHU", "CUM", "C"), counting=counting)
    assert scores["complete"] is False and scores["unjudged"] == 2
    block = scores["all"]
    # Raw counts (early stop needs every verdict); unjudged never counted as hallucinated.
    assert (block["correct"], block["miss"], block["hallucination"], block["unjudged"]) == (
        2,
        1,
        2,
        2,
    )
    for name in ("all", "ego"):
        assert all(scores[name][rate] is None for rate in RATE_KEYS)
    for values in scores["slices"].values():
        assert all(b[rate] is None for b in values.values() for rate in RATE_KEYS)
    with pytest.raises(EvaluatorError, match="complete"):
        official_scores(block)


def test_seed_makes_intervals_reproducible() -> None:
    turns = run("CHM", "HHC", "CCC", "MCH", "CHC", "HMM")
    first = score_turns(turns, seed=3, n_boot=300)
    assert first == score_turns(list(reversed(turns)), seed=3, n_boot=300)
    assert (
        first["all"]["truthfulness_ci95"]
        != score_turns(turns, seed=4, n_boot=300)["all"]["truthfulness_ci95"]
    )


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        ([], "no graded turns"),
        (["not a turn"], "expected a GradedTurn"),
        (run("CC") + run("C"), "duplicate"),
        (
            [dataclasses.replace(graded_turn("a", 0, "C"), is_miss=True)],
            "is_miss=True but verdict=correct",
        ),
        (
            [dataclasses.replace(graded_turn("a", 0, "H"), is_exact_match=True)],
            "is_exact_match=True but verdict=hallucinated",
        ),
        (
            [graded_turn("a", 0, "C"), dataclasses.replace(graded_turn("a", 1, "C"), turn_idx=0)],
            "duplicate",
        ),
        ([graded_turn("a", 0, "C", is_ego=True), graded_turn("a", 1, "C")], "is_ego differs"),
        ([graded_turn("a", 0, "C", labels={"turn": "x"})], "clashes with a built-in slice"),
        ([graded_turn("a", 0, "C", labels={"domain": None})], "not a string pair"),
        ([dataclasses.replace(graded_turn("a", 0, "C"), session_id="")], "session_id"),
        ([dataclasses.replace(graded_turn("a", 0, "C"), turn_idx=-1)], "turn_idx"),
        ([dataclasses.replace(graded_turn("a", 0, "C"), verdict="correct")], "verdict"),
    ],
)
def test_bad_input_is_named(turns: list, message: str) -> None:
    with pytest.raises(EvaluatorError, match=message):
        score_turns(turns)


def test_unknown_counting_lists_the_choices() -> None:
    with pytest.raises(EvaluatorError, match="paper, kit-a, kit-b"):
        score_turns(run("C"), counting="kit-c")


@pytest.mark.parametrize(("seed", "n_boot"), [(-1, 100), (0, 0), (0, 2.5)])
def test_bad_bootstrap_settings(seed: int, n_boot: int) -> None:
    with pytest.raises(EvaluatorError, match="seed" if seed < 0 else "n_boot"):
        score_turns(run("C", "H"), seed=seed, n_boot=n_boot)


def test_error_names_the_turn() -> None:
    bad = dataclasses.replace(graded_turn("conv-7", 2, "M"), verdict=Verdict.HALLUCINATED)
    with pytest.raises(EvaluatorError, match="conv-7/conv-7-2"):
        score_turns([bad])


EXPECTED = json.loads((PARITY_DIR / "expected.json").read_text())


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
@pytest.mark.parametrize("counting", ["kit-a", "kit-b"])
def test_parity_with_the_official_kits_to_the_last_digit(fixture: str, counting: str) -> None:
    scores = score_turns(load_parity_fixture(fixture), counting=counting, n_boot=100)
    for block in ("all", "ego"):
        assert official_scores(scores[block]) == EXPECTED[fixture][counting][block], block


def test_parity_fixtures_show_where_the_countings_differ() -> None:
    turns = load_parity_fixture("edge_cases")
    paper, kit_a, kit_b = (score_turns(turns, counting=c)["all"] for c in COUNTINGS)
    # kit-a counts after early stop: fewer correct, more missing than kit-b's raw counts.
    assert (kit_a["correct"], kit_a["miss"]) == (11, 13)
    assert (kit_b["correct"], kit_b["miss"]) == (16, 7)
    # paper counts Podium verdicts: the exact match that says "i don't know" is missing only.
    assert (paper["correct"], paper["miss"], paper["hallucination"]) == (15, 7, 12)
    assert kit_a["conversation_score"] == kit_b["conversation_score"]
    # Paper conversation scores (hand-computed per conversation, see the fixture):
    # s01 1, s02 -1/2, s03 0, s04 0, s05 0, s06 -1/3, s07 -1, s08 -1/3, s09 -1/2, s10 1/6
    assert paper["truthfulness"] == pytest.approx(-1.5 / 10)
    assert paper["truthfulness"] != kit_b["conversation_score"]
