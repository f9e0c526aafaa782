"""Judge many turns: dedupe, cache first, bounded concurrency, progress, incremental saves."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

import uvloop
from tqdm import tqdm

from evaluator.judges.base import Judge
from evaluator.judges.cache import JudgmentCache, cache_keys
from evaluator.judges.rubric import UNJUDGED
from evaluator.judges.transcript import TranscriptWriter
from evaluator.records import EvaluatorError, JudgeRequest, Judgment


@dataclass
class JudgingStats:
    """What one run of ``judge_all`` did."""

    requests: int = 0  # turns asked for
    unique: int = 0  # distinct (judge, prompt, question, ground truth, answer) tuples
    cache_hits: int = 0  # unique tuples answered by the cache
    model_calls: int = 0  # unique tuples sent to the judge
    unjudged: int = 0  # of those, how many came back UNJUDGED (not cached; re-judge later)
    seconds: float = 0.0


class Judgments(list[Judgment]):
    """The judgments in input order, with the run's ``stats``."""

    stats: JudgingStats


def judge_all(
    judge: Judge,
    requests: Sequence[JudgeRequest],
    cache: JudgmentCache | None,
    progress: bool = True,
    desc: str = "judging",
    save_every: int = 200,
) -> Judgments:
    """Judge ``requests`` (sync wrapper around :func:`judge_all_async`).

    The wrapper owns its event loop, so it releases the judge's loop-bound resources (network
    connections) before returning; the judge opens new ones on its next use.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise EvaluatorError("judge_all() called inside a running event loop: use judge_all_async")

    async def run() -> Judgments:
        try:
            return await judge_all_async(judge, requests, cache, progress, desc, save_every)
        finally:
            await judge.aclose()

    # uvloop: the event loop in C, about a tenth less CPU a turn than asyncio's own.
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(run())


async def judge_all_async(
    judge: Judge,
    requests: Sequence[JudgeRequest],
    cache: JudgmentCache | None,
    progress: bool = True,
    desc: str = "judging",
    save_every: int = 200,
) -> Judgments:
    """Judge ``requests``; new CORRECT/HALLUCINATED judgments reach ``cache`` in batches of
    ``save_every`` (or every second) as they complete, so an interrupted run keeps them."""
    started = time.monotonic()
    keys = cache_keys(judge, requests)
    unique: dict[str, JudgeRequest] = dict(zip(keys, requests, strict=True))
    done: dict[str, Judgment] = cache.get_many(list(unique)) if cache is not None else {}
    stats = JudgingStats(requests=len(requests), unique=len(unique), cache_hits=len(done))
    todo = iter([(k, r) for k, r in unique.items() if k not in done])
    unsaved: dict[str, Judgment] = {}
    last_save = time.monotonic()

    def save() -> None:
        nonlocal last_save
        if cache is not None and unsaved:
            cache.put_many(unsaved)
        unsaved.clear()
        last_save = time.monotonic()

    bar = tqdm(total=len(unique), initial=len(done), desc=desc, unit="turn", disable=not progress)

    async def worker() -> None:
        for key, request in todo:
            call_started = time.monotonic()
            judgment = await judge.judge(request)
            if judge.on_call is not None:
                judge.on_call(time.monotonic() - call_started, judgment)
            stats.model_calls += 1
            done[key] = judgment
            if judgment.verdict == UNJUDGED:
                stats.unjudged += 1
            else:
                unsaved[key] = judgment
            if len(unsaved) >= save_every or time.monotonic() - last_save >= 1.0:
                save()
            bar.update(1)

    try:
        await asyncio.gather(*(worker() for _ in range(max(1, judge.concurrency))))
    finally:
        save()
        bar.close()
    stats.seconds = time.monotonic() - started
    judgments = Judgments(done[k] for k in keys)
    judgments.stats = stats
    return judgments


def judge_and_transcribe(
    judge: Judge,
    requests: Sequence[JudgeRequest],
    cache: JudgmentCache | None,
    transcript: TranscriptWriter | None,
    progress: bool = True,
) -> list[Judgment]:
    """A benchmark's judge calls: ``judge_all`` (no call at all when there is no request), one
    judgment per request checked, every call written to ``transcript``."""
    judgments: list[Judgment] = (
        judge_all(judge, requests, cache, progress=progress) if requests else []
    )
    if len(judgments) != len(requests):
        raise EvaluatorError(
            f"judge {judge.judge_id} returned {len(judgments)} judgments for {len(requests)} items"
        )
    if transcript is not None:
        transcript.write(judge, requests, judgments)
    return judgments


def audit_fields(judgment: Judgment) -> dict[str, str | None]:
    """What every graded item records of the judgment behind it: the judge, its prompt, and
    why it stayed unjudged (None when decided)."""
    return {
        "judge_id": judgment.judge_id,
        "prompt_version": judgment.prompt_version,
        "prompt_hash": judgment.prompt_hash,
        "judge_error": judgment.error if judgment.verdict == UNJUDGED else None,
    }
