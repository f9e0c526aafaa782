"""Every challenge under ``examples/challenges/`` is a valid bundle on its benchmark's generated
sample: it imports, passes the publish checklist, and a second import changes nothing. (The demo,
tests/e2e/test_demo.py, imports two of them and evaluates them end to end.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.demo import setup
from leaderboard.models import Challenge

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "challenges"
BENCHMARKS = {
    "crag-mm-demo": "crag-mm",
    "visual-rag-demo": "visual-rag",
    "mrag-suite-demo": "mrag-suite",
    "m2rag-demo": "m2rag",
}


def test_every_example_is_listed():
    assert sorted(p.name for p in EXAMPLES.iterdir()) == sorted(BENCHMARKS)


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_an_example_bundle_imports_and_publishes(name, tmp_path):
    root = setup.bundle(name, BENCHMARKS[name], under=tmp_path)
    checked = import_bundle(root, dry_run=True)
    assert checked.checklist == [] and not Challenge.objects.exists()
    assert import_bundle(root).version == 1
    challenge = Challenge.objects.get(slug=name)
    assert challenge.is_published and challenge.overview.startswith("# ")
    assert {t.benchmark for t in challenge.tasks.all()} == {BENCHMARKS[name]}
    assert all(t.splits.exists() for t in challenge.tasks.all())
    assert import_bundle(root).unchanged


@pytest.mark.django_db
def test_a_challenge_with_a_corpus_round_trips(tmp_path):
    from leaderboard.challenge_bundle import state
    from leaderboard.challenge_bundle.exporter import export

    import_bundle(setup.bundle("crag-mm-demo", "crag-mm", under=tmp_path))
    challenge = Challenge.objects.get()
    live = state.live(challenge)
    assert live["challenge"]["corpus"] is not None
    assert challenge.overall == {"title": "Overall ranking", "method": "average-rank"}
    export(challenge, tmp_path / "exported", private=True)
    assert (tmp_path / "exported" / "corpus.tar").is_file()
    assert import_bundle(tmp_path / "exported").unchanged
    Challenge.objects.all().delete()
    import_bundle(tmp_path / "exported")
    assert state.live(Challenge.objects.get()) == live
