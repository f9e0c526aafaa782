"""A task evaluated in several settings (Visual-RAG) has one leaderboard per setting: every
page, export, the API and the command line read the setting asked for, never another's runs,
and show the benchmark's scores across settings (gCUE). A task without settings (CRAG-MM)
looks as before."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard import board_cache
from leaderboard.models import (
    EvaluationRun,
    Headline,
    ItemAnswer,
    SliceScore,
    Split,
    Submission,
    Task,
)
from leaderboard.views import boards
from podium import cli

SETTINGS = ("zero_shot", "gt_clue", "non_clue", "one_in_5")
# Each team's accuracy (percent) per setting; gamma was run in zero_shot only.
ACCURACY = {
    "alpha": {"zero_shot": 40.0, "gt_clue": 80.0, "non_clue": 50.0, "one_in_5": 70.0},
    "beta": {"zero_shot": 60.0, "gt_clue": 55.0, "non_clue": 50.0, "one_in_5": 52.0},
    "gamma": {"zero_shot": 30.0},
}
# gCUE@5 = (A_5 - B) / (A_gt - B), B = 0.5 A_zero_shot + 0.5 A_non_clue, by hand:
ALPHA_GCUE = (70.0 - 45.0) / (80.0 - 45.0)  # 0.714...
# beta: B = 0.5 * 60 + 0.5 * 50 = 55 = its GT-clue accuracy, so its gCUE@5 is undefined.
INVALID_PROBLEM = "the reply names no candidate image"


def make_run(submission: Submission, split: Split, setting: str, accuracy: float):
    """A finished, fully judged run of ``setting`` with a headline row and one slice row."""
    run = EvaluationRun.objects.create(
        submission=submission, task=split.task, split=split, setting=setting,
        state=EvaluationRun.State.DONE, judge_id="rules@1", scores_complete=True,
    )  # fmt: skip
    for dimension, value in (("all", "all"), ("species", "bird")):
        row = SliceScore(
            run=run, dimension=dimension, value=value, count=28,
            metrics={"accuracy": accuracy, "idk_rate": 10.0, "rouge1_recall": 50.0, "count": 28},
        )  # fmt: skip
        row.set_primary("accuracy")
        row.save()
    Headline.objects.create(
        run=run, split=split, setting=setting, count=28, primary=accuracy,
        metrics=row.metrics, dimensions=["species"],
    )  # fmt: skip
    return run


@pytest.fixture
def visual(challenge, teams) -> dict:
    task = Task.objects.create(
        challenge=challenge, task_id="visual-rag", name="Visual RAG", benchmark="visual-rag",
        primary_metric="accuracy", settings={"evaluated": list(SETTINGS)},
    )  # fmt: skip
    split = Split.objects.create(task=task, kind=Split.Kind.VALIDATION)
    runs = {}
    for team, accuracies in ACCURACY.items():
        submission = Submission.objects.create(
            team=teams[team], challenge=challenge, method_name=f"{team}-agent",
            artifact_kind=Submission.ArtifactKind.REGISTRY_REF, registry_ref="example/agent:1",
            state=Submission.State.READY,
        )  # fmt: skip
        for setting, accuracy in accuracies.items():
            runs[team, setting] = make_run(submission, split, setting, accuracy)
    return {"task": task, "split": split, "runs": runs}


def url(name: str, split: Split, **query: str) -> str:
    task = split.task
    path = reverse(f"leaderboard:{name}", args=[task.challenge.slug, task.task_id, split.kind])
    return path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def page(client, name: str, split: Split, **query: str) -> str:
    response = client.get(url(name, split, **query))
    assert response.status_code == 200
    return response.content.decode()


def ranked(html: str) -> list[str]:
    """The methods of the ranking table, top first."""
    table = html.split('<table id="leaderboard">')[1].split("</table>")[0]
    return re.findall(r'class="entry"[^>]*>([\w-]+)<', table)


def cells(html: str, table_id: str) -> list[list[str]]:
    """The body rows of a table as lists of their cells' opening tag and text."""
    table = html.split(f'<table id="{table_id}">')[1].split("</table>")[0]
    body = table.split("<tbody>")[1]
    return [
        [f"{attrs}|{text.strip()}" for attrs, text in re.findall(r"<td([^>]*)>(.*?)</td>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]


def test_each_setting_ranks_only_its_own_runs(client, visual):
    split = visual["split"]
    assert ranked(page(client, "leaderboard", split)) == [
        "beta-agent",
        "alpha-agent",
        "gamma-agent",
    ]
    assert ranked(page(client, "leaderboard", split, setting="zero_shot")) == [
        "beta-agent", "alpha-agent", "gamma-agent",
    ]  # fmt: skip
    gt_clue = page(client, "leaderboard", split, setting="gt_clue")
    assert ranked(gt_clue) == ["alpha-agent", "beta-agent"]
    assert "80.0" in gt_clue and "55.0" in gt_clue and "60.0" not in gt_clue
    assert ranked(page(client, "leaderboard", split, setting="one_in_5")) == [
        "alpha-agent", "beta-agent",
    ]  # fmt: skip


def test_the_cache_never_serves_one_settings_board_for_another(client, visual):
    split = visual["split"]
    assert ranked(page(client, "leaderboard", split, setting="gt_clue"))[0] == "alpha-agent"
    zero_shot = page(client, "leaderboard", split, setting="zero_shot")
    assert ranked(zero_shot) == ["beta-agent", "alpha-agent", "gamma-agent"]
    assert "40.0" in zero_shot and "80.0" not in zero_shot
    assert ranked(page(client, "leaderboard", split, setting="gt_clue")) == [
        "alpha-agent", "beta-agent",
    ]  # fmt: skip
    slices = page(client, "slices", split, setting="gt_clue", dimension="species")
    assert "gamma-agent" not in slices and 'data-value="80.0"' in slices
    slices = page(client, "slices", split, setting="zero_shot", dimension="species")
    assert "gamma-agent" in slices and 'data-value="80.0"' not in slices
    fresh = Split.objects.select_related("task").get(pk=split.pk)
    assert [e.team for e in board_cache.board(fresh, "gt_clue").entries] == ["alpha", "beta"]
    assert len(board_cache.board(fresh, "zero_shot").entries) == 3
    assert board_cache.board(fresh, "gt_clue").setting == "gt_clue"


def test_a_task_with_settings_shows_a_selector_keeping_the_query(client, visual, monkeypatch):
    split = visual["split"]
    html = page(client, "slices", split, setting="gt_clue", dimension="species",
                metric="idk_rate")  # fmt: skip
    selector = html.split('<nav class="tabs" id="settings"')[1].split("</nav>")[0]
    assert re.findall(r">(\w+)</a>", selector) == list(SETTINGS)
    assert re.findall(r'aria-current="page">(\w+)<', selector) == ["gt_clue"]
    assert '"?dimension=species&amp;metric=idk_rate&amp;setting=one_in_5"' in selector
    assert '<input type="hidden" name="setting" value="gt_clue">' in html
    # the tabs to the other pages keep the setting
    assert (
        reverse("leaderboard:compare", args=["crag-mm-2026", "visual-rag", "validation"])
        + ("?setting=gt_clue")
        in html
    )
    monkeypatch.setattr(boards, "ENTRIES_PER_PAGE", 1)
    first = page(client, "leaderboard", split, setting="gt_clue")
    assert ranked(first) == ["alpha-agent"]
    assert 'rel="next" href="?setting=gt_clue&amp;page=2"' in first
    assert "export.csv?setting=gt_clue" in first
    second = page(client, "leaderboard", split, setting="gt_clue", page="2")
    assert ranked(second) == ["beta-agent"]
    selector = second.split('id="settings"')[1].split("</nav>")[0]
    assert "page=" not in selector, "another setting's board has its own pages"
    compare = page(client, "compare", split, setting="zero_shot")
    assert "gamma-agent" in compare and 'id="settings"' in compare
    assert "gamma-agent" not in page(client, "compare", split, setting="gt_clue")


def test_a_task_without_settings_looks_as_before(client, teams, splits, make_entry):
    make_entry(teams["alpha"], splits["public-test"], 0.4, method="alpha-rag")
    public = splits["public-test"]
    for name in ("leaderboard", "slices", "compare"):
        html = page(client, name, public)
        assert 'id="settings"' not in html and "setting=" not in html
        assert "Across settings" not in html
    assert page(client, "leaderboard", public, setting="") == page(client, "leaderboard", public)
    body = json.loads(page(client, "export-json", public))
    assert body["setting"] == "" and body["settings"] == [""]
    assert body["entries"][0]["derived"] == {}
    for name in ("leaderboard", "export-json"):
        assert client.get(url(name, public, setting="gt_clue")).status_code == 404


@pytest.mark.parametrize("name", ["leaderboard", "slices", "compare", "export-csv", "export-json"])
def test_an_unknown_setting_is_not_found(client, visual, name):
    assert client.get(url(name, visual["split"], setting="gt_clue")).status_code == 200
    missing = client.get(url(name, visual["split"], setting="one_in_9"))
    assert missing.status_code == 404
    assert "has no setting &#x27;one_in_9&#x27;: its settings are zero_shot" in (
        missing.content.decode()
    )


def test_the_unknown_setting_message_names_the_valid_ones(visual, splits):
    with pytest.raises(board_cache.UnknownSetting, match="zero_shot, gt_clue, non_clue, one_in_5"):
        board_cache.chosen_setting(visual["split"], "retrieval")
    with pytest.raises(board_cache.UnknownSetting, match="has no settings"):
        board_cache.chosen_setting(splits["validation"], "gt_clue")
    assert board_cache.chosen_setting(visual["split"], None) == "zero_shot"


def test_the_leaderboard_shows_gcue_across_settings(client, visual):
    html = page(client, "leaderboard", visual["split"], setting="gt_clue")
    across = html.split("<h2>Across settings</h2>")[1]
    assert '<th class="num">gCUE@5</th>' in across
    rows = cells(across, "across-settings")
    assert [row[:2] for row in rows] == [["|alpha", "|alpha-agent"], ["|beta", "|beta-agent"]]
    assert rows[0][2] == f' class="num"|{ALPHA_GCUE:.3f}' == ' class="num"|0.714'
    title, dash = rows[1][2].split("|")
    # the benchmark's own reason for this entry (beta's GT-clue accuracy equals its baseline)
    assert dash == "—" and 'title="undefined: the GT-clue accuracy equals the baseline B"' in title
    zero_shot = page(client, "leaderboard", visual["split"], setting="zero_shot")
    teams = [row[0] for row in cells(zero_shot, "across-settings")]
    assert teams == ["|beta", "|alpha"], "gamma has no gCUE: no row"


def test_exports_carry_the_setting_and_the_derived_scores(client, visual):
    split = visual["split"]
    body = json.loads(page(client, "export-json", split, setting="gt_clue"))
    assert body["setting"] == "gt_clue" and body["settings"] == list(SETTINGS)
    derived = {e["method_name"]: e["derived"] for e in body["entries"]}
    assert derived["alpha-agent"] == {"gcue@5": pytest.approx(ALPHA_GCUE)}
    assert derived["beta-agent"] == {"gcue@5": None}
    zero_shot = json.loads(page(client, "export-json", split))
    assert zero_shot["setting"] == "zero_shot"
    assert {e["method_name"]: e["derived"] for e in zero_shot["entries"]}["gamma-agent"] == {}
    response = client.get(url("export-csv", split, setting="gt_clue"))
    assert "visual-rag-validation-gt_clue.csv" in response["Content-Disposition"]
    reader = csv.DictReader(io.StringIO(response.content.decode()))
    fields = list(reader.fieldnames or ())
    assert fields.index("gcue@5") > fields.index("rouge1_recall")
    assert fields.index("gcue@5") < fields.index("paper_url")
    assert "recall@5" not in fields, "a retrieval metric: not in gt_clue's runs"
    rows = {r["method_name"]: r for r in reader}
    assert float(rows["alpha-agent"]["gcue@5"]) == pytest.approx(ALPHA_GCUE)
    assert rows["beta-agent"]["gcue@5"] == "" and rows["alpha-agent"]["accuracy"] == "80.0"


def test_the_api_reads_the_setting_asked_for(visual, teams, splits, make_entry):
    api = APIClient()
    path = reverse("api:split-leaderboard", args=[visual["split"].pk])
    body = api.get(path, {"setting": "gt_clue"}).json()
    assert body["setting"] == "gt_clue" and body["settings"] == list(SETTINGS)
    assert [e["method_name"] for e in body["entries"]] == ["alpha-agent", "beta-agent"]
    assert body["entries"][0]["derived"]["gcue@5"] == pytest.approx(ALPHA_GCUE)
    assert body["entries"][1]["derived"] == {"gcue@5": None}
    default = api.get(path).json()
    assert default["setting"] == "zero_shot" and len(default["entries"]) == 3
    assert default["entries"][2]["derived"] == {}
    refused = api.get(path, {"setting": "one_in_9"})
    assert refused.status_code == 400
    assert "zero_shot, gt_clue, non_clue, one_in_5" in refused.json()["setting"][0]
    make_entry(teams["alpha"], splits["public-test"], 0.4, method="alpha-rag")
    crag = api.get(reverse("api:split-leaderboard", args=[splits["public-test"].pk])).json()
    assert crag["setting"] == "" and crag["entries"][0]["derived"] == {}


def test_the_command_line_asks_for_and_shows_a_setting(visual):
    body = (
        APIClient()
        .get(reverse("api:split-leaderboard", args=[visual["split"].pk]), {"setting": "gt_clue"})
        .json()
    )
    text = cli.format_leaderboard(body)
    first = text.splitlines()[0]
    assert first.startswith("crag-mm-2026/visual-rag/validation [gt_clue]: ranked by Accuracy")
    assert "Recall@5" not in text.splitlines()[1], "a column its runs lack"
    assert re.search(r"alpha\s+alpha-agent\s+gcue@5=0\.714", text)
    assert re.search(r"beta\s+beta-agent\s+gcue@5=-", text)

    class Recording:
        def split_id(self, *args: str) -> int:
            return 7

        def call(self, method: str, path: str, **kwargs: object) -> dict:
            self.asked = (method, path, kwargs)
            return body

    client = Recording()
    args = cli.parser().parse_args(
        ["leaderboard", "c", "visual-rag", "validation", "--setting", "gt_clue"]
    )
    args.run(client, args)
    assert client.asked == ("GET", "splits/7/leaderboard/", {"params": {"setting": "gt_clue"}})
    args = cli.parser().parse_args(["leaderboard", "c", "visual-rag", "validation"])
    args.run(client, args)
    assert client.asked[2] == {"params": {}}


@pytest.fixture
def invalid_answers(visual, make_user, teams) -> dict:
    """An answer that broke the benchmark in a gt_clue run on validation and on private test."""
    private = Split.objects.create(
        task=visual["task"], kind=Split.Kind.PRIVATE_TEST,
        reveal_at=timezone.now() + timedelta(days=7),
    )  # fmt: skip
    public_run = visual["runs"]["alpha", "gt_clue"]
    private_run = make_run(public_run.submission, private, "gt_clue", 66.0)
    for run in (public_run, private_run):
        ItemAnswer.objects.create(
            run=run, group="gt_clue", item_key="q1", position=0, response="",
            outcome=ItemAnswer.Outcome.INVALID, problem=INVALID_PROBLEM,
        )  # fmt: skip
    return {"public": public_run, "private": private_run, "alice": make_user(team=teams["alpha"])}


def test_the_run_page_shows_its_setting_and_why_an_answer_broke_the_protocol(
    client, invalid_answers
):
    client.force_login(invalid_answers["alice"])
    html = page_of_run(client, invalid_answers["public"])
    assert '<span id="run-setting">gt_clue</span>' in html
    assert "broke the protocol" in html and INVALID_PROBLEM in html
    scores = html.split("<h2>Scores</h2>")[1].split("</table>")[0]
    assert "Accuracy" in scores and "80.0" in scores
    assert "Recall@5" not in scores, "a retrieval metric: not in a gt_clue run"


def test_a_private_runs_problems_are_shown_no_more_than_its_answers(
    client, invalid_answers, make_user, challenge
):
    client.force_login(invalid_answers["alice"])
    html = page_of_run(client, invalid_answers["private"])
    assert "gt_clue" in html and "never shown" in html
    assert INVALID_PROBLEM not in html and "broke the protocol" not in html
    organiser = make_user()
    challenge.organisers.add(organiser)
    client.force_login(organiser)
    assert INVALID_PROBLEM in page_of_run(client, invalid_answers["private"])


def page_of_run(client, run: EvaluationRun) -> str:
    response = client.get(reverse("leaderboard:run", args=[run.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_a_sort_the_other_setting_lacks_is_dropped_from_its_link(client, visual):
    split, task = visual["split"], visual["split"].task
    task.settings = {"evaluated": ["retrieval", *SETTINGS]}
    task.save()
    html = page(client, "leaderboard", split, setting="retrieval", sort="recall@5", dir="asc")
    selector = html.split('<nav class="tabs" id="settings"')[1].split("</nav>")[0]
    found = re.findall(r'href="\?([^"]*)"[^>]*>(\w+)</a>', selector)
    links = {name: href for href, name in found}
    assert links["retrieval"] == "sort=recall%405&amp;dir=asc&amp;setting=retrieval"
    assert links["zero_shot"] == "setting=zero_shot"  # its board has no recall@5 column
    by_accuracy = page(client, "leaderboard", split, setting="retrieval", sort="accuracy")
    assert "sort=accuracy&amp;setting=zero_shot" in by_accuracy  # a column both boards have
