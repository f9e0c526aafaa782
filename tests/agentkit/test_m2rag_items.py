"""M2RAG items through agentkit's real server, with the two example agents on the generated
sample: what the plan sends (no stored score), bad items and replies as clear errors, and
the scores an image-placing agent and a text-only agent get."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluator.benchmarks.m2rag import M2RAG
from evaluator.benchmarks.m2rag.agent import QueryPlan, read_response
from evaluator.benchmarks.m2rag.items import M2Split
from evaluator.benchmarks.m2rag.sample import write_sample
from evaluator.judges import MemoryCache, make_judge
from evaluator.seam.agent_plan import RequestContext

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> M2Split:
    root = tmp_path_factory.mktemp("m2rag-sample")
    write_sample(root, seed=0)
    return M2RAG().load_split(root / "validation")


def body(split: M2Split, queries: list[Any], batch_id: str) -> dict[str, Any]:
    plan = QueryPlan(split)
    paths = [[str(p.resolve()) for p in plan.image_files(query)] for query in queries]
    return {"batch_id": batch_id, "deadline_s": 30.0,
            **plan.requests(queries, paths, RequestContext("items"))}  # fmt: skip


def test_the_request_numbers_images_from_zero_and_holds_no_stored_score(split: M2Split) -> None:
    query = split.queries[0]
    (item,) = body(split, [query], "b")["items"]
    indices = [i["index"] for page in item["pages"] for i in page["images"]]
    indices += [i["index"] for i in item["extra_images"]]
    assert indices == list(range(len(query.images)))
    assert "score" not in json.dumps(item)


def run_agent(start_agent: Any, split: M2Split, example: str, spec: str) -> dict[str, Any]:
    source = (REPO / "examples" / "agents" / example / "agent.py").read_text()
    agent = start_agent(source, spec=spec)
    status, ready = agent.wait_loaded()
    assert status == 200 and ready["kit"] == "items", agent.output()
    predictions = {}
    size = ready["batch_size"]
    for start in range(0, len(split.queries), size):
        chunk = split.queries[start : start + size]
        status, reply = agent.post(body(split, chunk, f"b{start}"))
        assert status == 200, reply
        for query, response in zip(chunk, reply["responses"], strict=True):
            prediction, problem = read_response(query.query_id, response)
            assert problem is None, problem
            predictions[query.query_id] = prediction
    benchmark = M2RAG()
    graded = benchmark.grade(split, predictions, make_judge("rules", benchmark.rubric),
                            MemoryCache(), progress=False)  # fmt: skip
    return benchmark.aggregate(graded)["all"]


def test_the_image_agent_places_relevant_images_and_the_text_agent_none(
    start_agent: Any, split: M2Split
) -> None:
    images = run_agent(start_agent, split, "m2rag-images", "agent:ImagesAgent")
    text = run_agent(start_agent, split, "m2rag-text", "agent:TextAgent")
    assert text["images"] == 0 and images["images"] > 0
    assert images["image_recall"] > 0.5 > text["image_recall"]
    assert images["failed"] == text["failed"] == 0
    assert images["overall"] > text["overall"]


def test_a_bad_item_is_refused_naming_the_field(start_agent: Any, split: M2Split) -> None:
    source = (REPO / "examples" / "agents" / "m2rag-text" / "agent.py").read_text()
    agent = start_agent(source, spec="agent:TextAgent")
    assert agent.wait_loaded()[0] == 200
    bad = body(split, split.queries[:1], "bad")
    bad["items"][0]["pages"][0]["images"] = [{"index": -1, "path": "/x", "caption": ""}]
    status, reply = agent.post(bad)
    assert status == 400 and "items[0].pages[0].images[0].index" in json.dumps(reply)
