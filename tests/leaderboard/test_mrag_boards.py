"""An MRAG-Suite task's boards: ranked by the organiser's primary metric (one each run is
scored on), each entry's page with its MM-RAGChecker profile (all, image and text items) and
its GPD - GO gap, and the counting when it is not RAGChecker's."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.forms import model_to_dict
from django.urls import reverse

from evaluator.benchmarks.mrag_suite import MragSuite
from evaluator.judges import MemoryCache, make_judge
from leaderboard import board_store
from leaderboard.admin.settings_form import task_form
from leaderboard.models import EvaluationRun, Split, Submission, Task
from leaderboard.scores import store_scores

MODES = ("GO", "GPD")
TEAMS = {"alpha": 1, "beta": 2}  # the seed of each team's made-up answers


def sample_scores(root: Path) -> dict[tuple[str, str], Any]:
    """Each team's scores in each mode, graded by the rules judge on the generated sample."""
    MragSuite().write_sample(root / "sample")
    found = {}
    for team, seed in TEAMS.items():
        for mode in MODES:
            benchmark = MragSuite((mode,))
            split = benchmark.load_split(root / "sample" / "validation")
            # another seed per mode: the gap is not 0
            path = root / f"{team}-{mode}.jsonl"
            benchmark.write_sample_predictions(split, path, seed=seed + 10 * MODES.index(mode))
            predictions, _ = benchmark.load_predictions(path, split)
            judge = make_judge("rules", benchmark.rubric)
            graded = benchmark.grade(split, predictions, judge, MemoryCache(), progress=False)
            found[team, mode] = benchmark.aggregate(graded)
    return found


@pytest.fixture(scope="module")
def mrag_scores(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Any]:
    """In a thread of its own: the browser tests' Playwright runs an event loop in this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(sample_scores, tmp_path_factory.mktemp("mrag")).result()


@pytest.fixture
def board(challenge, teams, mrag_scores) -> Split:
    task = Task.objects.create(
        challenge=challenge, task_id="mrag", name="MRAG-Suite", benchmark="mrag-suite",
        primary_metric="accuracy", settings={"modes": list(MODES)},
        image_search_enabled=False, web_search_enabled=False,
    )  # fmt: skip
    split = Split.objects.create(task=task, kind=Split.Kind.VALIDATION, items=12)
    for team in TEAMS:
        submission = Submission.objects.create(
            team=teams[team], challenge=challenge, method_name=f"{team}-agent",
            artifact_kind=Submission.ArtifactKind.REGISTRY_REF, registry_ref="example/agent:1",
            state=Submission.State.READY,
        )  # fmt: skip
        for mode in MODES:
            run = EvaluationRun.objects.create(
                submission=submission, task=task, split=split, setting=mode,
                state=EvaluationRun.State.DONE,
            )  # fmt: skip
            store_scores(run, mrag_scores[team, mode])
    return split


def entry_url(run: EvaluationRun) -> str:
    task = run.task
    path = reverse(
        "leaderboard:entry", args=(task.challenge.slug, task.task_id, "validation", run.pk)
    )
    return f"{path}?setting={run.setting}"


def headline(mrag_scores, team: str, mode: str) -> dict[str, Any]:
    return mrag_scores[team, mode]["settings"][mode]


def test_each_entry_page_charts_its_profile_per_modality_with_the_gap(client, board, mrag_scores):
    run = EvaluationRun.objects.get(submission__method_name="alpha-agent", setting="GPD")
    html = client.get(entry_url(run)).content.decode()
    profile = html.split('<section class="entry-profile" id="profile">')[1].split("</section>")[0]
    assert "MM-RAGChecker diagnosis" in profile
    assert 'aria-label="MM-RAGChecker diagnosis"' in profile
    legend = re.findall(r"</svg>([^<]+)</span>", profile.split('<svg class="chart"')[0])
    assert legend == ["all items", "image items", "text items"]
    scores = headline(mrag_scores, "alpha", "GPD")
    # every row of the table: the metric over all, image and text items, as stored
    rows = dict(
        re.findall(r"<tr><td>([^<]+)</td>((?:<td class=\"num\">[^<]*</td>)+)</tr>", profile)
    )
    cells = {label: re.findall(r'"num">([^<]*)<', tds) for label, tds in rows.items()}
    assert cells["Precision"] == [f"{scores['precision']:.1f}", "", ""]
    assert cells["Context precision"] == [
        f"{scores[name]:.1f}"
        for name in ("context_precision", "context_precision_image", "context_precision_text")
    ]
    assert cells["Claims supported"] == [
        "",
        f"{scores['image_support']:.1f}",
        f"{scores['text_support']:.1f}",
    ]
    assert len(cells) == 3 + 9 + 2
    # a bar per number: 3 answer metrics, 9 item metrics x 3 modalities, 2 supports, 1 contradicted
    bars = re.findall(
        r'<rect class="s(\d)" x="[^"]+" y="[^"]+" width="[^"]+" height="8"><title>([^<]+)', profile
    )
    assert len(bars) == 3 + 27 + 2 + 1
    assert ("1", f"image items: {scores['context_precision_image']:.1f}") in bars
    # the GPD - GO gap of the entry's submission, across its two runs
    gap = scores["accuracy"] - headline(mrag_scores, "alpha", "GO")["accuracy"]
    assert gap != 0
    figures = dict(re.findall(r"<dt>([^<]+)</dt><dd>([^<]+)</dd>", profile))
    assert figures == {"GPD - GO accuracy gap": f"{gap:.2f}"}


def test_a_task_not_counted_as_ragchecker_says_so_on_its_pages(client, board):
    task = board.task
    challenge = reverse("leaderboard:challenge", args=(task.challenge.slug,))
    assert "counting: ragchecker" in client.get(challenge).content.decode()
    run = EvaluationRun.objects.get(submission__method_name="alpha-agent", setting="GPD")
    assert "counted" not in client.get(entry_url(run)).content.decode()
    task.settings = {"modes": list(MODES), "counting": "distinct"}
    task.save()
    assert "counting: distinct" in client.get(challenge).content.decode()
    html = unescape(client.get(entry_url(run)).content.decode())
    assert "<h3>MM-RAGChecker diagnosis, counted distinct (Podium's reading, not " in html


def test_without_both_modes_the_gap_says_why_and_crag_entries_have_no_profile(
    client, board, teams, splits, make_entry
):
    EvaluationRun.objects.filter(setting="GO").delete()
    run = EvaluationRun.objects.get(submission__method_name="beta-agent", setting="GPD")
    html = unescape(client.get(entry_url(run)).content.decode())
    (why,) = re.findall(r"<dt>GPD - GO accuracy gap</dt><dd>([^<]+)</dd>", html)
    assert "GO" in why and why != "not computed"
    crag = make_entry(teams["alpha"], splits["public-test"], 0.4)
    path = reverse(
        "leaderboard:entry", args=("crag-mm-2026", "multi-turn-qa", "public-test", crag.pk)
    )
    page = client.get(path).content.decode()
    assert page.count("<section") > 0 and 'id="profile"' not in page


def order(split: Split, mode: str) -> list[str]:
    return [e.method_name for e in board_store.entries(split, mode)]


@pytest.mark.parametrize("metric", ["context_precision_text", "hallucination", "rouge_l"])
def test_the_organisers_primary_metric_ranks_every_modes_board(board, mrag_scores, metric):
    task = board.task
    task.primary_metric = metric
    task.full_clean()
    task.save()
    lower = MragSuite().metric(metric).higher_is_better is False
    for mode in MODES:
        values = {f"{t}-agent": headline(mrag_scores, t, mode)[metric] for t in TEAMS}
        expected = sorted(values, key=lambda name: values[name], reverse=not lower)
        if len(set(values.values())) > 1:
            assert order(board, mode) == expected, (mode, values)
        assert [e.primary for e in board_store.entries(board, mode)] == sorted(
            values.values(), reverse=not lower
        )


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ("gpd_go_gap", r"'gpd_go_gap' \(GPD - GO accuracy gap\) is not a score of each run"),
        ("count", r"'count' \(Answers\) is a count, it cannot rank entries"),
        ("truthfulness", "'truthfulness' is not a metric of mrag-suite: choose one of accuracy,"),
        ("faithfulness_video", "'faithfulness_video' is not a metric of mrag-suite"),
    ],
)
def test_a_primary_metric_that_cannot_rank_is_refused_by_name(board, metric, message):
    task = board.task
    task.primary_metric = metric
    with pytest.raises(ValidationError, match=message) as refused:
        task.full_clean()
    assert list(refused.value.message_dict) == ["primary_metric"]
    assert "faithfulness_image" in refused.value.message_dict["primary_metric"][0]


def test_the_task_form_offers_the_benchmarks_ranking_metrics(board):
    task = board.task
    form = task_form("mrag-suite")(instance=task)
    choices = dict(form.fields["primary_metric"].choices)
    assert choices["faithfulness_image"] == "Faithfulness image (faithfulness_image)"
    assert "gpd_go_gap" not in choices and "count" not in choices
    assert form.initial["primary_metric"] == "accuracy"
    new = task_form("mrag-suite")()
    assert new.initial["primary_metric"] == "accuracy"  # the benchmark's, not the model's default
    data = {k: v for k, v in model_to_dict(task).items() if v is not None}
    data |= {
        "setting_modes": "GO, GPD",
        "setting_passages": 5,
        "setting_images": 5,
        "setting_counting": "ragchecker",
    }
    chosen = task_form("mrag-suite")(data={**data, "primary_metric": "f1"}, instance=task)
    assert chosen.is_valid(), chosen.errors
    chosen.save()
    assert Task.objects.get(pk=task.pk).primary_metric == "f1"
    refused = task_form("mrag-suite")(data={**data, "primary_metric": "gpd_go_gap"}, instance=task)
    assert not refused.is_valid()
    assert "Select a valid choice" in refused.errors["primary_metric"][0]
