"""MRAG-Suite items through agentkit's real server: the example agents (grounded, evidence-
ignoring) answer every mode of the generated sample, and their claim profiles differ as they
should; bad replies cost their item only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evaluator.benchmarks.mrag_suite import MragSuite
from evaluator.benchmarks.mrag_suite.items import MragSplit
from evaluator.benchmarks.mrag_suite.modes import MODES, MragAnswer
from evaluator.judges import MemoryCache, make_judge
from evaluator.seam.agent_plan import RequestContext

REPO = Path(__file__).resolve().parents[2]
SPECS = {"mrag-grounded": "agent:GroundedAgent", "mrag-no-evidence": "agent:NoEvidenceAgent"}


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> MragSplit:
    root = tmp_path_factory.mktemp("mrag-sample")
    MragSuite().write_sample(root / "sample", seed=0)
    return MragSuite().load_split(root / "sample" / "validation")


def run_agent(start_agent: Any, split: MragSplit, example: str) -> dict[str, Any]:
    source = (REPO / "examples" / "agents" / example / "agent.py").read_text()
    agent = start_agent(source, spec=SPECS[example])
    status, ready = agent.wait_loaded()
    assert status == 200 and ready["kit"] == "items", agent.output()
    answers: dict[str, MragAnswer] = {}
    for mode in MODES:
        plan = MragSuite().for_setting(mode).agent_plan(split, "t", {})
        for n, batch in enumerate(plan.batches(ready["batch_size"], ())):
            paths = [[str(p.resolve()) for p in plan.image_files(ref)] for ref in batch]
            body = {"batch_id": f"{mode}{n}", "deadline_s": 30.0}
            body |= plan.requests(batch, paths, RequestContext("items"))
            status, reply = agent.post(body)
            assert status == 200, reply
            for ref, stored in zip(batch, plan.read_replies(batch, reply["responses"], 0),
                                   strict=True):  # fmt: skip
                assert stored.problem is None, stored.problem
                answers[ref.key] = MragSuite().stored_prediction(split, ref.key, stored.text)
    benchmark = MragSuite()
    graded = benchmark.grade(split, answers, make_judge("rules", benchmark.rubric), MemoryCache(),
                            progress=False)  # fmt: skip
    return benchmark.aggregate(graded)


def test_the_grounded_agent_answers_from_the_gold_and_is_faithful(
    start_agent: Any, split: MragSplit
) -> None:
    scores = run_agent(start_agent, split, "mrag-grounded")["settings"]
    assert scores["GO"]["accuracy"] == 100.0 and scores["GO"]["faithfulness"] == 100.0
    assert scores["DO"]["accuracy"] < scores["GO"]["accuracy"]  # no gold, no answer
    assert scores["GO"]["hallucination"] == 0.0


def test_the_evidence_ignoring_agent_hallucinates(start_agent: Any, split: MragSplit) -> None:
    scores = run_agent(start_agent, split, "mrag-no-evidence")["settings"]
    assert all(block["faithfulness"] == 0.0 for block in scores.values())
    assert all(block["hallucination"] == 100.0 for block in scores.values())
