"""The overall board across a challenge's tasks: both methods on small boards computed by hand
(shared ranks, a missing team, baselines and hidden submissions left off as on the task
boards), computed once per version of the counted boards, and shown only to whom every
counted board is (a hidden split, a draft challenge), on its page and in the API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from leaderboard import overall_board
from leaderboard.models import Challenge, EvaluationRun, Split, Submission, Task, Team
from leaderboard.overall import Overall
from tests.leaderboard.test_setting_boards import visual  # noqa: F401 - a fixture used by name

pytestmark = pytest.mark.django_db


@pytest.fixture
def second(challenge) -> Task:
    return Task.objects.create(
        challenge=challenge, task_id="single-turn", name="Single-turn QA", order=1
    )


@pytest.fixture
def boards(splits, second, teams, make_entry) -> dict[str, EvaluationRun]:
    """multi-turn-qa (public test): alpha 0.40 (1), beta and gamma 0.25 (2, shared), a
    baseline 0.90 (no rank); single-turn: beta 0.50 (1), alpha 0.30 (2), no gamma."""
    later = timezone.now() + timedelta(days=7)
    Split.objects.create(task=second, kind=Split.Kind.PUBLIC_TEST)
    Split.objects.create(task=second, kind=Split.Kind.PRIVATE_TEST, reveal_at=later)
    b_public = second.splits.get(kind=Split.Kind.PUBLIC_TEST)
    organisers = Team.objects.create(name="organisers")
    return {
        "a1": make_entry(teams["alpha"], splits["public-test"], 0.40),
        "b1": make_entry(teams["beta"], splits["public-test"], 0.25, age_days=1),
        "g1": make_entry(teams["gamma"], splits["public-test"], 0.25),
        "base": make_entry(organisers, splits["public-test"], 0.90, baseline=True),
        "b2": make_entry(teams["beta"], b_public, 0.50),
        "a2": make_entry(teams["alpha"], b_public, 0.30),
    }


def declare(challenge: Challenge, **overall: object) -> Overall:
    challenge.overall = overall
    challenge.save()
    found = Overall.of(challenge)
    assert found is not None
    return found


def lines(challenge: Challenge, kind: str = "public-test") -> list[tuple[int, str, float]]:
    overall = Overall.of(Challenge.objects.get(pk=challenge.pk))
    assert overall is not None
    board = overall_board.compute(overall, kind, overall_board.splits(challenge, overall, kind))
    return [(line.rank, line.team, round(line.score, 6)) for line in board.lines]


def test_average_rank_shares_equal_means_and_ranks_a_missing_team_below_the_last(challenge, boards):
    declare(challenge, method="average-rank")
    # alpha (1 + 2) / 2, beta (2 + 1) / 2: shared; gamma (2 + 3) / 2: missing on single-turn,
    # whose board has two entries; the baseline is nobody's rank and no overall entry
    assert lines(challenge) == [(1, "alpha", 1.5), (1, "beta", 1.5), (3, "gamma", 2.5)]


def test_mean_leaves_out_a_team_missing_a_task_and_ranks_higher_first(challenge, boards):
    declare(challenge, method="mean")  # each task's primary metric: truthfulness
    assert lines(challenge) == [(1, "beta", 0.375), (2, "alpha", 0.35)]


def test_mean_counts_the_declared_metric_of_each_task(challenge, boards):
    declare(challenge, method="mean", metrics={"single-turn": "accuracy"})
    # accuracy = (1 + truthfulness) / 2 * 0.8: alpha (0.40 + 0.52) / 2, beta (0.25 + 0.60) / 2
    assert lines(challenge) == [(1, "alpha", 0.46), (2, "beta", 0.425)]


def test_only_the_declared_tasks_count(challenge, boards):
    declare(challenge, method="average-rank", tasks=["single-turn"])
    assert lines(challenge) == [(1, "beta", 1.0), (2, "alpha", 2.0)]


def test_a_hidden_submission_is_off_the_overall_board_as_off_the_task_board(challenge, boards):
    declare(challenge, method="average-rank")
    submission = boards["b2"].submission
    submission.standing = Submission.Standing.HIDDEN
    submission.save()
    # single-turn now ranks alpha alone: beta counts 2 there, as gamma does
    assert lines(challenge) == [(1, "alpha", 1.0), (2, "beta", 2.0), (2, "gamma", 2.0)]


def test_the_board_is_computed_once_per_version_of_the_counted_boards(
    client, challenge, boards, teams, make_entry, monkeypatch
):
    declare(challenge, method="average-rank")
    computed = []
    real = overall_board.compute
    monkeypatch.setattr(overall_board, "compute", lambda *args: computed.append(1) or real(*args))
    url = reverse("leaderboard:overall", args=(challenge.slug,))
    assert client.get(url).status_code == 200
    assert client.get(url).status_code == 200
    assert len(computed) == 1
    b_public = Split.objects.get(task__task_id="single-turn", kind=Split.Kind.PUBLIC_TEST)
    make_entry(teams["gamma"], b_public, 0.90)  # a new result on a counted board
    page = client.get(url).content.decode()
    assert len(computed) == 2
    assert page.index("gamma") < page.index("alpha")  # gamma (2 + 1) / 2 = 1.5 ties alpha


def test_the_page_shows_each_task_linked_to_the_entries(client, challenge, boards):
    declare(challenge, method="average-rank", title="Grand ranking")
    page = client.get(reverse("leaderboard:overall", args=(challenge.slug,))).content.decode()
    assert "<h1>Grand ranking · public test</h1>" in page
    assert "ranked after every team on that board" in page
    entry = reverse("leaderboard:entry", args=(challenge.slug, "single-turn", "public-test", 0))
    assert f'href="{entry.removesuffix("0/")}{boards["a2"].pk}/">#2 · 30.0</a>' in page
    board = reverse("leaderboard:leaderboard", args=(challenge.slug, "single-turn", "public-test"))
    assert f'href="{board}">Single-turn QA</a>' in page
    assert "no entry (counts 3)" in page  # gamma on single-turn
    assert page.index(">alpha<") < page.index(">beta<") < page.index(">gamma<")


def test_the_challenge_page_and_the_board_navigation_link_it(client, challenge, boards):
    url = reverse("leaderboard:overall", args=(challenge.slug,))
    detail = reverse("leaderboard:challenge", args=(challenge.slug,)) + "?tab=leaderboards"
    board = reverse("leaderboard:leaderboard", args=(challenge.slug, "single-turn", "public-test"))
    assert url not in client.get(detail).content.decode()
    assert url not in client.get(board).content.decode()
    assert client.get(url).status_code == 404  # no overall ranking declared
    declare(challenge, method="mean")
    assert f'href="{url}"' in client.get(detail).content.decode()
    assert f'href="{url}"' in client.get(board).content.decode()


def test_the_api_gives_the_board_beside_the_splits_boards(client, challenge, boards):
    declare(challenge, method="mean", metrics={"single-turn": "accuracy"})
    url = reverse("api:challenge-overall", args=(challenge.slug,))
    body = client.get(url, {"split": "public-test"}).json()
    assert body["method"] == "mean" and body["split"] == "public-test"
    assert body["missing"] == "A team needs an entry on every counted task to be ranked."
    assert [(c["task"], c["metric"]) for c in body["columns"]] == [
        ("multi-turn-qa", "truthfulness"),
        ("single-turn", "accuracy"),
    ]
    alpha = body["entries"][0]
    assert (alpha["rank"], alpha["team"], round(alpha["score"], 6)) == (1, "alpha", 0.46)
    assert [(c["rank"], c["run_id"]) for c in alpha["tasks"]] == [
        (1, boards["a1"].pk),
        (2, boards["a2"].pk),
    ]
    assert client.get(url, {"split": "validation"}).status_code == 404  # single-turn has none


def test_a_hidden_split_s_overall_board_is_shown_once_revealed(
    client, challenge, boards, teams, make_user
):
    declare(challenge, method="average-rank")
    member = make_user("member", team=teams["alpha"])
    organiser = make_user("org", staff=True)
    page = reverse("leaderboard:overall", args=(challenge.slug,))
    api = reverse("api:challenge-overall", args=(challenge.slug,))
    client.force_login(member)
    assert client.get(page, {"split": "private-test"}).status_code == 403
    assert client.get(api, {"split": "private-test"}).status_code == 403
    assert "private test (not public)" in client.get(page).content.decode()
    client.force_login(organiser)
    assert client.get(page, {"split": "private-test"}).status_code == 200
    Split.objects.filter(kind=Split.Kind.PRIVATE_TEST).update(
        reveal_at=timezone.now() - timedelta(minutes=1)
    )
    client.force_login(member)
    assert client.get(page, {"split": "private-test"}).status_code == 200
    assert client.get(api, {"split": "private-test"}).status_code == 200


def test_a_draft_challenge_s_overall_board_is_its_organisers_only(
    client, challenge, boards, make_user
):
    declare(challenge, method="average-rank")
    Challenge.objects.filter(pk=challenge.pk).update(is_published=False)
    page = reverse("leaderboard:overall", args=(challenge.slug,))
    api = reverse("api:challenge-overall", args=(challenge.slug,))
    assert client.get(page).status_code == 404
    assert client.get(api).status_code == 404
    client.force_login(make_user("org", staff=True))
    assert client.get(page).status_code == 200
    assert client.get(api).status_code == 200


def test_the_demo_prints_the_overall_boards_after_the_task_boards(challenge, boards):
    from leaderboard.demo.processes import rankings

    declare(challenge, method="average-rank", title="Overall ranking")
    text = "\n".join(rankings(challenge))
    board = text.split("\nOverall ranking / public-test (average-rank)\n", 1)[1].split("\n\n")[0]
    assert [line.split() for line in board.splitlines()[1:]] == [
        ["1", "alpha", "1.500"],
        ["1", "beta", "1.500"],
        ["3", "gamma", "2.500"],
    ]
    assert "Overall ranking / private-test" in text  # one board per kind the tasks share


def test_a_task_with_settings_counts_the_board_of_its_declared_setting(
    client,
    challenge,
    visual,  # noqa: F811 - the fixture imported above
):
    declare(challenge, method="average-rank", tasks=["visual-rag"])  # its first: zero_shot
    assert lines(challenge, "validation") == [
        (1, "beta", 1.0),
        (2, "alpha", 2.0),
        (3, "gamma", 3.0),
    ]
    declare(challenge, method="average-rank", settings={"visual-rag": "gt_clue"})
    # gamma was run in zero_shot only: on no counted board, so not listed
    assert lines(challenge, "validation") == [(1, "alpha", 1.0), (2, "beta", 2.0)]
    page = client.get(reverse("leaderboard:overall", args=(challenge.slug,))).content.decode()
    alpha = visual["runs"]["alpha", "gt_clue"].pk
    assert f'{alpha}/?setting=gt_clue">#1 · 80.0</a>' in page
