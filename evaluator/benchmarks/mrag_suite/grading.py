"""MRAG-Suite grading: one ``GradedAnswer`` per (mode, item), and the per-item table.

Rules first (exact match, ROUGE-L, an empty short answer is ``no_answer``), then the judge
(``diagnosis.py``): the short answer's accuracy and the long answer's claim profile. The grade
is the short answer's: ``correct``, ``incorrect``, ``no_answer``, or ``unjudged`` while any of
the answer's judge calls failed (``judge_error`` says why; its claim metrics are then null).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluator.benchmarks.mrag_suite.answers import exact_match, rouge_l
from evaluator.benchmarks.mrag_suite.checks import AnswerCase
from evaluator.benchmarks.mrag_suite.diagnosis import diagnose_answers
from evaluator.benchmarks.mrag_suite.items import MragSplit
from evaluator.benchmarks.mrag_suite.modes import (
    COUNTINGS,
    MODES,
    MragAnswer,
    answer_key,
    retrieved,
)
from evaluator.benchmarks.mrag_suite.ragchecker import PROFILE, answer_profile
from evaluator.judges.base import Judge
from evaluator.judges.cache import JudgmentCache
from evaluator.judges.rubric import UNJUDGED
from evaluator.judges.transcript import TranscriptWriter
from evaluator.records import EvaluatorError

GRADES = ("correct", "incorrect", "no_answer", UNJUDGED)
TEXTS = ("item_id", "mode", "question", "reference", "short_answer", "long_answer", "grade")
COUNTS = ("response_claims", "reference_claims", "retrieved", "judge_requests")
AUDIT = ("judge_id", "prompt_version", "prompt_hash")  # the judge that graded the answer
COLUMNS = (*TEXTS, "exact_match", "rouge_l", *COUNTS, "judge_error", "notes", *AUDIT, *PROFILE)


_CHECK_KEY = re.compile(r"check/[0-9a-f]{16}/[0-9a-f]{16}")


def never_asked(split: MragSplit, keys: Collection[str]) -> set[str]:
    """The keys among ``keys`` no answer to ``split`` asks, in any mode: all but its items'
    extraction and accuracy keys and check keys (``check/<16 hex>/<16 hex>``)."""
    asked = {f"claims/reference/{item.item_id}" for item in split.items} | {
        f"{call}/{answer_key(mode, item.item_id)}"
        for call in ("claims/answer", "accuracy") for mode in MODES for item in split.items
    }  # fmt: skip
    return {key for key in keys if key not in asked and _CHECK_KEY.fullmatch(key) is None}


@dataclass(frozen=True)
class GradedAnswer:
    item_id: str
    mode: str
    question: str
    reference: str  # the reference short answer
    short_answer: str
    long_answer: str
    grade: str
    exact_match: float
    rouge_l: float
    response_claims: int
    reference_claims: int
    retrieved: int
    judge_requests: int  # the judge calls this answer needed (shared ones included)
    judge_error: str | None
    notes: str
    profile: dict[str, float] | None  # the claim metrics (None: unjudged)
    labels: dict[str, str] = field(default_factory=dict)
    judge_id: str = ""
    prompt_version: str = ""
    prompt_hash: str = ""


def grade_answers(
    split: MragSplit,
    answers: Mapping[str, MragAnswer],
    modes: Sequence[str],
    depth: tuple[int, int],
    judge: Judge,
    cache: JudgmentCache | None,
    progress: bool = False,
    transcript: TranscriptWriter | None = None,
    counting: str = COUNTINGS[0],
) -> list[GradedAnswer]:
    """Every (mode, item) of ``split``, in mode then split order; an unanswered item is an
    empty answer; ``counting``: RAGChecker's or Podium's (``modes.COUNTINGS``)."""
    cases = [
        AnswerCase(
            item,
            answers.get(answer_key(mode, item.item_id), MragAnswer(item.item_id, mode, "", "")),
            tuple(retrieved(item, mode, depth, counting)),
        )
        for mode in modes
        for item in split.items
    ]
    found = diagnose_answers(cases, judge, cache, transcript, progress, counting)
    graded = []
    for case, diagnosis in zip(cases, found, strict=True):
        item, answer, checks = case.item, case.answer, diagnosis.checks
        grade = diagnosis.accuracy if diagnosis.error is None else UNJUDGED
        graded.append(
            GradedAnswer(
                item_id=item.item_id,
                mode=answer.mode,
                question=item.question,
                reference=item.short_answer,
                short_answer=answer.short_answer,
                long_answer=answer.long_answer,
                grade=grade,
                exact_match=exact_match(answer.short_answer, item.short_answer),
                rouge_l=rouge_l(answer.long_answer, item.long_answer),
                response_claims=len(checks.response_in_reference) if checks else 0,
                reference_claims=len(checks.reference_in_response) if checks else 0,
                retrieved=len(case.retrieved),
                judge_requests=len(diagnosis.requests),
                judge_error=diagnosis.error,
                notes="; ".join(diagnosis.notes),
                profile=answer_profile(checks) if checks is not None else None,
                labels=dict(item.labels),
                judge_id=judge.judge_id,
                prompt_version=judge.prompt_version,
                prompt_hash=judge.prompt_hash,
            )
        )
    return graded


def to_row(item: GradedAnswer) -> dict[str, Any]:
    row: dict[str, Any] = {name: getattr(item, name) for name in COLUMNS if name not in PROFILE}
    row |= {name: None if item.profile is None else item.profile[name] for name in PROFILE}
    return row | dict(sorted(item.labels.items()))


def from_row(row: Mapping[str, Any], where: str) -> GradedAnswer:
    def value(name: str, kind: type | tuple[type, ...], optional: bool = False) -> Any:
        if name not in row:
            raise EvaluatorError(f"{where}: field {name!r}: missing")
        found = row[name]
        if (optional and found is None) or (
            isinstance(found, kind) and not isinstance(found, bool)
        ):
            return found
        raise EvaluatorError(f"{where}: field {name!r}: unexpected value {found!r:.80}")

    texts = {name: value(name, str) for name in (*TEXTS, "notes", *AUDIT)}
    if texts["grade"] not in GRADES:
        raise EvaluatorError(f"{where}: field 'grade': {texts['grade']!r} is not a grade")
    profile = {name: value(name, (int, float), optional=True) for name in PROFILE}
    labels = {name: found for name, found in row.items() if name not in COLUMNS}
    if not all(isinstance(found, str) for found in labels.values()):
        raise EvaluatorError(f"{where}: a label is not a string")
    return GradedAnswer(
        **texts,
        exact_match=float(value("exact_match", (int, float))),
        rouge_l=float(value("rouge_l", (int, float))),
        **{name: value(name, int) for name in COUNTS},
        judge_error=value("judge_error", str, optional=True),
        profile=None if profile["precision"] is None else {
            name: float(found) for name, found in profile.items()
        },
        labels=labels,
    )  # fmt: skip
