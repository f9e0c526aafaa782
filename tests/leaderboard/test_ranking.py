import pytest

from leaderboard import board_store, ranking
from leaderboard.models import EvaluationRun, Task, Team

from .factories import block


def board(split):
    return [(e.rank, e.team, e.method_name) for e in board_store.entries(split)]


def set_rules(split, **rules):
    """The task's ranking rules changed as an organiser changes them (``Task.save``)."""
    for name, value in rules.items():
        setattr(split.task, name, value)
    split.task.save()


@pytest.fixture
def public(splits):
    return splits["public-test"]


@pytest.fixture
def history(teams, public, make_entry):
    """alpha: old strong, newer weak (chosen); beta: one; gamma: failed run only."""
    make_entry(teams["alpha"], public, 0.40, method="a-old", age_days=3)
    make_entry(teams["alpha"], public, 0.10, method="a-new", age_days=1, chosen=True)
    make_entry(teams["beta"], public, 0.25, method="b-only", age_days=2)
    make_entry(teams["gamma"], public, 0.99, method="g-failed", state=EvaluationRun.State.FAILED)


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("best", [(1, "alpha", "a-old"), (2, "beta", "b-only")]),
        ("latest", [(1, "beta", "b-only"), (2, "alpha", "a-new")]),
        ("chosen", [(1, "beta", "b-only"), (2, "alpha", "a-new")]),
    ],
)
def test_one_entry_per_team_by_the_task_rule(public, history, rule, expected):
    set_rules(public, entry_rule=rule)
    assert board(public) == expected


def test_chosen_rule_falls_back_to_best_when_nothing_chosen(teams, public, make_entry):
    Task.objects.filter(pk=public.task_id).update(entry_rule="chosen")
    public.task.refresh_from_db()
    make_entry(teams["alpha"], public, 0.2, method="x", age_days=2)
    make_entry(teams["alpha"], public, 0.3, method="y", age_days=1)
    assert board(public) == [(1, "alpha", "y")]


def test_baselines_are_all_listed_unranked_between_entries(teams, public, make_entry):
    organisers = Team.objects.create(name="organisers")
    make_entry(teams["alpha"], public, 0.3, method="a")
    make_entry(organisers, public, 0.35, method="gpt-baseline", baseline=True)
    make_entry(organisers, public, 0.05, method="llava-baseline", baseline=True)
    make_entry(teams["beta"], public, 0.1, method="b")
    assert board(public) == [
        (None, "organisers", "gpt-baseline"),
        (1, "alpha", "a"),
        (2, "beta", "b"),
        (None, "organisers", "llava-baseline"),
    ]


def test_ties_share_a_rank_and_incomplete_results_come_last(teams, public, make_entry):
    make_entry(teams["alpha"], public, None, method="unjudged")
    make_entry(teams["beta"], public, 0.2, method="b", age_days=1)
    make_entry(teams["gamma"], public, 0.2, method="g")
    delta = Team.objects.create(name="delta")
    make_entry(delta, public, 0.1, method="d")
    assert board(public) == [
        (1, "beta", "b"),
        (1, "gamma", "g"),
        (3, "delta", "d"),
        (4, "alpha", "unjudged"),
    ]
    set_rules(public, tie_rule=Task.TieRule.EARLIER)
    assert board(public)[:2] == [(1, "beta", "b"), (2, "gamma", "g")]  # beta submitted first


def test_entries_are_kept_apart_per_split(teams, splits, make_entry):
    make_entry(teams["alpha"], splits["validation"], 0.9, method="val-only")
    assert board(splits["public-test"]) == []
    assert board(splits["validation"]) == [(1, "alpha", "val-only")]


def test_slice_table_matches_stored_rows_and_orders_turns_numerically(teams, public, make_entry):
    slices = {"turn_idx": {str(i): block(i / 20) for i in (0, 1, 2, 10)}}
    run = make_entry(teams["alpha"], public, 0.3, slices=slices)
    table = ranking.slice_table(board_store.entries(public), "turn_idx")
    assert table.values == ["0", "1", "2", "10"]
    ((entry, cells),) = table.rows
    assert entry.run_id == run.pk
    assert cells["10"]["metrics"]["truthfulness"] == pytest.approx(0.5)
    assert board_store.board(public).dimensions == ["turn_idx"]


def test_query_count_does_not_grow_with_entries(
    teams, public, make_entry, django_assert_max_num_queries
):
    for i in range(30):
        team = Team.objects.create(name=f"t{i}")
        make_entry(team, public, i / 100)
        make_entry(team, public, i / 200)
    public = type(public).objects.select_related("task").get(pk=public.pk)
    with django_assert_max_num_queries(3):
        board = board_store.board(public)  # the stored board, then its entries' rows
        leaderboard = board.entries
        ranking.slice_table(leaderboard, "domain")
        records = [e.record() for e in leaderboard]
    assert len(records) == 30
    assert records[0]["metrics"]["truthfulness"] == pytest.approx(0.29)
