"""Which slice value each unit belongs to (``Scoring.unit_slices``). CRAG-MM's
``run_unit_slices``: a unit per turn in a single-turn run, per conversation in a multi-turn
one, where a conversation whose turns have several values of a dimension is in none. M2RAG,
MRAG-Suite, Visual-RAG (``evaluator.seam.unit_slices``): a unit per graded item, its labels.
Either way a slice value's units have the slice's score as their mean."""

from __future__ import annotations

import numpy as np
import pytest

from evaluator.benchmarks import get_benchmark
from evaluator.benchmarks.crag_mm.compare import run_unit_slices, run_units
from evaluator.benchmarks.crag_mm.metrics import score_turns
from evaluator.benchmarks.m2rag.record import FAILED
from evaluator.benchmarks.m2rag.record import GradedAnswer as M2Answer
from evaluator.benchmarks.mrag_suite.grading import GradedAnswer as MragAnswer
from evaluator.benchmarks.mrag_suite.ragchecker import PROFILE
from evaluator.benchmarks.visual_rag.grading import GradedQuery
from evaluator.judges.rubric import UNJUDGED
from evaluator.seam import Score
from evaluator.seam.unit_slices import item_unit_slices, keyed_unit_slices

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


def test_the_seam_says_it_for_crag_mm_and_nothing_without_units():
    graded = [graded_turn("a", 0, "C"), graded_turn("b", 0, "H")]
    assert get_benchmark("crag-mm").unit_slices(graded)["turn"] == ["0", "0"]
    for name in ("visual-rag", "mrag-suite", "m2rag"):
        assert get_benchmark(name).unit_slices([]) == {}
    assert run_unit_slices([]) == {}
    # an unjudged turn: no units, so no unit slices (scores would refuse slices of no units)
    unjudged = [*graded, graded_turn("c", 0, "U")]
    assert run_units(unjudged) is None
    assert get_benchmark("crag-mm").unit_slices(unjudged) == {}


def primaries(score: Score, primary: str) -> dict[tuple[str, str], float]:
    """Each stored row's primary metric, by (dimension, value): what the slice table shows."""
    return {(b.dimension, b.value): b.metrics[primary] for b in score.blocks}


def check_means(name: str, graded: list, places: float) -> dict[str, list[str | None]]:
    """Every slice value's units (``unit_slices``) average to its stored primary score (to
    ``places`` decimals); the unit slices, one value per unit, never None (a unit is an item)."""
    benchmark = get_benchmark(name)
    units, found = benchmark.units(graded), benchmark.unit_slices(graded)
    shown = primaries(benchmark.score(graded), benchmark.primary)
    assert found and {(d, v) for d, vs in found.items() for v in vs} == set(shown) - {
        ("all", "all")
    }
    for dimension, values in found.items():
        assert len(values) == units.size and None not in values
        for value in set(values):
            mine = np.array([v == value for v in values])
            assert units[mine].mean() == pytest.approx(shown[dimension, value], abs=10**-places)
    return found


def m2_answer(query_id: str, topic: str, value: float, image: float, **labels: str) -> M2Answer:
    """An M2RAG answer scoring ``value`` on its five answer metrics, with one placed image
    scored ``image``."""
    return M2Answer(
        query_id, {"topic": topic, **labels}, "q", "a", "", "rules@x", "v", "h", placed=(0,),
        fluency=value, relevance=value, context_precision=value, faithfulness=value,
        image_recall=value, coherence=(image,), helpfulness=(image,), reference=(image,),
    ).with_grade()  # fmt: skip


def test_m2rag_units_are_its_answers_in_the_runs_order_with_their_topic():
    graded = [m2_answer("q2", "birds", 1.0, 0.5), m2_answer("q1", "cars", 0.2, 0.0),
              M2Answer("q3", {"topic": "birds"}, "q", "", FAILED, "rules@x", "v", "h")]  # fmt: skip
    benchmark = get_benchmark("m2rag")
    assert benchmark.units(graded).tolist() == pytest.approx([0.8125, 0.125, 0.0])
    assert benchmark.unit_slices(graded) == {"topic": ["birds", "cars", "birds"]}


def test_m2rag_topics_units_average_to_their_overall():
    # every answer places one image: its own overall is its share of the pooled one
    graded = [m2_answer(f"q{i}", "birds" if i < 3 else "cars", i / 5, 1 - i / 5) for i in range(5)]
    found = check_means("m2rag", graded, places=3)  # a grade is written to 4 digits
    assert found == {"topic": ["birds", "birds", "birds", "cars", "cars"]}


def test_m2rag_leaves_out_a_label_some_answer_lacks_and_says_nothing_unjudged():
    graded = [m2_answer("q1", "birds", 1.0, 1.0, kind="photo"), m2_answer("q2", "cars", 0.0, 0.0)]
    # the scores put q2 in no kind: a unit in no value cannot be stored, so no kind at all
    assert get_benchmark("m2rag").unit_slices(graded) == {"topic": ["birds", "cars"]}
    unjudged = M2Answer("q3", {"topic": "cars"}, "q", "a", UNJUDGED, "j", "v", "h")
    assert get_benchmark("m2rag").unit_slices([*graded, unjudged]) == {}


def mrag_answer(mode: str, item_id: str, grade: str, **labels: str) -> MragAnswer:
    return MragAnswer(
        item_id, mode, "question", "reference", "short", "long", grade, 0.0, 0.0, 1, 1, 1, 3,
        None, "", dict.fromkeys(PROFILE, 0.5), labels,
    )  # fmt: skip


def test_mrag_suite_units_are_mode_item_answers_by_key_with_their_labels():
    graded = [mrag_answer("GPD", "b", "correct", source="wiki"),
              mrag_answer("GO", "b", "incorrect", source="wiki"),
              mrag_answer("GO", "a", "no_answer", source="news", variant="v1")]  # fmt: skip
    benchmark = get_benchmark("mrag-suite")
    # units by (mode, item id): GO/a, GO/b, GPD/b
    assert benchmark.units(graded).tolist() == [0.0, 0.0, 100.0]
    assert benchmark.unit_slices(graded) == {
        "source": ["news", "wiki", "wiki"],
        "variant": ["v1", "(unlabelled)", "(unlabelled)"],  # as the scores name it
    }
    assert set(benchmark.aggregate(graded)["slices"]["variant"]) == {"v1", "(unlabelled)"}


def test_mrag_suite_slice_values_units_average_to_their_accuracy():
    grades = ["correct", "incorrect", "correct", "no_answer", "correct", "correct", "incorrect"]
    graded = [mrag_answer("GPD", f"i{6 - n}", grade, source="wiki" if n % 3 else "news",
                          **({"variant": "short"} if n < 4 else {}))
              for n, grade in enumerate(grades)]  # fmt: skip
    found = check_means("mrag-suite", graded, places=1)  # accuracy is rounded to 0.1
    assert found["source"] == ["news", "wiki", "wiki", "news", "wiki", "wiki", "news"]  # i0: n = 6
    unjudged = mrag_answer("GPD", "z", UNJUDGED, source="wiki")
    assert get_benchmark("mrag-suite").unit_slices([*graded, unjudged]) == {}


def visual_query(setting: str, query_id: str, grade: str, **labels: str) -> GradedQuery:
    return GradedQuery(query_id, setting, labels, "q", ("orange",), "a", True, grade, 0.5, (),
                       None, "rules@x", "v", "h")  # fmt: skip


def test_visual_rag_units_are_setting_query_items_by_key_with_their_labels():
    graded = [visual_query("zero_shot", "q1", "1", species="robin"),
              visual_query("gt_clue", "q2", "0.5", species="wren", region="north"),
              visual_query("gt_clue", "q1", "no_answer", species="robin")]  # fmt: skip
    benchmark = get_benchmark("visual-rag")
    # units by (setting, query id): gt_clue/q1, gt_clue/q2, zero_shot/q1
    assert benchmark.units(graded).tolist() == [0.0, 50.0, 100.0]
    assert benchmark.unit_slices(graded) == {
        "region": ["(unlabelled)", "north", "(unlabelled)"],
        "species": ["robin", "wren", "robin"],
    }


def test_visual_rag_slice_values_units_average_to_their_accuracy():
    grades = ["1", "0.5", "0", "no_answer", "1", "0.5", "1", "0"]
    graded = [visual_query("one_in_5", f"q{7 - n}", grade, species=f"s{n % 3}",
                           **({"region": "north"} if n % 2 else {}))
              for n, grade in enumerate(grades)]  # fmt: skip
    found = check_means("visual-rag", graded, places=9)
    assert found["region"] == ["north", "(unlabelled)"] * 4  # q0, q1, ...: n = 7, 6, ...
    unjudged = visual_query("one_in_5", "z", UNJUDGED, species="s0")
    assert get_benchmark("visual-rag").unit_slices([*graded, unjudged]) == {}


def test_the_item_helpers_put_an_unlabelled_item_under_its_value_or_leave_the_dimension_out():
    labels = [{"topic": "a"}, {"topic": "b", "kind": "x"}]
    assert item_unit_slices(labels, "(none)") == {"kind": ["(none)", "x"], "topic": ["a", "b"]}
    assert item_unit_slices(labels, None) == {"topic": ["a", "b"]}
    keyed = {("m", "2"): {"topic": "b"}, ("m", "1"): {"topic": "a"}}
    assert keyed_unit_slices(keyed, None) == {"topic": ["a", "b"]}


@pytest.mark.parametrize(
    ("name", "graded"),
    [
        ("mrag-suite", [mrag_answer("GPD", f"i{n}", g) for n, g in
                        enumerate(["correct", "incorrect", "no_answer", "correct"])]),
        ("visual-rag", [visual_query("one_in_5", f"q{n}", g) for n, g in
                        enumerate(["1", "0.5", "0", "no_answer", "1"])]),
    ],
)  # fmt: skip
def test_the_verdicts_values_are_what_the_items_add_to_the_primary_mean(name, graded):
    # what people's labels calibrate (``evaluator.calibrated``): a verdict's value is its
    # item's unit value, and off the menu there is none
    benchmark = get_benchmark(name)
    values = [benchmark.verdict_value(benchmark.item_grade(item)) for item in graded]
    assert sorted(values) == sorted(benchmark.units(graded).tolist())
    assert all(benchmark.verdict_value(v) is not None for v in benchmark.verdict_menu())
    assert benchmark.verdict_value("an off-menu grade") is None
    assert benchmark.verdict_value(UNJUDGED) is None
