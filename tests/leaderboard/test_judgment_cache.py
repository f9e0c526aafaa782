import pytest

from evaluator.benchmarks.crag_mm.prompt import CragMMRubric
from evaluator.benchmarks.crag_mm.records import Verdict
from evaluator.judges import cache_key, judge_all, make_judge
from evaluator.records import JudgeRequest, Judgment
from leaderboard.judgment_cache import LOOKUP_CHUNK, DjangoJudgmentCache
from leaderboard.models import JudgmentRecord

RUBRIC = CragMMRubric()


def judgment(verdict: Verdict, raw: str | None = "CORRECT") -> Judgment:
    return Judgment(verdict, "openai:m@r", "v1", "h" * 64, error=None, raw=raw)


@pytest.mark.django_db
def test_put_then_get_returns_equal_judgments():
    cache = DjangoJudgmentCache()
    stored = {"k1": judgment(Verdict.CORRECT), "k2": judgment(Verdict.HALLUCINATED, raw=None)}
    cache.put_many(stored)
    assert cache.get_many(["k1", "k2", "absent"]) == stored


@pytest.mark.django_db
def test_a_verdict_read_from_a_long_reply_is_kept_whole():
    statements = '{"statements": [' + ", ".join(f'"statement {i}"' for i in range(200)) + "]}"
    cache = DjangoJudgmentCache()
    stored = Judgment(statements, "openai:m@r", "v1", "h" * 64)  # M2RAG's list, read whole
    cache.put_many({"answer/q1/statements": stored})
    assert cache.get_many(["answer/q1/statements"])["answer/q1/statements"].verdict == statements


@pytest.mark.django_db
def test_unjudged_is_never_stored():
    cache = DjangoJudgmentCache()
    cache.put_many({"k": Judgment(Verdict.UNJUDGED, "j", "v1", "h", error="timeout")})
    assert cache.get_many(["k"]) == {}
    assert JudgmentRecord.objects.count() == 0


@pytest.mark.django_db
def test_a_key_is_written_once_and_a_second_write_is_ignored():
    cache = DjangoJudgmentCache()
    cache.put_many({"k": judgment(Verdict.CORRECT)})
    cache.put_many({"k": judgment(Verdict.HALLUCINATED), "k2": judgment(Verdict.CORRECT)})
    assert cache.get_many(["k"])["k"].verdict == Verdict.CORRECT
    assert JudgmentRecord.objects.count() == 2


@pytest.mark.django_db
def test_many_keys_and_nul_characters():
    cache = DjangoJudgmentCache()
    many = {f"k{i}": judgment(Verdict.CORRECT, raw=f"raw\x00{i}") for i in range(LOOKUP_CHUNK + 7)}
    cache.put_many(many)
    found = cache.get_many([*many, "k0"])
    assert len(found) == len(many)
    assert found["k5"].raw == "raw\ufffd5"


@pytest.mark.django_db(transaction=True)  # the judging loop's cache calls use their own thread
def test_judge_all_through_the_database_cache_judges_once():
    judge = make_judge("rules", RUBRIC)
    requests = [
        JudgeRequest("What is the brand of this car?", "Toyota", "It is a Toyota."),
        JudgeRequest("What year?", "1998", "2005"),
        JudgeRequest("What year?", "1998", "2005"),
    ]
    first = judge_all(judge, requests, DjangoJudgmentCache(), progress=False)
    assert first.stats.model_calls == 2
    keys = [cache_key(judge, r) for r in requests]
    assert JudgmentRecord.objects.filter(key__in=keys).count() == 2
    second = judge_all(judge, requests, DjangoJudgmentCache(), progress=False)
    assert second.stats.model_calls == 0 and second.stats.cache_hits == 2
    assert [j.verdict for j in second] == [j.verdict for j in first]


@pytest.mark.django_db
def test_a_structured_verdict_of_any_length_is_stored_whole():
    # MRAG-Suite's extraction verdict is its claims as JSON: up to 32 of them, beyond any grade
    from evaluator.benchmarks.mrag_suite.claims import MAX_CLAIMS
    from evaluator.benchmarks.mrag_suite.judging import claims_grade

    claims = [(f"subject {n}", "reached", f"{n} million in 2019") for n in range(MAX_CLAIMS)]
    long = Judgment(claims_grade(claims), "openai:m@r", "v1", "h" * 64, raw="{}")
    assert len(long.verdict) > 1000
    DjangoJudgmentCache().put_many({"claims": long})
    assert DjangoJudgmentCache().get_many(["claims"]) == {"claims": long}
