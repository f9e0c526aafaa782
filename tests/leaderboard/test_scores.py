import random

import pytest

from evaluator.benchmarks.crag_mm.compare import compare_runs
from evaluator.benchmarks.crag_mm.metrics import score_turns
from evaluator.benchmarks.crag_mm.records import GradedTurn, Verdict
from leaderboard.models import EntryComparison, SliceScore
from leaderboard.ranking import stored_comparison
from leaderboard.scores import ScoresError, store_comparison, store_scores

from .factories import scores_dict

VERDICTS = [Verdict.CORRECT, Verdict.MISSING, Verdict.HALLUCINATED]


def graded_run(seed: int, conversations: int = 12) -> list[GradedTurn]:
    """Multi-turn graded turns with labels, as the judge worker will produce them."""
    shape, rng = random.Random(0), random.Random(seed)  # same turns, verdicts vary by seed
    turns = []
    for c in range(conversations):
        for t in range(shape.randint(2, 4)):
            verdict = rng.choice(VERDICTS)
            turns.append(
                GradedTurn(
                    session_id=f"s{c}",
                    interaction_id=f"s{c}-t{t}",
                    turn_idx=t,
                    is_ego=c % 3 != 0,
                    labels={
                        "domain": ["food", "vehicle", "book"][c % 3],
                        "query_category": "simple-recognition",
                        "dynamism": "static",
                        "image_quality": ["normal", "blurred"][t % 2],
                        "entity_popularity": ["head", "tail"][c % 2],
                    },
                    query="q",
                    ground_truth="a",
                    agent_response="r",
                    is_exact_match=False,
                    is_miss=verdict is Verdict.MISSING,
                    verdict=verdict,
                    judge_id="rules@1",
                    prompt_version="v1",
                )
            )
    return turns


@pytest.fixture
def run(teams, splits, make_entry):
    return make_entry(teams["alpha"], splits["public-test"], 0.1)


def test_evaluator_scores_round_trip_through_slice_rows(run):
    scores = score_turns(graded_run(1), counting="paper", seed=0, n_boot=200)
    count = store_scores(run, scores, {"counting": "paper"})
    rows = {(r.dimension, r.value): r for r in SliceScore.objects.filter(run=run)}
    expected = {("all", "all"): scores["all"]}
    for dimension, values in scores["slices"].items():
        for value, block in values.items():
            expected[(dimension, str(value))] = block
    assert count == len(rows) == len(expected)
    assert ("entity_popularity", "tail") in rows, "extra labels become slices"
    assert rows[("is_ego", "true")].metrics == scores["ego"], "the ego block is the is_ego slice"
    for key, block in expected.items():
        row = rows[key]
        assert row.metrics == pytest.approx(block), key
        assert row.count == block["turns"]
        assert row.primary == pytest.approx(block["truthfulness"]), key  # the task's primary
        assert [row.primary_ci_low, row.primary_ci_high] == pytest.approx(
            block["truthfulness_ci95"]
        )
    run.refresh_from_db()
    assert (run.scored_with, run.scores_complete, run.unjudged_items) == (
        {"counting": "paper"},
        True,
        0,
    )


def test_incomplete_scores_store_null_rates(run):
    turns = graded_run(2)
    turns[0] = GradedTurn(**{**turns[0].__dict__, "verdict": Verdict.UNJUDGED, "is_miss": False})
    scores = score_turns(turns, seed=0, n_boot=50)
    store_scores(run, scores)
    headline = SliceScore.objects.get(run=run, dimension="all")
    assert headline.primary is None and headline.primary_ci_low is None
    assert headline.metrics["truthfulness"] is None and headline.count == len(turns)
    run.refresh_from_db()
    assert (run.scores_complete, run.unjudged_items) == (False, 1)


def test_storing_again_replaces_earlier_rows(run):
    store_scores(run, scores_dict(0.5, slices={"domain": {"food": scores_dict(0.5)["all"]}}))
    assert set(SliceScore.objects.filter(run=run).values_list("dimension", flat=True)) == {
        "all",
        "domain",
    }
    assert SliceScore.objects.get(run=run, dimension="all").primary == 0.5


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.pop("all"), "not a crag-mm scores dict"),
        (lambda s: s["all"].update(accuracy="high"), r"scores\[all=all\].accuracy: expected a fin"),
        (lambda s: s["all"].update(turns=-1), "count -1 is negative"),
        (lambda s: s["all"].update(truthfulness_ci95=[0.1]), "truthfulness_ci95: expected"),
        (lambda s: s["slices"]["domain"].update(food=3), "not a crag-mm scores dict"),
        (lambda s: s["slices"].update(all={"x": s["all"]}), "reserved"),
        (lambda s: s.update(unjudged="2"), "scores.unjudged: expected a count"),
        (lambda s: s["all"].update(truthfulness=float("nan")), "not finite JSON"),
    ],
)
def test_bad_scores_are_refused_and_earlier_rows_kept(run, mutate, message):
    before = list(SliceScore.objects.filter(run=run).values_list("pk", flat=True))
    bad = scores_dict(0.9)
    mutate(bad)
    with pytest.raises(ScoresError, match=message):
        store_scores(run, bad)
    assert list(SliceScore.objects.filter(run=run).values_list("pk", flat=True)) == before


def test_comparison_is_stored_once_per_pair_and_read_in_either_order(teams, splits, make_entry):
    split = splits["public-test"]
    run_a = make_entry(teams["alpha"], split, 0.3)
    run_b = make_entry(teams["beta"], split, 0.1)
    result = compare_runs(graded_run(3), graded_run(4), seed=0, n_boot=200)
    store_comparison(run_b, run_a, result)  # run_b has the higher id: stored reversed
    store_comparison(run_b, run_a, result)
    assert EntryComparison.objects.count() == 1
    as_given = stored_comparison(run_b.pk, run_a.pk)
    assert as_given.difference == pytest.approx(result["difference"])
    assert [as_given.ci_low, as_given.ci_high] == pytest.approx(result["difference_ci95"])
    flipped = stored_comparison(run_a.pk, run_b.pk)
    assert flipped.difference == pytest.approx(-result["difference"])
    assert [flipped.ci_low, flipped.ci_high] == pytest.approx(
        [-result["difference_ci95"][1], -result["difference_ci95"][0]]
    )
    assert as_given.separable == flipped.separable == result["separable"]


def test_comparison_needs_two_runs_of_one_split(teams, splits, make_entry):
    run_a = make_entry(teams["alpha"], splits["public-test"], 0.3)
    run_b = make_entry(teams["beta"], splits["validation"], 0.1)
    result = {"difference": 0.1, "difference_ci95": [0.0, 0.2], "p_value": 0.1}
    with pytest.raises(ScoresError, match="not on the same split"):
        store_comparison(run_a, run_b, result)
    with pytest.raises(ScoresError, match="needs difference"):
        store_comparison(run_a, make_entry(teams["beta"], splits["public-test"], 0.1), {})
