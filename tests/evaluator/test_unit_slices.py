"""Which slice value each unit belongs to (``Scoring.unit_slices``; CRAG-MM's
``run_unit_slices``): a unit per turn in a single-turn run, per conversation in a multi-turn
one, where a conversation whose turns have several values of a dimension is in none; a slice
value's units have the slice's score as their mean."""

from __future__ import annotations

import numpy as np
import pytest

from evaluator.benchmarks import get_benchmark
from evaluator.benchmarks.crag_mm.compare import run_unit_slices, run_units
from evaluator.benchmarks.crag_mm.metrics import score_turns

from .crag_mm_runs import conversation, graded_turn


def test_a_single_turn_runs_units_are_its_turns_with_their_labels():
    graded = [
        graded_turn("b", 0, "C", is_ego=True, labels={"domain": "food"}),
        graded_turn("a", 0, "H", labels={"domain": "plants"}),
        graded_turn("c", 0, "M"),
    ]
    # units in the split's order: by session id
    assert run_units(graded).tolist() == [-1.0, 1.0, 0.0]
    assert run_unit_slices(graded) == {
        "domain": ["plants", "food", "(unlabelled)"],
        "is_ego": ["false", "true", "false"],
        "turn": ["0", "0", "0"],
    }


def test_a_conversation_is_in_a_value_only_when_all_its_turns_are():
    food, plants = {"domain": "food"}, {"domain": "plants"}
    graded = [
        *conversation("s1", "CC", labels=[food, food]),
        *conversation("s2", "CH", labels=[food, plants]),
        *conversation("s3", "HM", labels=[plants, plants]),
    ]
    found = run_unit_slices(graded)
    assert found["domain"] == ["food", None, "plants"]
    assert found["turn"] == [None, None, None]  # every conversation has turns 0 and 1
    assert found["is_ego"] == ["false", "false", "false"]


def test_a_slice_values_units_average_to_its_score():
    graded = []
    for s in range(6):
        labels = {"domain": "food" if s < 4 else "plants"}
        graded.append(graded_turn(f"s{s}", 0, "CHMCHC"[s], labels=labels))
    units, found = run_units(graded), run_unit_slices(graded)
    scores = score_turns(graded)
    for value in ("food", "plants"):
        mine = np.array([v == value for v in found["domain"]])
        assert units[mine].mean() == pytest.approx(
            scores["slices"]["domain"][value]["truthfulness"]
        )


def test_the_seam_says_it_for_crag_mm_and_nothing_by_default():
    graded = [graded_turn("a", 0, "C"), graded_turn("b", 0, "H")]
    assert get_benchmark("crag-mm").unit_slices(graded)["turn"] == ["0", "0"]
    assert get_benchmark("visual-rag").unit_slices([]) == {}
    assert run_unit_slices([]) == {}
