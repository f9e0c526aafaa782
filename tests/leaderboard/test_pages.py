import csv
import io
import json
import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from leaderboard.models import Challenge, SliceScore, Split, Team
from leaderboard.scores import store_comparison

BOARD_ARGS = ("crag-mm-2026", "multi-turn-qa")


def url(name, kind="public-test", **query):
    path = reverse(f"leaderboard:{name}", args=(*BOARD_ARGS, kind))
    return path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


@pytest.fixture
def entries(teams, splits, make_entry):
    public = splits["public-test"]
    organisers = Team.objects.create(name="organisers")
    runs = {
        "alpha": make_entry(teams["alpha"], public, 0.42, method="Alpha RAG"),
        "beta": make_entry(teams["beta"], public, 0.17, method="Beta agent"),
        "baseline": make_entry(organisers, public, 0.05, method="LLaVA baseline", baseline=True),
        "private": make_entry(teams["alpha"], splits["private-test"], 0.33, method="Alpha RAG"),
    }
    sub = runs["alpha"].submission
    sub.paper_url, sub.code_url = "https://arxiv.org/abs/1", "https://example.org/code"
    sub.save()
    return runs


def test_challenge_list_hides_unpublished_challenges(client, challenge):
    Challenge.objects.create(name="Secret draft", slug="draft", is_published=False)
    page = client.get(reverse("leaderboard:challenges")).content.decode()
    assert "CRAG-MM 2026" in page and "Secret draft" not in page
    assert client.get(reverse("leaderboard:challenge", args=["draft"])).status_code == 404


def test_leaderboard_ranks_entries_with_interval_links_baseline_and_judge(client, entries):
    response = client.get(url("leaderboard"))
    assert response.status_code == 200
    page = response.content.decode()
    assert page.index("Alpha RAG") < page.index("Beta agent") < page.index("LLaVA baseline")
    assert "42.0" in page and "[32.0, 52.0]" in page  # truthfulness and its 95 % interval
    assert 'href="https://arxiv.org/abs/1"' in page and 'href="https://example.org/code"' in page
    assert re.search(r'class="badge baseline">baseline<', page)
    assert "rules@1" in page
    assert "cdn" not in page.lower() and "https://" not in page.split("<main>")[0]


def test_slice_view_shows_every_entry_with_the_stored_numbers(client, entries):
    response = client.get(url("slices", dimension="domain", metric="accuracy"))
    assert response.status_code == 200
    page = response.content.decode()
    stored = SliceScore.objects.filter(dimension="domain", run__split__kind="public-test")
    cells = [float(v) for v in re.findall(r'data-value="([-0-9.e]+)"', page)]
    assert sorted(cells) == pytest.approx(sorted(s.metrics["accuracy"] for s in stored))
    assert len(cells) == 3 * 2  # three entries x two domains
    svg = page[page.index('<svg class="chart"') : page.index("</svg>", page.index("chart"))]
    assert svg.count('<rect class="s') == 6


def test_slice_view_rejects_unknown_dimensions_and_metrics(client, entries):
    assert client.get(url("slices", dimension="nope")).status_code == 404
    assert client.get(url("slices", dimension="domain", metric="vibes")).status_code == 404


def test_compare_shows_the_stored_comparison_oriented_as_asked(client, entries):
    alpha, beta = entries["alpha"], entries["beta"]
    compare = url("compare", a=beta.pk, b=alpha.pk)
    assert "No paired comparison" in client.get(compare).content.decode()
    store_comparison(
        alpha, beta, {"difference": 0.25, "difference_ci95": [0.1, 0.4], "p_value": 0.002}
    )
    page = client.get(compare).content.decode()
    assert "<strong>-25.0</strong>" in page and "[-40.0, -10.0]" in page
    assert "<strong>separable</strong>" in page
    assert client.get(url("compare", a=entries["private"].pk, b=alpha.pk)).status_code == 404


def test_exports_hold_the_ranked_entries(client, entries):
    csv_response = client.get(url("export-csv"))
    assert csv_response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(csv_response.content.decode())))
    assert [r["method_name"] for r in rows] == ["Alpha RAG", "Beta agent", "LLaVA baseline"]
    assert rows[0]["rank"] == "1" and rows[2]["rank"] == "" and rows[2]["is_baseline"] == "True"
    assert float(rows[0]["truthfulness_ci_low"]) == pytest.approx(0.32)
    body = json.loads(client.get(url("export-json")).content)
    assert body["primary_metric"] == "truthfulness"
    assert [e["run_id"] for e in body["entries"]] == [int(r["run_id"]) for r in rows]
    assert body["entries"][1]["metrics"]["accuracy"] == pytest.approx(float(rows[1]["accuracy"]))
    assert body["entries"][0]["primary_ci95"] == pytest.approx([0.32, 0.52])
    public = entries["alpha"].split
    api = client.get(reverse("api:split-leaderboard", args=[public.pk])).json()
    assert api["entries"] == body["entries"], "the export and the API give one shape"


@pytest.mark.parametrize("page", ["leaderboard", "slices", "compare", "export-csv", "export-json"])
def test_private_results_wait_for_the_reveal(client, entries, splits, make_user, page):
    private = splits["private-test"]
    assert client.get(url(page, "private-test")).status_code == 403
    client.force_login(make_user(team=private.runs.first().submission.team))
    assert client.get(url(page, "private-test")).status_code == 403
    client.force_login(make_user(staff=True))
    assert client.get(url(page, "private-test")).status_code == 200
    client.logout()
    private.reveal_at = timezone.now() - timedelta(seconds=1)
    private.save()
    assert client.get(url(page, "private-test")).status_code == 200


def test_challenge_organisers_see_private_results_and_hidden_splits(
    client, entries, splits, make_user, challenge
):
    organiser = make_user()
    challenge.organisers.add(organiser)
    Split.objects.filter(kind="public-test").update(visibility=Split.Visibility.HIDDEN)
    assert client.get(url("leaderboard")).status_code == 403
    client.force_login(organiser)
    assert client.get(url("leaderboard")).status_code == 200
    assert client.get(url("leaderboard", "private-test")).status_code == 200


def test_challenge_page_says_when_private_results_appear(client, entries, splits):
    page = client.get(reverse("leaderboard:challenge", args=["crag-mm-2026"])).content.decode()
    assert url("leaderboard") in page and url("leaderboard", "private-test") not in page
    assert f"results appear on {splits['private-test'].reveal_at:%Y-%m-%d %H:%M}" in page


def test_challenge_page_states_each_tasks_limits_and_failure_policies(client, task):
    task.per_item_s, task.error_policy = 7.5, "continue"
    task.save()
    page = client.get(reverse("leaderboard:challenge", args=["crag-mm-2026"])).content.decode()
    limits = page.split(f'id="limits-{task.task_id}">', 1)[1].split("</p>", 1)[0]
    assert "7.5 s per item, a batch call 7.5 s x your batch size" in limits
    assert "on a time-out: a timed-out turn is scored missing" in limits
    assert "on an agent error: an agent error scores its batch missing; the run goes on" in limits


def test_static_css_is_served_without_external_hosts(client):
    response = client.get("/static/leaderboard/podium.css")
    assert response.status_code == 200
    assert b"svg.chart" in b"".join(response.streaming_content)


@pytest.mark.parametrize("name", ["leaderboard", "slices", "compare", "export-json"])
def test_pages_make_as_many_queries_for_many_entries_as_for_few(
    client, teams, splits, make_entry, name
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries():
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url(name, dimension="domain")).status_code == 200
        return len(captured)

    make_entry(teams["alpha"], splits["public-test"], 0.1)
    few = queries()
    for i in range(25):
        make_entry(Team.objects.create(name=f"crowd{i}"), splits["public-test"], i / 50)
    assert queries() == few


@pytest.mark.urls("tests.leaderboard.error_urls")
def test_a_server_error_gets_a_page_that_says_what_to_do_and_no_server_path(db, settings):
    from django.test import Client

    settings.DEBUG = False
    response = Client(raise_request_exception=False).get("/broken/")
    page = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong on Podium" in page and "Try again in a minute" in page
    assert "/srv/podium" not in page and "RuntimeError" not in page


@pytest.mark.parametrize(("groups", "items", "shown"), [(4, 4, False), (2, 6, True)])
def test_multi_turn_columns_only_on_multi_turn_boards(
    client, teams, splits, make_entry, groups, items, shown
):
    split = splits["public-test"]
    Split.objects.filter(pk=split.pk).update(groups=groups, items=items)
    make_entry(teams["alpha"], split, 0.3)
    url = reverse("leaderboard:leaderboard", args=["crag-mm-2026", "multi-turn-qa", "public-test"])
    page = client.get(url).content.decode()
    assert "Truthfulness" in page and "Accuracy" in page
    assert ("Early-stop rate" in page) is shown and ("Avg successful turns" in page) is shown
