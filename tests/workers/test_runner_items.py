"""Visual-RAG items through the real runner and sandbox: given images and candidate pools as
files, one run per setting, and a reply that breaks the schema costing its item only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from evaluator.benchmarks.visual_rag import VisualRAG
from evaluator.benchmarks.visual_rag.items import VisualSplit
from tests.workers.conftest import TEST_LIMITS, TEST_POLICY, Recorder
from workers.runner import run_agent

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def split(visual_rag_sample: Path) -> VisualSplit:
    return VisualRAG().load_split(visual_rag_sample / "validation")


def run(image, split: VisualSplit, setting: str, recorder: Recorder, answered=None):
    benchmark = VisualRAG((setting,))
    plan = benchmark.agent_plan(split, "visual-rag", answered or {})
    report = run_agent(
        image, plan, "visual-rag", TEST_LIMITS, recorder, policy=TEST_POLICY, answered=answered
    )
    return benchmark, report


def test_the_colour_agent_answers_every_query_of_a_setting_with_a_ranking(
    agent_image, split: VisualSplit, no_leftovers
) -> None:
    recorder = Recorder()
    benchmark, report = run(
        agent_image("examples/agents/visual-rag-colour"), split, "retrieval", recorder
    )
    assert report.status == "completed", report.failure_reason
    assert report.kit == "items"
    assert [r.key for r in recorder.results] == benchmark.split_keys(split)
    assert {r.outcome for r in recorder.results} == {"answered"}
    assert all(r.group == "retrieval" for r in recorder.results)
    hits = 0
    for result, query in zip(recorder.results, split.queries, strict=True):
        prediction = benchmark.stored_prediction(split, result.key, result.response)
        assert prediction.ranking and set(prediction.ranking) <= set(query.candidates)
        hits += bool(set(prediction.ranking[:5]) & query.clues)
    assert hits >= len(split.queries) * 0.6  # it really looked at the candidates' pixels


def test_an_item_that_breaks_the_schema_is_invalid_and_the_rest_go_on(
    agent_image, split: VisualSplit, no_leftovers
) -> None:
    recorder = Recorder()
    image = agent_image("agents/items_mixed")
    _, report = run(image, split, "one_in_3", recorder)
    assert report.status == "completed", report.failure_reason
    outcomes = [r.outcome for r in recorder.results]
    assert len(outcomes) == len(split.queries)
    assert outcomes == [("invalid" if i % 4 == 2 else "answered") for i in range(len(outcomes))]
    for result in recorder.results:
        if result.outcome == "invalid":
            assert result.problem == "the response's answer is not a string"
            assert json.loads(result.response) == {"answer": ""}
        else:  # every given image was readable: the clue and two non-clues
            assert json.loads(result.response) == {"answer": "one_in_3 3 True"}
    assert report.counts() == {
        "answered": outcomes.count("answered"),
        "timeout": 0,
        "error": 0,
        "invalid": outcomes.count("invalid"),
    }

    # resumed: only what is not stored yet is asked again
    answered = {r.key: r.response for r in recorder.results[:10]}
    again = Recorder()
    _, report = run(image, split, "one_in_3", again, answered=answered)
    assert report.resumed_items == 10
    assert [r.key for r in again.results] == [r.key for r in recorder.results[10:]]


def test_candidate_pools_are_readable_in_top_k(
    agent_image, split: VisualSplit, no_leftovers, tmp_path: Path
) -> None:
    recorder = Recorder()
    _, report = run(agent_image("agents/items_mixed"), split, "topk_5", recorder)
    assert report.status == "completed", report.failure_reason
    answered = [r for r in recorder.results if r.outcome == "answered"]
    assert answered and all(json.loads(r.response)["answer"] == "topk_5 0 True" for r in answered)


def test_an_agent_searches_only_its_items_candidates_through_podium(
    agent_image, split: VisualSplit, tmp_path: Path, no_leftovers
) -> None:
    from workers.search.candidates import TEXT_NEEDS_CLIP, CandidateEmbeddings
    from workers.search.encoders import ColourImageEncoder
    from workers.search.engine import SearchEngine
    from workers.search.process import SearchProcess

    recorder = Recorder()
    benchmark = VisualRAG(("retrieval",))
    plan = benchmark.agent_plan(split, "visual-rag", {})
    engine = SearchEngine(None, image_encoder="colour", cache_dir=tmp_path / "cache")
    with SearchProcess(engine.spec) as search:
        report = run_agent(
            agent_image("agents/candidate_search"),
            plan,
            "visual-rag",
            TEST_LIMITS,
            recorder,
            search=search,
            policy=TEST_POLICY,
        )
    assert report.status == "completed", report.failure_reason
    assert {r.outcome for r in recorder.results} == {"answered"}
    # the run's candidates were embedded before the agent started: on disk now
    assert len(list((tmp_path / "cache" / "candidates").rglob("*.npy"))) == len(
        {image for query in split.queries for image in query.candidates}
    )
    direct = CandidateEmbeddings(ColourImageEncoder)
    for result, query in zip(recorder.results, split.queries, strict=True):
        reply = json.loads(result.response)
        files = [(image, str(split.image_path(image))) for image in query.candidates]
        with Image.open(files[0][1]) as first:
            expected = direct.rank(files, first, 30)
        assert reply["ranking"] == [r["id"] for r in expected]  # Podium's ranking, its own items
        assert reply["ranking"][0] == query.candidates[0]
    answers = [json.loads(r.response)["answer"] for r in recorder.results]
    assert answers[0] == f"refused: {TEXT_NEEDS_CLIP}"
    assert answers[1].startswith("refused: item 'retrieval/not-in-this-batch' is not in the batch")
    assert set(answers[2:]) == {"searched"}
