import asyncio
from pathlib import Path

import pytest

from evaluator.benchmarks.crag_mm.prompt import CragMMRubric
from evaluator.benchmarks.crag_mm.records import Verdict
from evaluator.judges import MemoryCache, SQLiteCache, cache_key, judge_all, make_judge
from evaluator.judges.rules import RulesJudge
from evaluator.records import EvaluatorError, JudgeRequest, Judgment
from tests.fake_openai import GARBAGE, FakeOpenAI

RUBRIC = CragMMRubric()


def requests(n: int) -> list[JudgeRequest]:
    return [
        JudgeRequest(f"question {i}?", "Golden retriever", "A golden retriever") for i in range(n)
    ]


def openai_judge(server: FakeOpenAI, **options: object):
    return make_judge(
        "openai", RUBRIC, base_url=server.url, model="fake", structured="none", **options
    )


def test_identical_requests_are_judged_once_and_returned_in_order(fake_openai: FakeOpenAI) -> None:
    fake_openai.replies["question 1?"] = "WRONG"
    batch = requests(3) * 3
    judgments = judge_all(openai_judge(fake_openai, concurrency=4), batch, None, progress=False)
    assert fake_openai.count == 3
    assert [j.verdict for j in judgments] == [
        Verdict.CORRECT,
        Verdict.HALLUCINATED,
        Verdict.CORRECT,
    ] * 3
    stats = judgments.stats
    assert (stats.requests, stats.unique, stats.model_calls, stats.cache_hits) == (9, 3, 3, 0)


def test_second_run_with_a_warm_cache_makes_no_model_calls(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    path = tmp_path / "judgments.sqlite"
    first = judge_all(openai_judge(fake_openai), requests(20), SQLiteCache(path), progress=False)
    assert fake_openai.count == 20
    # a new judge and a new cache instance, as in a later process
    second = judge_all(openai_judge(fake_openai), requests(20), SQLiteCache(path), progress=False)
    assert fake_openai.count == 20
    assert second.stats.cache_hits == 20 and second.stats.model_calls == 0
    assert list(second) == [
        Judgment(j.verdict, j.judge_id, j.prompt_version, j.prompt_hash, raw=j.raw) for j in first
    ]


def test_unjudged_turns_are_not_cached_and_are_judged_again(fake_openai: FakeOpenAI) -> None:
    fake_openai.replies["question 2?"] = GARBAGE
    cache = MemoryCache()
    first = judge_all(openai_judge(fake_openai), requests(4), cache, progress=False)
    assert first[2].verdict == Verdict.UNJUDGED and first.stats.unjudged == 1
    assert len(cache) == 3
    del fake_openai.replies["question 2?"]
    second = judge_all(openai_judge(fake_openai), requests(4), cache, progress=False)
    assert second.stats.model_calls == 1 and second.stats.cache_hits == 3
    assert second[2].verdict == Verdict.CORRECT and len(cache) == 4


class _Interrupted(RulesJudge):
    """Grades like the rules judge, then fails on the sixth turn as a killed run would."""

    def __init__(self) -> None:
        super().__init__(RUBRIC)
        self.calls = 0

    async def judge(self, request: JudgeRequest) -> Judgment:
        self.calls += 1
        if self.calls == 6:
            raise KeyboardInterrupt
        return await super().judge(request)


def test_an_interrupted_run_keeps_what_it_judged() -> None:
    judge, cache = _Interrupted(), MemoryCache()
    with pytest.raises(KeyboardInterrupt):
        judge_all(judge, requests(10), cache, progress=False, save_every=2)
    assert len(cache) == 5
    saved = cache.get_many([cache_key(judge, r) for r in requests(5)])
    assert all(j.verdict == Verdict.CORRECT for j in saved.values()) and len(saved) == 5


def test_rules_judge_through_the_loop_shows_progress(capsys: pytest.CaptureFixture[str]) -> None:
    batch = [*requests(2), JudgeRequest("What breed?", "Golden retriever", "A poodle")]
    judgments = judge_all(make_judge("rules", RUBRIC), batch, None, progress=True, desc="grading")
    assert [j.verdict for j in judgments][-1] == Verdict.HALLUCINATED
    assert "grading" in capsys.readouterr().err


def test_judge_all_refuses_a_running_event_loop() -> None:
    async def inside() -> None:
        judge_all(make_judge("rules", RUBRIC), requests(1), None, progress=False)

    with pytest.raises(EvaluatorError, match="judge_all_async"):
        asyncio.run(inside())
