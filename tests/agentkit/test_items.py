"""Protocol v3 items (Visual-RAG) through agentkit's real server, with the example agents on the
generated sample: what each setting sends, bad replies as clear errors, and the scores the
colour agent and the IDK agent get."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentkit.items import VisualRAGItem, check_item_responses
from evaluator.benchmarks.visual_rag import VisualRAG
from evaluator.benchmarks.visual_rag.agent import (
    MAX_ANSWER_CHARS,
    AgentItem,
    SettingPlan,
    agent_item,
    given_images,
    read_response,
)
from evaluator.benchmarks.visual_rag.items import VisualSplit
from evaluator.judges import MemoryCache, make_judge
from evaluator.seam.agent_plan import RequestContext

REPO = Path(__file__).resolve().parents[2]
SETTINGS = ("retrieval", "zero_shot", "gt_clue", "non_clue", "one_in_3", "topk_5")


@pytest.fixture(scope="module")
def split(visual_rag_sample: Path) -> VisualSplit:
    return VisualRAG().load_split(visual_rag_sample / "validation")


def request_item(split: VisualSplit, item: AgentItem) -> dict[str, Any]:
    """The item as the runner sends it (the benchmark's plan builds it), with its files'
    absolute paths on this machine in place of the container's."""
    plan = SettingPlan(split, item.setting)
    paths = [str(path.resolve()) for path in plan.image_files(item)]
    return plan.requests([item], [paths], RequestContext("items"))["items"][0]


def test_each_setting_gives_the_papers_images_and_no_gold(split: VisualSplit) -> None:
    query = split.queries[0]
    clue, *_ = given_images(query, "gt_clue")
    assert clue in query.clues
    (other,) = given_images(query, "non_clue")
    assert other not in query.clues
    one_in_3, one_in_5 = given_images(query, "one_in_3"), given_images(query, "one_in_5")
    assert one_in_3[0] == clue and one_in_5[:3] == one_in_3 and len(one_in_5) == 5
    assert not set(one_in_5[1:]) & query.clues and one_in_5[1] == other
    assert given_images(query, "zero_shot") == ()
    topk = agent_item(query, "topk_5")
    assert topk.k == 5 and topk.candidates == query.candidates and topk.images == ()
    assert agent_item(query, "gt_clue").candidates == ()
    text = json.dumps(request_item(split, agent_item(query, "retrieval")))
    assert not any(answer in text for answer in query.answers)  # gold never sent
    assert given_images(query, "gt_clue", seed=0) == given_images(query, "gt_clue", seed=0)


@pytest.mark.parametrize(
    ("response", "error"),
    [
        ("orange", "not an object"),
        ({"answer": 3}, "answer is not a string"),
        ({"answer": "x" * (MAX_ANSWER_CHARS + 1)}, "longer than"),
        ({"answer": "x", "ranking": "a b"}, "ranking is not a list"),
        ({"answer": "x", "secret": "the private queries"}, "field(s) other than"),
        ({"answer": "x"}, "needs a ranking"),
    ],
)
def test_a_bad_reply_is_an_item_error_in_podiums_words(
    split: VisualSplit, response: Any, error: str
) -> None:
    item = agent_item(split.queries[0], "retrieval")
    prediction, problem = read_response(item, response)
    assert problem is not None and error in problem
    assert "private" not in problem and "orange" not in problem  # never the agent's bytes
    assert prediction.answer == "" and prediction.ranking == ()


@pytest.mark.parametrize(
    ("response", "logged"),
    [
        ("orange", "must be a dict with a str 'answer'"),
        ({"answer": 3}, "must be a dict with a str 'answer'"),
        ({"answer": "x" * (MAX_ANSWER_CHARS + 1)}, "'answer' is longer than"),
        ({"answer": "x", "ranking": "a b"}, "'ranking' must be a list of str"),
        ({"answer": "x", "secret": "s"}, "unknown key 'secret'"),
        ({"answer": "x"}, "needs a 'ranking' (retrieval setting)"),
        ({"answer": "x", "ranking": ["a"]}, None),
    ],
)
def test_agentkit_and_podium_check_a_reply_alike(
    split: VisualSplit, capsys: pytest.CaptureFixture[str], response: Any, logged: str | None
) -> None:
    """The one check (``agentkit.visual_rag_reply``): agentkit logs what Podium refuses."""
    item = agent_item(split.queries[0], "retrieval")
    kit_item = VisualRAGItem(item.item_id, item.setting, item.question, [], [], None)
    assert check_item_responses([response], [kit_item]) == [response]
    log = capsys.readouterr().err
    assert (logged in log) if logged else log == ""
    assert (read_response(item, response)[1] is None) == (logged is None)


def test_a_good_reply_is_a_prediction(split: VisualSplit) -> None:
    query = split.queries[0]
    item = agent_item(query, "gt_clue")
    prediction, problem = read_response(item, {"answer": "blue", "ranking": ["a"]})
    assert problem is None and prediction.answer == "blue" and prediction.ranking is None
    assert (prediction.query_id, prediction.setting) == (query.query_id, "gt_clue")


def run_agent(start_agent: Any, split: VisualSplit, example: str) -> dict[str, Any]:
    """Every (setting, query) through the example's agentkit server, then scored."""
    source = (REPO / "examples" / "agents" / example / "agent.py").read_text()
    spec = {"visual-rag-colour": "agent:ColourAgent", "visual-rag-idk": "agent:IDKAgent"}[example]
    agent = start_agent(source, spec=spec)
    status, ready = agent.wait_loaded()
    assert status == 200 and ready["kit"] == "items", agent.output()
    predictions = {}
    items = [agent_item(query, setting) for setting in SETTINGS for query in split.queries]
    size = ready["batch_size"]
    for start in range(0, len(items), size):
        chunk = items[start : start + size]
        body = {
            "batch_id": f"b{start}",
            "deadline_s": 30.0,
            "protocol": "visual-rag",
            "items": [request_item(split, item) for item in chunk],
        }
        status, reply = agent.post(body)
        assert status == 200, reply
        for item, response in zip(chunk, reply["responses"], strict=True):
            prediction, problem = read_response(item, response)
            assert problem is None, problem
            predictions[item.item_id] = prediction
    benchmark = VisualRAG(SETTINGS)
    judge = make_judge("rules", benchmark.rubric)
    graded = benchmark.grade(split, predictions, judge, MemoryCache(), progress=False)
    return benchmark.aggregate(graded)


def test_the_colour_agent_retrieves_and_answers_colour_questions(
    start_agent: Any, split: VisualSplit
) -> None:
    scores = run_agent(start_agent, split, "visual-rag-colour")
    settings = scores["settings"]
    assert scores["retrieval"]["hit@5"] >= 60.0
    assert settings["zero_shot"]["accuracy"] == 0.0 and settings["zero_shot"]["idk_rate"] == 100
    assert settings["gt_clue"]["accuracy"] > settings["non_clue"]["accuracy"]
    assert settings["retrieval"]["accuracy"] > 0.0
    assert scores["gcue"]["gcue@3"] is not None


def test_the_idk_agent_scores_zero_and_ranks_as_given(start_agent: Any, split: VisualSplit) -> None:
    scores = run_agent(start_agent, split, "visual-rag-idk")
    assert all(block["accuracy"] == 0.0 for block in scores["settings"].values())
    assert all(block["idk_rate"] == 100.0 for block in scores["settings"].values())
    assert scores["gcue"] == {"gcue@3": None}
    assert "equals the baseline" in scores["gcue_undefined"]["gcue@3"]


def test_a_turns_batch_to_an_items_agent_is_a_protocol_error(start_agent: Any) -> None:
    source = (REPO / "examples" / "agents" / "visual-rag-idk" / "agent.py").read_text()
    agent = start_agent(source, spec="agent:IDKAgent")
    agent.wait_loaded()
    body = {"batch_id": "b", "deadline_s": 5, "turns": [{"session_id": "s", "interaction_id": "i",
            "turn_idx": 0, "query": "q", "image_path": None, "message_history": []}]}  # fmt: skip
    status, reply = agent.post(body)
    assert status == 500 and "answers items" in reply["error"]
    status, reply = agent.post({"batch_id": "b", "protocol": "mrag", "items": [{}]})
    assert status == 400 and "protocol must be one of" in reply["error"]
    bad_item = {"item_id": "x", "setting": "gt_clue", "question": "q", "images": [{"id": "a"}]}
    status, reply = agent.post({"batch_id": "b", "protocol": "visual-rag", "items": [bad_item]})
    assert status == 400 and "items[0].images[0].path" in reply["error"]


BAD_ITEM_AGENT = """
class Agent:
    def get_batch_size(self):
        return 4

    def batch_answer(self, items):
        replies = [{"answer": "red", "ranking": []} for _ in items]
        replies[1] = {"answer": {1, 2}}  # not JSON, not the schema
        replies[2] = {"answer": "red", "secret": "x"}
        return replies
"""


def test_a_bad_item_costs_that_item_only_and_is_named_in_the_log(
    start_agent: Any, split: VisualSplit
) -> None:
    agent = start_agent(BAD_ITEM_AGENT, spec="agent:Agent")
    status, ready = agent.wait_loaded()
    assert status == 200 and ready["kit"] == "items", agent.output()
    chunk = [agent_item(query, "gt_clue") for query in split.queries[:3]]
    body = {
        "batch_id": "b1",
        "deadline_s": 30.0,
        "protocol": "visual-rag",
        "items": [request_item(split, item) for item in chunk],
    }
    status, reply = agent.post(body)
    assert status == 200, reply
    assert reply["responses"] == [
        {"answer": "red", "ranking": []},
        None,
        {"answer": "red", "secret": "x"},
    ]
    problems = [read_response(i, r)[1] for i, r in zip(chunk, reply["responses"], strict=True)]
    assert problems[0] is None and problems[1] == "the response is not an object {answer, ranking}"
    assert problems[2] == "the response has 1 field(s) other than answer and ranking"
    log = agent.output()
    assert "response 1 (gt_clue/" in log and "unknown key 'secret'" in log
