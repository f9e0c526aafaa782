"""Near-identical answers of different teams on one split: computed when a run is done,
flagged on the organisers' submissions page with the other team and the share alike."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluator.benchmarks import get_benchmark
from leaderboard import duplicates, run_actions
from leaderboard.models import AnswerSimilarity, ItemAnswer, ItemVerdict

CRAG = get_benchmark("crag-mm")


def answer(run, answers: list[str], grades: list[str] | None = None) -> None:
    for position, text in enumerate(answers):
        row = ItemAnswer.objects.create(
            run=run, group="s", item_key=f"k{position}", position=position, response=text
        )
        if grades:
            ItemVerdict.objects.create(answer=row, verdict=grades[position], judge_id="rules@1")


@pytest.fixture
def runs(teams, splits, make_entry):
    split = splits["public-test"]
    return {
        name: make_entry(teams[team], split, 0.1, method=name)
        for name, team in (("alpha", "alpha"), ("beta", "beta"), ("gamma", "gamma"),
                           ("alpha2", "alpha"))
    }  # fmt: skip


def test_near_identical_answers_of_another_team_are_flagged(runs):
    base = [f"The answer number {i} is a red apple" for i in range(30)]
    answer(runs["alpha"], base)
    copied = [text.upper() + "!" for text in base[:27]] + ["The answer number 27 is a red appel"]
    answer(runs["beta"], [*copied, "something else", "another thing"])
    answer(runs["gamma"], [f"my own words {i}" for i in range(30)])
    assert duplicates.flag_similar_runs(runs["beta"], CRAG) == 1
    (pair,) = AnswerSimilarity.objects.all()
    assert {pair.run_a, pair.run_b} == {runs["alpha"], runs["beta"]}
    assert (pair.items, pair.alike) == (30, 28) and pair.share == pytest.approx(28 / 30)
    assert duplicates.flag_similar_runs(runs["beta"], CRAG) == 1  # replaced, not added
    assert AnswerSimilarity.objects.count() == 1
    answer(runs["alpha2"], base)  # alpha's again: flagged with beta's, never with alpha's own
    assert duplicates.flag_similar_runs(runs["alpha2"], CRAG) == 1
    pairs = {frozenset((p.run_a_id, p.run_b_id)) for p in AnswerSimilarity.objects.all()}
    assert frozenset((runs["alpha"].pk, runs["alpha2"].pk)) not in pairs and len(pairs) == 2


def test_below_the_share_or_too_few_items_is_not_flagged(runs):
    base = [f"The answer number {i} is a red apple" for i in range(30)]
    answer(runs["alpha"], base)
    answer(runs["beta"], base[:26] + [f"different {i}" for i in range(4)])  # 87 %
    assert duplicates.flag_similar_runs(runs["beta"], CRAG) == 0
    answer(runs["gamma"], base[:19])
    assert duplicates.flag_similar_runs(runs["gamma"], CRAG) == 0  # 19 items < 20


def test_abstentions_are_not_counted_as_alike(runs):
    idk = ["I don't know"] * 25
    answer(runs["alpha"], idk, ["missing"] * 25)
    answer(runs["beta"], idk, ["missing"] * 25)
    assert duplicates.flag_similar_runs(runs["beta"], CRAG) == 0


def test_the_organisers_page_names_the_other_team_and_the_share(
    client, runs, challenge, make_user, teams
):
    base = [f"The answer number {i} is a red apple" for i in range(25)]
    answer(runs["alpha"], base)
    answer(runs["beta"], base)
    duplicates.flag_similar_runs(runs["beta"], CRAG)
    url = reverse("leaderboard:challenge-submissions", args=[challenge.slug])
    organiser = make_user("org")
    challenge.organisers.add(organiser)
    client.force_login(organiser)
    page = client.get(url).content.decode()
    assert 'id="similar-answers"' in page
    alpha, beta = runs["alpha"], runs["beta"]
    low, high = sorted((alpha, beta), key=lambda run: run.pk)
    assert (
        f"{low.submission.team.name} #{low.submission_id} (run #{low.pk})</a> and "
        f'<a href="/runs/{high.pk}/">{high.submission.team.name} #{high.submission_id} '
        f"(run #{high.pk})</a> on multi-turn-qa public-test: 25 of 25 answers alike (100%)"
    ) in page
    # each row links its pairs compactly: the other team and submission
    assert f'">beta #{beta.submission_id}</a>' in page
    assert f'">alpha #{alpha.submission_id}</a>' in page
    assert "at least 20 items were both answered and at least 90 % of them are alike" in page
    client.force_login(make_user("carol", team=teams["alpha"]))
    assert client.get(url).status_code == 403  # a team never sees another's flags
    client.logout()
    assert client.get(url).status_code in (302, 403)


def test_a_rerun_or_rejudge_forgets_the_runs_flags(runs, make_user):
    base = [f"The answer number {i} is a red apple" for i in range(25)]
    answer(runs["alpha"], base)
    answer(runs["beta"], base)
    duplicates.flag_similar_runs(runs["beta"], CRAG)
    organiser = make_user("staff", staff=True)
    assert run_actions.rejudge([runs["alpha"]], organiser, "new prompt") == []
    assert not AnswerSimilarity.objects.exists()
