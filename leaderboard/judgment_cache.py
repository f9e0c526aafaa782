"""The judgment cache on the Django database, behind the evaluator's ``JudgmentCache`` benchmark.

Every stored row doubles as the audit trail of a verdict (judge, prompt version and hash, the
judge's raw answer). Unjudged judgments are never stored; a key is written once (a second
write of the same key is ignored, so concurrent judge workers cannot conflict).

The evaluator's judging loop calls the cache from inside its event loop, where Django refuses
database access; there each call runs in a short-lived thread with its own connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from django.db import connections

from evaluator.judges.rubric import UNJUDGED
from evaluator.records import Judgment
from leaderboard.models import JudgmentRecord

# Keys per SELECT ... WHERE key IN (...): bounded so huge runs stay within driver limits.
LOOKUP_CHUNK = 1000

T = TypeVar("T")


def _in_own_thread(call: Callable[[], T]) -> T:
    def run() -> T:
        try:
            return call()
        finally:
            connections.close_all()  # this thread's connections only

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="judgment-cache") as pool:
        return pool.submit(run).result()


def _outside_event_loop(call: Callable[[], T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return call()
    return _in_own_thread(call)


class DjangoJudgmentCache:
    def get_many(self, keys: Iterable[str]) -> dict[str, Judgment]:
        wanted = list(dict.fromkeys(keys))
        return _outside_event_loop(lambda: self._get_many(wanted))

    def put_many(self, judgments: Mapping[str, Judgment]) -> None:
        records = dict(judgments)
        _outside_event_loop(lambda: self._put_many(records))

    @staticmethod
    def _get_many(wanted: list[str]) -> dict[str, Judgment]:
        found: dict[str, Judgment] = {}
        for start in range(0, len(wanted), LOOKUP_CHUNK):
            chunk = wanted[start : start + LOOKUP_CHUNK]
            for record in JudgmentRecord.objects.filter(key__in=chunk):
                found[record.key] = Judgment(
                    verdict=record.verdict,
                    judge_id=record.judge_id,
                    prompt_version=record.prompt_version,
                    prompt_hash=record.prompt_hash,
                    raw=record.raw,
                )
        return found

    @staticmethod
    def _put_many(judgments: Mapping[str, Judgment]) -> None:
        records = [
            JudgmentRecord(
                key=key,
                verdict=str(judgment.verdict),
                judge_id=judgment.judge_id,
                prompt_version=judgment.prompt_version,
                prompt_hash=judgment.prompt_hash,
                # PostgreSQL text cannot hold NUL characters.
                raw=judgment.raw.replace("\x00", "\ufffd") if judgment.raw else judgment.raw,
            )
            for key, judgment in judgments.items()
            if judgment.verdict != UNJUDGED
        ]
        JudgmentRecord.objects.bulk_create(records, batch_size=LOOKUP_CHUNK, ignore_conflicts=True)
