"""``manage.py warm_search``: a joining node builds its search indexes before its first run."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from evaluator.benchmarks.crag_mm.sample import write_sample
from leaderboard.models import Challenge
from leaderboard.pipeline.bundles import store_corpus
from tests.e2e.harness import make_task

pytestmark = pytest.mark.django_db


def _warm(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("warm_search", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_a_node_builds_the_indexes_once_and_reads_them_back(tmp_path, monkeypatch):
    cache = tmp_path / "search-cache"
    monkeypatch.setenv("PODIUM_SEARCH_CACHE", str(cache))
    write_sample(tmp_path / "sample")
    challenge = Challenge.objects.create(name="Warm", slug="warm", is_published=True)
    make_task(challenge, "single-source-augmentation", image_search_enabled=True)
    make_task(challenge, "multi-turn-qa")  # no search: nothing to warm
    store_corpus(challenge, tmp_path / "sample" / "corpus")
    bare = Challenge.objects.create(name="Bare", slug="bare", is_published=True)
    make_task(bare, "single-source-augmentation", image_search_enabled=True)  # no corpus

    out, err = _warm()
    assert "warm/single-source-augmentation: image built" in out
    assert "1 task(s) warmed" in out
    assert "bare/single-source-augmentation: search is on but the challenge has no corpus" in err
    assert any(cache.iterdir()), "the index is in this node's cache"
    out, _ = _warm("--challenge", "warm")
    assert "warm/single-source-augmentation: image read from the cache" in out


def test_an_unknown_challenge_is_named():
    with pytest.raises(CommandError, match=r"no task of challenge\(s\) \['nope'\]"):
        _warm("--challenge", "nope")
