"""MRAG-Suite counts as RAGChecker counts by default: an item retrieved twice is two items, a
claim is labelled where it occurs (each list its own checks); Podium's ``distinct`` counting
retrieves the same content once and checks each claim once per text. Expected figures by hand
from RAGChecker's definitions (``ragchecker.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluator.benchmarks.mrag_suite import MragSuite
from evaluator.benchmarks.mrag_suite.checks import AnswerCase
from evaluator.benchmarks.mrag_suite.diagnosis import diagnose_answers
from evaluator.benchmarks.mrag_suite.items import Evidence, MragItem
from evaluator.benchmarks.mrag_suite.judging import MragRubric
from evaluator.benchmarks.mrag_suite.modes import MragAnswer
from evaluator.benchmarks.mrag_suite.ragchecker import diagnose
from evaluator.benchmarks.mrag_suite.summary import counting_notices
from evaluator.judges import MemoryCache, make_judge
from evaluator.judges.openai_judge import OpenAIJudge
from tests.evaluator.mrag_suite.split_data import record, write_split
from tests.fake_openai import FakeOpenAI

E, N = "Entailment", "Neutral"
ANSWER = {"short_answer": "12 million",
          "long_answer": "Revenue reached 12 million in 2021. Costs fell in 2019."}  # fmt: skip


def graded_gpd(tmp_path: Path, counting: str) -> tuple[dict[str, float], MragSuite, int]:
    """The split's item (p1 and its distractor x2 share a text) in GPD at 3 passages, no image,
    graded by the rules judge: the profile, the benchmark, the passages retrieved."""
    benchmark = MragSuite(("GPD",), passages=3, images=0, counting=counting)
    split = benchmark.load_split(write_split(tmp_path, [record()]))
    (tmp_path / "p.jsonl").write_text(json.dumps({"item_id": "q1", "mode": "GPD"} | ANSWER))
    answers, _ = benchmark.load_predictions(tmp_path / "p.jsonl", split)
    (graded,) = benchmark.grade(split, answers, make_judge("rules", benchmark.rubric), None, False)
    assert graded.profile is not None and graded.judge_error is None
    return graded.profile, benchmark, graded.retrieved


@pytest.mark.parametrize(
    ("counting", "context_precision", "items_used", "check_calls"),
    [("ragchecker", 2 / 3, 1.0, 6), ("distinct", 1 / 3, 2 / 3, 8)],
)
def test_an_item_retrieved_twice_counts_twice_unless_counted_distinct(
    tmp_path: Path, counting: str, context_precision: float, items_used: float, check_calls: int
) -> None:
    # The rules judge: one claim per sentence, Entailment when every word is in the text.
    # Reference claims g0 "Revenue reached 12 million in 2021", g1 "The chart shows growth";
    # response claims r0 = g0 and r1 "Costs fell in 2019". ragchecker retrieves p1, x1 and x2
    # (x2's text is p1's); distinct p1, x1, x3. p1 (and x2) entail g0 and r0, x1 entails r1.
    profile, benchmark, passages = graded_gpd(tmp_path, counting)
    assert passages == 3
    # context_precision = items entailing a reference claim / |C|: ragchecker (p1, x2) / 3,
    # distinct (p1) / 3; items_used = items entailing a response claim / |C|: 3/3, 2/3
    assert profile["context_precision"] == pytest.approx(context_precision)
    assert profile["items_used"] == pytest.approx(items_used)
    assert profile["context_precision_text"] == pytest.approx(context_precision)
    # the rest does not depend on the counting: precision = r0 / 2, recall = g0 / 2,
    # claim_recall = g0 / 2, faithfulness = (r0, r1) / 2, noise in irrelevant items = r1 (not
    # by the reference, only by x1) / 2; no image: every image figure is 0
    assert (profile["precision"], profile["recall"], profile["claim_recall"]) == (0.5, 0.5, 0.5)
    assert (profile["faithfulness"], profile["noise_sensitivity_irrelevant"]) == (1.0, 0.5)
    assert profile["hallucination_image"] == profile["self_knowledge_image"] == 0.0
    # judge calls (the rules judge answers them, transcribed): two extractions (the short
    # answer is an exact match) and one check per (text, claim list). ragchecker: the
    # reference's claims against the answer, p1's text and x1's; the response's against the
    # reference, p1's and x1's: 6 (x2 asks exactly p1's calls: the same keys, asked once).
    # distinct: the reference's against the answer, p1, x1, x3; the response's [r0, r1]
    # against the reference and [r1] (r0 is g0, checked as the reference's) against p1, x1,
    # x3: 8
    assert benchmark.calls["requested"] == 2 + check_calls <= benchmark.calls["predicted"]


def sentences_checker(payload: dict[str, Any]) -> str:
    """An LLM-like judge that tires: in a check, only the first claim can be entailed (when
    each of its words is in the reference); extraction as the texts' scripted claims."""
    user = payload["messages"][1]["content"]
    if "<claims>" in user:
        reference = user.split("<reference>")[1].split("</reference>")[0].lower()
        lines = [line for line in user.split("<claims>")[1].splitlines() if ". " in line]
        first = lines[0].split(". ", 1)[1].replace(" | ", " ").lower().split()
        labels = [E if all(word in reference for word in first) else N]
        return json.dumps({"labels": labels + [N] * (len(lines) - 1)})
    if "Staff grew" in user:  # the long answer: A twice, then S
        return json.dumps({"claims": [CLAIM_A, CLAIM_A, ["staff", "grew", "fast"]]})
    return json.dumps({"claims": [CLAIM_A]})  # the reference explanation: A


CLAIM_A = ["revenue", "was", "12 million"]


@pytest.mark.parametrize(
    ("counting", "response_in_reference", "response_in_item"),
    [("ragchecker", (E, N, N), (E, N, N)), ("distinct", (E, E, N), (E, E, N))],
)
def test_each_occurrence_of_a_claim_is_labelled_by_its_own_lists_check(
    counting: str, response_in_reference: tuple[str, ...], response_in_item: tuple[str, ...]
) -> None:
    # The reference's claims [A]; the response's [A, A, S] (A is also the reference's). The
    # checker labels only a prompt's first claim. ragchecker (as RAGChecker's checker: each
    # list as extracted, five to a prompt): [A] against the long answer and the passage: E;
    # [A, A, S] against the reference and the passage: E, N, N. distinct: [A, S] against the
    # reference (E, N), [S] against the passage (A is checked as the reference's: E), so each
    # A takes one label: E, E, N.
    item = MragItem("q1", "Q?", "12 million", "Revenue was 12 million.",
                    (Evidence("p1", "text", "Revenue was 12 million in 2021.", gold=True),), (),
                    {})  # fmt: skip
    answer = MragAnswer("q1", "GO", "12 million", "Revenue was 12 million. Staff grew.")
    case = AnswerCase(item, answer, item.evidence)
    with FakeOpenAI() as fake:
        fake.respond = sentences_checker
        judge = OpenAIJudge(rubric=MragRubric(), base_url=fake.url, model="fake-judge",
                            api_key="k", max_retries=0, structured="none")  # fmt: skip
        cache = MemoryCache()
        (found,) = diagnose_answers([case], judge, cache, counting=counting)
        calls = fake.count
        again = diagnose_answers([case], judge, cache, counting=counting)
        assert fake.count == calls and again[0].checks == found.checks  # cached, keyed
    assert found.checks is not None
    assert found.checks.reference_in_response == (E,)
    assert found.checks.reference_in_items == ((E,),)
    assert found.checks.response_in_reference == response_in_reference
    assert found.checks.response_in_items == (response_in_item,)
    # two extractions and four checks either way ([A] twice, [A, A, S] or [A, S] and [S])
    assert calls == 2 + 4 and len(found.requests) == 2 + 4
    metrics = diagnose(found.checks)
    if counting == "ragchecker":
        # RAGChecker over R = [A, A, S]: precision = 1/3 (the first A); faithfulness = 1/3;
        # hallucination = claims entailed neither by the item nor by the reference = 2/3
        assert metrics["precision"] == metrics["faithfulness"] == pytest.approx(1 / 3)
        assert metrics["hallucination"] == pytest.approx(2 / 3)
    else:  # both A entailed: 2/3, 2/3, and S alone hallucinated: 1/3
        assert metrics["precision"] == metrics["faithfulness"] == pytest.approx(2 / 3)
        assert metrics["hallucination"] == pytest.approx(1 / 3)


def test_a_run_not_counted_as_ragchecker_says_so() -> None:
    assert counting_notices({"counting": "ragchecker"}) == counting_notices({}) == []
    (notice,) = counting_notices({"counting": "distinct"})
    assert notice.startswith("NOTICE: counted distinct (Podium's reading)")
