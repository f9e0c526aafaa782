"""A bundle's ``overall`` section: stored as written, exported back and imported as the same
challenge, its changes listed like any field's; every mistake named at its line and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from leaderboard.challenge_bundle import state
from leaderboard.challenge_bundle.exporter import export
from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.models import Challenge
from tests.leaderboard.bundle_support import edit, problems, write_bundle
from tests.leaderboard.test_bundle_import import digests

pytestmark = pytest.mark.django_db

SECOND_TASK = """\
  - id: single-turn
    name: Single-turn QA
    protocol: crag-mm
    search: {image: false, web: false}
    judge: {kind: rules}
    splits:
      - {kind: validation, files: data/validation}
"""

OVERALL = """\
overall:
  title: Grand ranking
  method: mean
  tasks: [multi-turn-qa, single-turn]
  metrics: {single-turn: accuracy}
"""


@pytest.fixture
def bundle(tmp_path) -> Path:
    """Two CRAG-MM tasks and an overall ranking by the mean of their metrics."""
    root = write_bundle(tmp_path / "bundle", status="draft")
    manifest = root / "challenge.yaml"
    manifest.write_text(manifest.read_text() + SECOND_TASK + OVERALL)
    return root


def line_of(bundle: Path, text: str) -> int:
    lines = (bundle / "challenge.yaml").read_text().splitlines()
    return [i for i, line in enumerate(lines, 1) if text in line][-1]


def test_the_overall_section_is_stored_exported_and_imported_as_the_same(bundle, tmp_path):
    import_bundle(bundle)
    challenge = Challenge.objects.get()
    assert challenge.overall == {
        "title": "Grand ranking",
        "method": "mean",
        "tasks": ["multi-turn-qa", "single-turn"],
        "metrics": {"single-turn": "accuracy"},
    }
    live = state.live(challenge)
    export(challenge, tmp_path / "first", private=True)
    written = YAML(typ="safe").load((tmp_path / "first" / "challenge.yaml").read_text())
    assert written["overall"] == challenge.overall
    Challenge.objects.all().delete()
    import_bundle(tmp_path / "first")
    assert state.live(Challenge.objects.get()) == live
    export(Challenge.objects.get(), tmp_path / "second", private=True)
    assert digests(tmp_path / "first") == digests(tmp_path / "second")
    assert import_bundle(tmp_path / "second").unchanged


def test_a_changed_or_dropped_overall_section_is_listed_and_applied(bundle):
    import_bundle(bundle)
    edit(bundle, "title: Grand ranking", "title: Overall")
    assert "~ overall.title: 'Grand ranking' -> 'Overall'" in import_bundle(bundle).changes
    edit(bundle, OVERALL.replace("Grand ranking", "Overall"), "")
    outcome = import_bundle(bundle)
    assert "- overall.method: 'mean'" in outcome.changes
    assert Challenge.objects.get().overall == {}


@pytest.mark.parametrize(
    ("old", "new", "found", "message"),
    [
        (
            "tasks: [multi-turn-qa, single-turn]",
            "tasks: [multi-turn-qa, single-turns]",
            "tasks: [multi-turn-qa",
            "overall.tasks[1]: no task 'single-turns' in this bundle (tasks: multi-turn-qa, "
            "single-turn)",
        ),
        (
            "metrics: {single-turn: accuracy}",
            "metrics: {single-turn: accurracy}",
            "metrics:",
            "overall.metrics.single-turn: 'accurracy' cannot rank single-turn's runs: choose one "
            "of truthfulness, accuracy, missing, hallucination_rate, early_stop_rate, "
            "avg_successful_turns, exact_match, conversation_score",
        ),
        (
            "metrics: {single-turn: accuracy}",
            "metrics: {single-turn: turns}",
            "metrics:",
            "overall.metrics.single-turn: 'turns' cannot rank single-turn's runs: choose one of "
            "truthfulness,",
        ),
        (
            "method: mean",
            "method: average-rank",
            "metrics:",
            "overall.metrics: average-rank ranks by each task's board: metrics are for method "
            "mean only",
        ),
        (
            "tasks: [multi-turn-qa, single-turn]",
            "tasks: [multi-turn-qa]",
            "metrics:",
            "overall.metrics.single-turn: 'single-turn' is not counted (counted: multi-turn-qa)",
        ),
        (
            "metrics: {single-turn: accuracy}",
            "metrics: {single-turn: missing}",
            "metrics:",
            "overall.metrics: a mean of metrics ranked in opposite directions: multi-turn-qa: "
            "truthfulness (higher is better); single-turn: missing (lower is better)",
        ),
        (
            "metrics: {single-turn: accuracy}",
            "metrics: {single-turn: avg_successful_turns}",
            "metrics:",
            "overall.metrics: a mean of metrics on different scales: multi-turn-qa: truthfulness "
            "(signed_fraction); single-turn: avg_successful_turns (ratio)",
        ),
        (
            "metrics: {single-turn: accuracy}",
            "settings: {single-turn: gt_clue}",
            "settings:",
            "overall.settings.single-turn: single-turn has no setting 'gt_clue': it has none",
        ),
        (
            "method: mean",
            "method: median",
            "method:",
            "overall.method: 'median' is not one of ['average-rank', 'mean']",
        ),
    ],
)
def test_each_mistake_is_named_at_its_line_and_field(bundle, old, new, found, message):
    edit(bundle, old, new)
    expected = f"challenge.yaml:{line_of(bundle, found)}: {message}"
    assert any(problem.startswith(expected) for problem in problems(bundle))


def test_every_task_counts_when_none_is_named(bundle):
    edit(bundle, "  tasks: [multi-turn-qa, single-turn]\n", "")
    edit(bundle, "metrics: {single-turn: accuracy}", "metrics: {single-turn: exact_match}")
    import_bundle(bundle)
    assert "tasks" not in Challenge.objects.get().overall  # as written: every task, then too
