"""The runner with Podium's search service: kit A agents search through search.sock in the
socket volume; kit B agents get the rag_context the runner computes per turn."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from evaluator.benchmarks.crag_mm.agent import TurnPlan
from evaluator.benchmarks.crag_mm.loading import load_split
from evaluator.benchmarks.crag_mm.sample import write_sample
from tests.workers.conftest import REPO, TEST_LIMITS, TEST_POLICY, IdentityTruncator, Recorder
from workers.outcomes import ItemResult
from workers.runner import run_agent

pytestmark = pytest.mark.docker
TASK = "multi-source-augmentation"


@pytest.fixture(scope="session")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample") / "data"
    write_sample(root)
    return root


@pytest.fixture(scope="session")
def search(sample, tmp_path_factory):
    from workers.search.engine import SearchEngine
    from workers.search.process import SearchProcess

    engine = SearchEngine(sample / "corpus", cache_dir=tmp_path_factory.mktemp("search-cache"))
    with SearchProcess(engine.spec) as process:
        yield process


def exact_matches(split, recorder: Recorder) -> int:
    truth = {t.interaction_id: t.ground_truth.strip().lower() for _, _, t in split.turns()}
    return sum(r.response.strip().lower() == truth[r.key] for r in recorder.results)


@pytest.mark.parametrize("example, kit", [("rag-kit-a", "A"), ("kit-b", "B")])
def test_examples_answer_through_podiums_search(
    example, kit, agent_image, sample, search, no_leftovers
):
    split = load_split(sample / TASK / "validation")
    recorder = Recorder()
    image = agent_image(f"examples/agents/{example}")
    report = run_agent(
        image,
        TurnPlan(split, TASK, IdentityTruncator().truncate),
        TASK,
        TEST_LIMITS,
        recorder,
        search=search,
        policy=TEST_POLICY,
    )
    assert report.status == "completed", report.failure_reason
    assert report.kit == kit
    assert report.counts()["answered"] == len(split.turns())
    # The agents only know what search told them: right answers prove search reached them.
    assert exact_matches(split, recorder) >= 3


def test_without_search_kit_b_gets_no_context(agent_image, sample, no_leftovers):
    split = load_split(sample / TASK / "validation")
    recorder = Recorder()
    report = run_agent(
        agent_image("examples/agents/kit-b"),
        TurnPlan(split, TASK, IdentityTruncator().truncate),
        TASK,
        TEST_LIMITS,
        recorder,
        policy=TEST_POLICY,
    )
    assert report.status == "completed", report.failure_reason
    assert exact_matches(split, recorder) == 0


def test_cli_serves_search_from_a_corpus(agent_image, sample, tmp_path, no_leftovers):
    task = "single-source-augmentation"
    split_dir = sample / task / "validation"
    image = agent_image("examples/agents/rag-kit-a")
    out = tmp_path / "predictions.jsonl"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "workers.cli",
            "--image",
            image.ref,
            "--split",
            str(split_dir),
            "--task",
            task,
            "--corpus",
            str(sample / "corpus"),
            "--out",
            str(out),
            "--report",
            str(tmp_path / "report.json"),
            "--memory",
            "256m",
            "--cpus",
            "1",
            "--no-progress",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PODIUM_SEARCH_CACHE": str(tmp_path / "cache")},
    )
    assert result.returncode == 0, result.stderr
    split = load_split(split_dir)
    recorder = Recorder()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    recorder(
        [
            ItemResult(r["interaction_id"], r["session_id"], 0, r["response"], "answered", 0.0)
            for r in records
        ]
    )
    assert len(recorder.results) == len(split.turns())
    assert exact_matches(split, recorder) >= 3


def test_each_batch_is_allowed_its_searches_and_no_more(
    agent_image, sample, search, no_leftovers, monkeypatch
):
    """The runner gives the search service each batch's allowance as it sends the batch; with
    none left, the agent's searches are refused and its turns still answered."""
    import dataclasses

    from workers.search.process import SearchSocket

    allowed = []
    original = SearchSocket.allow

    def recording(self, searches, candidates=None):
        assert not candidates  # CRAG-MM items have no candidates to search among
        allowed.append(searches)
        original(self, searches, candidates)

    monkeypatch.setattr(SearchSocket, "allow", recording)
    split = load_split(sample / TASK / "validation")
    recorder = Recorder()
    limits = dataclasses.replace(TEST_LIMITS, searches_per_item=1)
    report = run_agent(
        agent_image("examples/agents/rag-kit-a"),
        TurnPlan(split, TASK, IdentityTruncator().truncate),
        TASK,
        limits,
        recorder,
        search=search,
        policy=TEST_POLICY,
    )
    assert report.status == "completed", report.failure_reason
    assert sum(allowed) == len(split.turns()) and all(a >= 1 for a in allowed)
    assert report.counts()["answered"] + report.counts()["error"] == len(split.turns())
