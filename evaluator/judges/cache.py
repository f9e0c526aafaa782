"""The judgment cache: identical (judge, prompt, question, ground truth, answer) judged once.

The key covers everything that changes a verdict. Deliberately NOT part of the key, because
they change how a verdict is obtained but not which one (as in inspect_ai's cache key):
retries (``max_retries``), time-outs (``attempt_timeout_s``, ``total_timeout_s``),
concurrency, the server address and API key (``base_url``, ``api_key``), and the structured
output mode (it constrains the reply's format, not the decision).

UNJUDGED judgments are never cached: a failed judgment must be retried on the next run.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol

from evaluator.judges.base import Judge
from evaluator.judges.rubric import UNJUDGED
from evaluator.records import EvaluatorError, JudgeRequest, Judgment

# SQLite accepts at most 32766 bound parameters per statement (since 3.32); stay below.
_SQL_CHUNK = 5000


def cache_keys(judge: Judge, requests: Iterable[JudgeRequest]) -> list[str]:
    """``cache_key`` for many requests (the judge's part is encoded once)."""
    judge_part = json.dumps(
        {
            "judge_id": judge.judge_id,
            "verdict_settings": judge.verdict_settings(),
            "prompt_version": judge.prompt_version,
            "prompt_hash": judge.prompt_hash,
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    judge_hash = hashlib.sha256(judge_part.encode("utf-8") + b"\n")
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    keys = []
    for r in requests:
        key = judge_hash.copy()
        key.update(encode([r.query, r.ground_truth, r.response]).encode("utf-8"))  # truncated
        keys.append(key.hexdigest())
    return keys


def cache_key(judge: Judge, request: JudgeRequest) -> str:
    """sha256 over a canonical JSON of everything that changes the verdict: the judge (id with
    model and revision, verdict settings such as the seed), the prompt version and hash, the
    question, the ground truth and the truncated answer."""
    return cache_keys(judge, [request])[0]


class JudgmentCache(Protocol):
    def get_many(self, keys: Iterable[str]) -> dict[str, Judgment]:
        """The cached judgments among ``keys`` (absent keys are left out)."""
        ...

    def put_many(self, judgments: Mapping[str, Judgment]) -> None:
        """Store judgments; UNJUDGED ones are skipped."""
        ...


def _cacheable(judgments: Mapping[str, Judgment]) -> dict[str, Judgment]:
    return {k: j for k, j in judgments.items() if j.verdict != UNJUDGED}


class MemoryCache:
    """A process-local cache (tests, one-off CLI runs)."""

    def __init__(self) -> None:
        self._judgments: dict[str, Judgment] = {}

    def __len__(self) -> int:
        return len(self._judgments)

    def get_many(self, keys: Iterable[str]) -> dict[str, Judgment]:
        return {k: self._judgments[k] for k in keys if k in self._judgments}

    def put_many(self, judgments: Mapping[str, Judgment]) -> None:
        self._judgments.update(_cacheable(judgments))


_SCHEMA = """
CREATE TABLE IF NOT EXISTS judgments (
    key TEXT PRIMARY KEY,
    verdict TEXT NOT NULL,
    judge_id TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    raw TEXT,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
)
"""


class SQLiteCache:
    """A cache file shared by processes on one machine (WAL mode, busy time-out)."""

    def __init__(self, path: str | Path, busy_timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise EvaluatorError(f"judgment cache {self.path}: cannot open: {exc}") from exc
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            count: int = self._db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]
            return count

    def get_many(self, keys: Iterable[str]) -> dict[str, Judgment]:
        keys = list(keys)
        found: dict[str, Judgment] = {}
        with self._lock:
            for start in range(0, len(keys), _SQL_CHUNK):
                chunk = keys[start : start + _SQL_CHUNK]
                rows = self._db.execute(
                    "SELECT key, verdict, judge_id, prompt_version, prompt_hash, raw"
                    f" FROM judgments WHERE key IN ({','.join('?' * len(chunk))})",
                    chunk,
                )
                for key, verdict, judge_id, prompt_version, prompt_hash, raw in rows:
                    found[key] = self._judgment(
                        key, verdict, judge_id, prompt_version, prompt_hash, raw
                    )
        return found

    def _judgment(
        self, key: str, verdict: str, judge_id: str, version: str, prompt_hash: str, raw: str | None
    ) -> Judgment:
        if not verdict or verdict == UNJUDGED:
            raise EvaluatorError(
                f"judgment cache {self.path}: key {key}: field verdict: unknown value {verdict!r}"
            )
        return Judgment(verdict, judge_id, version, prompt_hash, raw=raw)

    def put_many(self, judgments: Mapping[str, Judgment]) -> None:
        rows = [
            (k, str(j.verdict), j.judge_id, j.prompt_version, j.prompt_hash, j.raw)
            for k, j in _cacheable(judgments).items()
        ]
        if not rows:
            return
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT OR REPLACE INTO judgments"
                    " (key, verdict, judge_id, prompt_version, prompt_hash, raw)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    rows,
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()
