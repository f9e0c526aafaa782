"""Grading CRAG-MM turns: truncation, both missing rules, exact match, the judge and its cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluator.benchmarks import get_benchmark, names
from evaluator.benchmarks.crag_mm import CragMM
from evaluator.benchmarks.crag_mm.grading import (
    grade,
    is_exact_match,
    is_missing_kit_a,
    is_missing_kit_b,
)
from evaluator.benchmarks.crag_mm.prompt import CragMMRubric
from evaluator.benchmarks.crag_mm.records import Conversation, Prediction, Split, Turn, Verdict
from evaluator.benchmarks.crag_mm.truncation import TokenizerTruncator, load_truncator
from evaluator.judges import MemoryCache, OpenAIJudge, RulesJudge, SQLiteCache
from evaluator.records import EvaluatorError
from tests.fake_openai import FakeOpenAI

RUBRIC = CragMMRubric()


@pytest.fixture(scope="module")
def truncator() -> TokenizerTruncator:
    loaded = load_truncator()
    assert isinstance(loaded, TokenizerTruncator)
    return loaded


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(reply="WRONG") as fake:
        yield fake


def llm_judge(server: FakeOpenAI, **options) -> OpenAIJudge:
    settings = {"max_retries": 0, "attempt_timeout_s": 5.0, "total_timeout_s": 10.0} | options
    return OpenAIJudge(
        rubric=RUBRIC,
        base_url=server.url,
        model="fake-judge",
        api_key="test",
        concurrency=4,
        **settings,
    )


def make_split(*conversations: tuple[str, bool, list[tuple[str, str, str]]]) -> Split:
    """(session_id, is_ego, [(interaction_id, query, ground truth)...]) per conversation."""
    built = [
        Conversation(
            session_id=session_id,
            image="images/a.jpg" if ego else None,
            image_url=None if ego else "https://example.com/a.jpg",
            turns=tuple(
                Turn(iid, query, truth, {"domain": "food", "entity_popularity": "tail"})
                for iid, query, truth in turns
            ),
        )
        for session_id, ego, turns in conversations
    ]
    return Split(root=Path("."), conversations=built)


def answers(split: Split, **responses: str) -> dict[str, Prediction]:
    sessions = {t.interaction_id: c.session_id for c, _, t in split.turns()}
    return {iid: Prediction(sessions[iid], iid, text) for iid, text in responses.items()}


@pytest.mark.parametrize(
    ("response", "kit_a", "kit_b"),
    [
        ("I don't know", True, True),
        ("Sorry, I DON'T KNOW which one.", True, True),
        ("I don’t know", False, True),  # curly apostrophe: only kit B strips it
        ("I do not know.", False, True),
        ("i dont know", False, True),
        ("I don't  know", False, False),  # two spaces
        ("I do not\nknow", False, False),
        ("I don't-know", False, False),  # kit B reads "i dontknow"
        ("idk", False, False),
        ("Paris", False, False),
        ("", False, False),
    ],
)
def test_missing_rules_of_both_kits(response, kit_a, kit_b):
    assert is_missing_kit_a(response) is kit_a
    assert is_missing_kit_b(response) is kit_b


def test_exact_match_is_stripped_lower_cased_equality():
    assert is_exact_match("  PARIS \n", "paris")
    assert not is_exact_match("Paris.", "paris")
    assert not is_exact_match("Paris, France", "Paris")


def test_each_path_to_a_verdict(server, truncator):
    split = make_split(
        ("s1", True, [("t1", "Capital of France?", "Paris"), ("t2", "Of Italy?", "Rome")]),
        ("s2", False, [("t3", "Colour?", "red"), ("t4", "Size?", "large"), ("t5", "Q?", "x")]),
    )
    predictions = answers(
        split,
        t1="  paris ",  # exact match
        t2="I don’t know",  # missing under kit B only
        t3="It is red.",  # judged CORRECT
        t4="It is small.",  # judged WRONG
    )  # t5 has no prediction
    server.replies["It is red."] = "CORRECT"
    judge = llm_judge(server)
    graded = grade(split, predictions, judge, MemoryCache(), truncator, "kit-b", progress=False)

    assert [g.interaction_id for g in graded] == ["t1", "t2", "t3", "t4", "t5"]
    assert [g.verdict for g in graded] == [
        Verdict.CORRECT,
        Verdict.MISSING,
        Verdict.CORRECT,
        Verdict.HALLUCINATED,
        Verdict.MISSING,
    ]
    assert server.count == 2  # only t3 and t4 reach the judge
    assert [g.is_exact_match for g in graded] == [True, False, False, False, False]
    assert [g.is_miss for g in graded] == [False, True, False, False, True]
    assert graded[4].agent_response == ""
    assert [(g.session_id, g.turn_idx, g.is_ego) for g in graded] == [
        ("s1", 0, True),
        ("s1", 1, True),
        ("s2", 0, False),
        ("s2", 1, False),
        ("s2", 2, False),
    ]
    assert graded[0].labels == {"domain": "food", "entity_popularity": "tail"}
    for turn in graded:  # every row names the judge configuration, exact and missing too
        assert (turn.judge_id, turn.prompt_version, turn.prompt_hash) == (
            judge.judge_id,
            judge.prompt_version,
            judge.prompt_hash,
        )
        assert turn.judge_error is None

    kit_a = grade(split, predictions, judge, MemoryCache(), truncator, "kit-a", progress=False)
    assert kit_a[1].verdict is Verdict.HALLUCINATED  # the curly apostrophe is judged under kit A
    assert not kit_a[1].is_miss


def test_missing_answer_that_equals_the_ground_truth_keeps_its_exact_match(truncator):
    split = make_split(("s1", True, [("t1", "What does he say?", "I don't know")]))
    graded = grade(
        split,
        answers(split, t1="I don't know"),
        RulesJudge(RUBRIC),
        None,
        truncator,
        progress=False,
    )
    assert graded[0].verdict is Verdict.MISSING
    assert graded[0].is_miss and graded[0].is_exact_match and not graded[0].is_correct


def test_answers_are_truncated_before_every_check(server, truncator):
    long_answer = "Paris" + " is nice" * 40 + " I don't know"
    split = make_split(("s1", True, [("t1", "Where?", "Paris"), ("t2", "Who?", "Ada")]))
    predictions = answers(split, t1=long_answer, t2="Ada" + " x" * 200)
    graded = grade(split, predictions, llm_judge(server), None, truncator, progress=False)
    assert graded[0].agent_response == truncator.truncate(long_answer)
    assert len(graded[0].agent_response) < len(long_answer)
    assert not graded[0].is_miss  # the "I don't know" was cut off
    assert graded[0].verdict is Verdict.HALLUCINATED
    sent = [r["messages"][-1]["content"] for r in server.requests]
    assert any(graded[1].agent_response in text for text in sent)
    assert all(" x" * 100 not in text for text in sent)


def test_a_failing_judge_leaves_turns_unjudged_never_hallucinated(server, truncator):
    split = make_split(("s1", True, [("t1", "Q1?", "a"), ("t2", "Q2?", "b"), ("t3", "Q3?", "c")]))
    predictions = answers(split, t1="a", t2="wrong one", t3="wrong two")
    server.fail(500, times=2)
    graded = grade(split, predictions, llm_judge(server), None, truncator, progress=False)
    assert [g.verdict for g in graded] == [Verdict.CORRECT, Verdict.UNJUDGED, Verdict.UNJUDGED]
    assert not any(g.verdict is Verdict.HALLUCINATED for g in graded)
    assert graded[1].judge_error and "500" in graded[1].judge_error
    assert graded[0].judge_error is None


def test_rescoring_with_a_warm_sqlite_cache_makes_no_judge_calls(server, truncator, tmp_path):
    split = make_split(("s1", False, [("t1", "Q1?", "a"), ("t2", "Q2?", "b")]))
    predictions = answers(split, t1="first answer", t2="second answer")
    server.replies["first answer"] = "CORRECT"
    cold = SQLiteCache(tmp_path / "cache.sqlite")
    first = grade(split, predictions, llm_judge(server), cold, truncator, progress=False)
    cold.close()
    assert server.count == 2
    warm = SQLiteCache(tmp_path / "cache.sqlite")
    again = grade(split, predictions, llm_judge(server), warm, truncator, progress=False)
    assert server.count == 2
    assert again == first


def test_unknown_missing_variant_is_an_error(truncator):
    split = make_split(("s1", True, [("t1", "Q?", "a")]))
    with pytest.raises(EvaluatorError, match="missing variant 'kit-c'"):
        grade(split, {}, RulesJudge(RUBRIC), None, truncator, "kit-c", progress=False)


def test_benchmark_registry_and_settings(truncator):
    assert list(names()) == ["crag-mm", "m2rag", "mrag-suite", "visual-rag"]
    benchmark = get_benchmark("crag-mm", truncator=truncator, missing_variant="kit-a")
    assert isinstance(benchmark, CragMM)
    assert benchmark.settings() == {
        "truncation": truncator.name,
        "missing_variant": "kit-a",
        "counting": "paper",
    }
    with pytest.raises(
        EvaluatorError, match="unknown; known benchmarks: crag-mm, m2rag, mrag-suite, visual-rag"
    ):
        get_benchmark("mrag")
    with pytest.raises(EvaluatorError, match="counting 'kit-z'"):
        get_benchmark("crag-mm", counting="kit-z")


def test_benchmark_grades_and_scores_a_split(truncator):
    split = make_split(
        ("s1", True, [("t1", "Q?", "Paris")]),
        ("s2", False, [("t2", "Q?", "Rome")]),
    )
    benchmark = get_benchmark("crag-mm", truncator=truncator)
    graded = benchmark.grade(
        split,
        answers(split, t1="Paris", t2="I don't know"),
        RulesJudge(RUBRIC),
        None,
        progress=False,
    )
    scores = benchmark.aggregate(graded, seed=0)
    assert scores["complete"] and scores["unjudged"] == 0
    assert scores["all"]["turns"] == 2 and scores["all"]["correct"] == 1
    assert scores["all"]["miss"] == 1 and scores["ego"]["turns"] == 1
    assert scores["slices"]["entity_popularity"]["tail"]["turns"] == 2
