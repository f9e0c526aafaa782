"""Claim-level diagnosis through the judge: extraction, then checks, each call with a key.

1. One round of extraction and accuracy calls: ``claims/reference/<item_id>`` (the
   reference explanation, once per item whatever the modes), ``claims/answer/<mode>/<item_id>``
   (the answer's long answer), ``accuracy/<mode>/<item_id>`` (the short answer, only when it
   is neither empty nor an exact match). A call that asks exactly what an earlier one asks
   (an answer repeating the reference, or the same answer in two modes) is that call, under
   its key: every key in a transcript is asked again by a replay.
2. One round of checks (``checks.py``): per answer, the reference's claims against the long
   answer and each retrieved text, the answer's claims against the reference and each
   retrieved text, five claims a call: ``check/<sha256(text)[:16]>/<sha256(claims)[:16]>``.
   The same claims against the same text make the same key and the same cached call, so a
   reference's checks made by one run (GO) are answered from the judgment cache in the next
   (GPD). Counting (``ragchecker`` or ``distinct``) says which claims each text is asked about.

An answer whose calls failed, or whose extractor reply was not claims, stays unjudged with the
reason. ``forecast`` predicts the calls before judging; ``requests`` counts them after.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from evaluator.benchmarks.mrag_suite.answers import exact_match
from evaluator.benchmarks.mrag_suite.checks import AnswerCase, CheckPlan, assemble, read_checks
from evaluator.benchmarks.mrag_suite.claims import (
    CLAIMS_PER_CHECK,
    Claim,
    json_reply,
    read_claims,
    rules_claims,
)
from evaluator.benchmarks.mrag_suite.items import Evidence, MragItem
from evaluator.benchmarks.mrag_suite.judging import ACCURACY, EXTRACT
from evaluator.benchmarks.mrag_suite.modes import COUNTINGS, MragAnswer, check_counting
from evaluator.benchmarks.mrag_suite.ragchecker import ClaimChecks
from evaluator.judges.base import Judge
from evaluator.judges.cache import JudgmentCache
from evaluator.judges.loop import judge_and_transcribe
from evaluator.judges.rubric import UNJUDGED
from evaluator.judges.transcript import TranscriptWriter
from evaluator.records import JudgeForecast, JudgeRequest, Judgment


@dataclass
class Diagnosis:
    """One answer's outcome: its accuracy grade, its claim labels (None: unjudged), why."""

    accuracy: str
    checks: ClaimChecks | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    requests: set[str] = field(default_factory=set)  # the keys of the calls it needed


def _extract(key: str, question: str, text: str) -> JudgeRequest:
    return JudgeRequest(EXTRACT + question, "", text, key)


def first_round(case: AnswerCase) -> dict[str, JudgeRequest]:
    """The extraction and accuracy calls of one answer, by key."""
    item, answer = case.item, case.answer
    calls = {
        f"claims/reference/{item.item_id}": _extract(
            f"claims/reference/{item.item_id}", item.question, item.long_answer
        )
    }
    if answer.long_answer.strip():
        key = f"claims/answer/{case.key}"
        calls[key] = _extract(key, item.question, answer.long_answer)
    if accuracy_by_rule(item, answer) is None:
        key = f"accuracy/{case.key}"
        calls[key] = JudgeRequest(
            ACCURACY + item.question, item.short_answer, answer.short_answer, key
        )
    return calls


def _unique(calls: list[JudgeRequest]) -> tuple[dict[str, JudgeRequest], dict[str, str]]:
    """Each distinct call once, under the first key that asks it, and every key's call key."""
    unique: dict[str, JudgeRequest] = {}
    first: dict[tuple[str, str, str], str] = {}
    alias: dict[str, str] = {}
    for call in calls:
        key = first.setdefault((call.query, call.ground_truth, call.response), call.key)
        unique.setdefault(key, call)
        alias[call.key] = key
    return unique, alias


def accuracy_by_rule(item: MragItem, answer: MragAnswer) -> str | None:
    """``no_answer`` for an empty short answer, ``correct`` for an exact match; None: ask."""
    if not answer.short_answer.strip():
        return "no_answer"
    return "correct" if exact_match(answer.short_answer, item.short_answer) else None


def _judged(
    requests: dict[str, JudgeRequest],
    judge: Judge,
    cache: JudgmentCache | None,
    transcript: TranscriptWriter | None,
    progress: bool,
) -> dict[str, Judgment]:
    asked = list(requests.values())
    judgments = judge_and_transcribe(judge, asked, cache, transcript, progress)
    return {request.key: judgment for request, judgment in zip(asked, judgments, strict=True)}


def _claims(judgment: Judgment | None, what: str) -> tuple[list[Claim] | None, str | None]:
    if judgment is None:
        return [], None  # no text: no claim, no call
    if judgment.verdict == UNJUDGED:
        return None, f"claim extraction of the {what} unjudged: {judgment.error}"
    data = json_reply(judgment.verdict)
    claims = None if data is None else read_claims(data)
    if claims is None:
        return None, f"claim extraction of the {what}: the reply holds no list of claims"
    return claims, None


def diagnose_answers(
    cases: Sequence[AnswerCase],
    judge: Judge,
    cache: JudgmentCache | None,
    transcript: TranscriptWriter | None = None,
    progress: bool = False,
    counting: str = COUNTINGS[0],
) -> list[Diagnosis]:
    """Every answer's accuracy grade and claim labels (see the module doc)."""
    check_counting(counting)
    first, alias = _unique([call for case in cases for call in first_round(case).values()])
    judged = _judged(first, judge, cache, transcript, progress)
    done = {key: judged[alias[key]] for key in alias}
    found: list[tuple[Diagnosis, list[Claim], list[Claim]]] = []
    for case in cases:
        accuracy, error_a = _accuracy(case, done)
        diagnosis = Diagnosis(accuracy)
        diagnosis.requests |= {alias[key] for key in first_round(case)}
        response, error_r = _claims(done.get(f"claims/answer/{case.key}"), "answer")
        reference, error_g = _claims(done.get(f"claims/reference/{case.item.item_id}"), "reference")
        diagnosis.error = error_a or error_r or error_g
        found.append((diagnosis, response or [], reference or []))
    judged_ok = [
        (case, response, reference)
        for case, (diagnosis, response, reference) in zip(cases, found, strict=True)
        if diagnosis.error is None
    ]
    plan = CheckPlan(judged_ok, counting)
    checked = _judged(plan.calls, judge, cache, transcript, progress)
    labels, failures, notes = read_checks(plan.calls, checked)
    ok = iter(zip(judged_ok, plan.slots, strict=True))
    for diagnosis, _, _ in found:
        if diagnosis.error is not None:
            continue
        answer, slots = next(ok)
        asked = {key for found_slots in slots.values() for key, _ in found_slots}
        diagnosis.requests |= asked
        diagnosis.notes += sorted({notes[key] for key in asked if key in notes})
        failed = sorted(failures[key] for key in asked if key in failures)
        if failed:
            diagnosis.error = f"a claim check unjudged: {failed[0]}"
            continue
        diagnosis.checks = assemble(answer, slots, labels)
    return [diagnosis for diagnosis, _, _ in found]


def _accuracy(case: AnswerCase, done: dict[str, Judgment]) -> tuple[str, str | None]:
    """The short answer's grade, and why it is unjudged when it is."""
    rule = accuracy_by_rule(case.item, case.answer)
    if rule is not None:
        return rule, None
    judgment = done[f"accuracy/{case.key}"]
    if judgment.verdict in ("correct", "incorrect"):
        return judgment.verdict, None
    why = judgment.error if judgment.verdict == UNJUDGED else "the reply is not a verdict"
    return UNJUDGED, f"the short answer's accuracy unjudged: {why}"


def forecast(items: Sequence[tuple[MragItem, Sequence[Evidence]]]) -> JudgeForecast:
    """Judge calls predicted before judging, at most (no cache, no shared pair), per answer:
    in the first round an accuracy call and an extraction of the answer and of the reference;
    in the second, checks of ceil(k / 5) for the reference's claims and again for the answer's
    against the answer, the reference and each distinct retrieved text (an item retrieved
    twice is asked once); k = the reference's sentences."""
    checks = 0
    for item, retrieved in items:
        batches = math.ceil(len(rules_claims(item.long_answer)) / CLAIMS_PER_CHECK)
        texts = 1 + len({e.content for e in retrieved if e.content.strip()})
        checks += 2 * batches * texts
    return JudgeForecast((3 * len(items), checks), len(items))
