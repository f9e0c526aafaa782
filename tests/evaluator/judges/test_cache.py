import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from evaluator.benchmarks.crag_mm.prompt import CragMMRubric
from evaluator.benchmarks.crag_mm.records import Verdict
from evaluator.judges import MemoryCache, SQLiteCache, cache_key, make_judge
from evaluator.records import EvaluatorError, JudgeRequest, Judgment

RUBRIC = CragMMRubric()

REQUEST = JudgeRequest("What is this?", "A dog", "A dog")


def judgment(verdict: Verdict = Verdict.CORRECT, **fields: str) -> Judgment:
    values = {"judge_id": "rules@1", "prompt_version": "v", "prompt_hash": "h", "raw": "why"}
    return Judgment(verdict, **{**values, **fields})  # type: ignore[arg-type]


def openai(**options: object):
    settings = {"base_url": "http://127.0.0.1:9/v1", "model": "m", **options}
    return make_judge("openai", RUBRIC, **settings)


def test_key_covers_what_changes_a_verdict() -> None:
    base = cache_key(openai(), REQUEST)
    assert base == cache_key(openai(), REQUEST)  # stable
    changed = [
        cache_key(openai(model="other"), REQUEST),
        cache_key(openai(revision="r2"), REQUEST),
        cache_key(openai(seed=1), REQUEST),
        cache_key(make_judge("rules", RUBRIC), REQUEST),
        cache_key(openai(), JudgeRequest("What is that?", "A dog", "A dog")),
        cache_key(openai(), JudgeRequest("What is this?", "A cat", "A dog")),
        cache_key(openai(), JudgeRequest("What is this?", "A dog", "A dog!")),
    ]
    assert base not in changed and len(set(changed)) == len(changed)


def test_key_ignores_retries_timeouts_concurrency_and_transport() -> None:
    base = cache_key(openai(), REQUEST)
    same = openai(
        max_retries=0,
        attempt_timeout_s=1,
        total_timeout_s=2,
        concurrency=99,
        structured="vllm",
        api_key="other-key",
    )
    assert cache_key(same, REQUEST) == base


def test_prompt_version_and_hash_are_part_of_the_key() -> None:
    judge = openai()
    base = cache_key(judge, REQUEST)
    judge.prompt_hash = "0" * 64
    assert cache_key(judge, REQUEST) != base
    judge.prompt_version = "crag-mm-judge-v2"
    assert len({base, cache_key(judge, REQUEST)}) == 2


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_unjudged_is_never_cached(kind: str, tmp_path: Path) -> None:
    cache = MemoryCache() if kind == "memory" else SQLiteCache(tmp_path / "c.sqlite")
    cache.put_many({"a": judgment(), "b": judgment(Verdict.UNJUDGED, error="down")})
    assert set(cache.get_many(["a", "b", "c"])) == {"a"}


def test_sqlite_cache_persists_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "judgments.sqlite"
    first = SQLiteCache(path)
    stored = {
        f"k{i}": judgment(Verdict.HALLUCINATED if i % 2 else Verdict.CORRECT) for i in range(1200)
    }
    first.put_many(stored)
    first.close()
    second = SQLiteCache(path)
    assert second.get_many([*list(stored), "missing"]) == stored
    assert len(second) == 1200
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _writer(path: str, worker: int) -> None:
    cache = SQLiteCache(path)
    for batch in range(20):
        cache.put_many({f"w{worker}-{batch}-{i}": judgment() for i in range(10)})


def test_sqlite_cache_is_safe_for_concurrent_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    SQLiteCache(path).close()
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=_writer, args=(path, w)) for w in range(3)]
    for process in writers:
        process.start()
    for process in writers:
        process.join(60)
        assert process.exitcode == 0
    assert len(SQLiteCache(path)) == 3 * 20 * 10


def test_corrupt_rows_and_unopenable_files_are_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = SQLiteCache(path)
    cache.put_many({"k": judgment()})
    sqlite3.connect(path, isolation_level=None).execute("UPDATE judgments SET verdict='unjudged'")
    with pytest.raises(
        EvaluatorError, match=r"c.sqlite: key k: field verdict: unknown value 'unjudged'"
    ):
        cache.get_many(["k"])
    (tmp_path / "not-a-db").write_bytes(b"definitely not sqlite" * 100)
    with pytest.raises(EvaluatorError, match="not-a-db: cannot open"):
        SQLiteCache(tmp_path / "not-a-db")
