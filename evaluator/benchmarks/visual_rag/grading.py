"""Grading Visual-RAG: one graded item per (setting, query), its per-item table row.

For every evaluated setting and every query of the split: the ``retrieval`` setting's ranking
is scored (``retrieval.score_ranking``); the answer gets its ROUGE-1 recall against the
annotator answers (``rouge.rouge1_recall``) and its judge grade. An empty answer (or no
prediction) is ``no_answer`` with no judge call; the rest go to the judge, keyed
``answer/<query_id>/<setting>``. A judge failure leaves the item ``unjudged`` (never 0).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaluator.benchmarks.visual_rag.items import (
    SETTING_PATTERN,
    VisualPrediction,
    VisualSplit,
    prediction_key,
)
from evaluator.benchmarks.visual_rag.judging import NO_ANSWER
from evaluator.benchmarks.visual_rag.retrieval import KS, score_ranking
from evaluator.benchmarks.visual_rag.rouge import rouge1_recall
from evaluator.judges.base import Judge
from evaluator.judges.cache import JudgmentCache
from evaluator.judges.loop import audit_fields, judge_and_transcribe
from evaluator.judges.rubric import UNJUDGED
from evaluator.judges.transcript import TranscriptWriter
from evaluator.records import EvaluatorError, JudgeRequest

RETRIEVAL = "retrieval"
WARNINGS_PER_QUERY = 5  # a ranking's warnings kept (the rest counted): rankings are unbounded
RETRIEVAL_METRICS: tuple[str, ...] = tuple(
    f"{name}@{k}" for name in ("recall", "ndcg", "hit", "hit_count") for k in KS
)


_SETTING = re.compile(SETTING_PATTERN)


def answer_key(query_id: str, setting: str) -> str:
    """The judge call's key of a query's answer in a setting."""
    return f"answer/{query_id}/{setting}"


def never_asked(split: VisualSplit, keys: Collection[str]) -> set[str]:
    """The keys among ``keys`` other than ``answer/<a query's id>/<a setting's name>``."""
    ids = {query.query_id for query in split.queries}

    def asked(key: str) -> bool:
        head, _, rest = key.partition("/")
        query_id, _, setting = rest.rpartition("/")
        return head == "answer" and query_id in ids and _SETTING.fullmatch(setting) is not None

    return {key for key in keys if not asked(key)}


@dataclass(frozen=True)
class GradedQuery:
    """One (setting, query): the answer's grade and ROUGE, the ranking's metrics."""

    query_id: str
    setting: str
    labels: dict[str, str]
    question: str
    answers: tuple[str, ...]
    answer: str
    answered: bool  # a prediction was given
    grade: str  # "1", "0.5", "0" (any number in [0, 1]), "no_answer" or "unjudged"
    rouge1_recall: float  # in [0, 1]
    ranking: tuple[str, ...]
    retrieval: dict[str, float] | None  # RETRIEVAL_METRICS (rates in [0, 1]); retrieval only
    judge_id: str
    prompt_version: str
    prompt_hash: str
    judge_error: str | None = None


def check_grade(grade: object, where: str) -> str:
    """A grade as the benchmark knows it, else an ``EvaluatorError``."""
    if grade in (NO_ANSWER, UNJUDGED):
        return str(grade)
    try:
        value = float(str(grade))
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise EvaluatorError(f"{where}: grade {grade!r} is not a score in [0, 1] or no_answer")
    return str(grade)


def grade_queries(
    split: VisualSplit,
    predictions: Mapping[str, VisualPrediction],
    settings: Sequence[str],
    judge: Judge,
    cache: JudgmentCache | None,
    progress: bool = True,
    transcript: TranscriptWriter | None = None,
) -> tuple[list[GradedQuery], list[str]]:
    """Every (setting, query), settings in the order given; and the ranking warnings."""
    rows: list[dict[str, Any]] = []
    to_judge: list[int] = []
    requests: list[JudgeRequest] = []
    warnings: list[str] = []
    for setting in settings:
        for query in split.queries:
            prediction = predictions.get(prediction_key(setting, query.query_id))
            answer = prediction.answer if prediction is not None else ""
            ranking = (prediction.ranking if prediction is not None else None) or ()
            retrieval = None
            if setting == RETRIEVAL:
                scored = score_ranking(
                    ranking, query.clues, query.candidates, where=f"query {query.query_id}: "
                )
                warnings += scored.warnings[:WARNINGS_PER_QUERY]
                if len(scored.warnings) > WARNINGS_PER_QUERY:
                    more = len(scored.warnings) - WARNINGS_PER_QUERY
                    warnings.append(f"query {query.query_id}: {more} more ranking warnings")
                retrieval = {
                    f"{name}@{k}": float(getattr(scored, name)[k])
                    for name in ("recall", "ndcg", "hit", "hit_count")
                    for k in KS
                }
            grade = NO_ANSWER
            if answer.strip():
                grade = UNJUDGED
                to_judge.append(len(rows))
                requests.append(
                    JudgeRequest(
                        query.question,
                        json.dumps(list(query.answers), ensure_ascii=False),
                        answer,
                        key=answer_key(query.query_id, setting),
                    )
                )
            rows.append(
                {
                    "query_id": query.query_id,
                    "setting": setting,
                    "labels": dict(query.labels),
                    "question": query.question,
                    "answers": query.answers,
                    "answer": answer,
                    "answered": prediction is not None,
                    "grade": grade,
                    "rouge1_recall": rouge1_recall(answer, query.answers),
                    "ranking": tuple(ranking),
                    "retrieval": retrieval,
                    "judge_id": judge.judge_id,
                    "prompt_version": judge.prompt_version,
                    "prompt_hash": judge.prompt_hash,
                }
            )
    judgments = judge_and_transcribe(judge, requests, cache, transcript, progress)
    for index, judgment in zip(to_judge, judgments, strict=True):
        grade = check_grade(judgment.verdict, f"judge {judgment.judge_id}")
        rows[index].update(grade=grade, **audit_fields(judgment))
    return [GradedQuery(**row) for row in rows], warnings


COLUMNS: tuple[str, ...] = (
    "query_id",
    "setting",
    "question",
    "answers",
    "answer",
    "answered",
    "grade",
    "rouge1_recall",
    "ranking",
    *RETRIEVAL_METRICS,
    "judge_id",
    "prompt_version",
    "prompt_hash",
    "judge_error",
)


def to_row(item: GradedQuery) -> dict[str, Any]:
    clash = sorted(set(item.labels) & set(COLUMNS))
    if clash:
        raise EvaluatorError(f"query {item.query_id}: label {clash[0]!r} has the name of a column")
    row: dict[str, Any] = {
        "query_id": item.query_id,
        "setting": item.setting,
        "question": item.question,
        "answers": list(item.answers),
        "answer": item.answer,
        "answered": item.answered,
        "grade": item.grade,
        "rouge1_recall": item.rouge1_recall,
        "ranking": list(item.ranking),
        **{name: (item.retrieval or {}).get(name) for name in RETRIEVAL_METRICS},
        "judge_id": item.judge_id,
        "prompt_version": item.prompt_version,
        "prompt_hash": item.prompt_hash,
        "judge_error": item.judge_error,
    }
    return row | dict(sorted(item.labels.items()))


def from_row(row: Mapping[str, Any], where: str) -> GradedQuery:
    def field(name: str, kind: type | tuple[type, ...], optional: bool = False) -> Any:
        if name not in row:
            raise EvaluatorError(f"{where}: field {name!r}: missing")
        value = row[name]
        if optional and value is None:
            return None
        if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
            raise EvaluatorError(f"{where}: field {name!r}: unexpected value {value!r:.80}")
        return value

    texts = {n: field(n, str) for n in ("query_id", "setting", "question", "answer")}
    answers, ranking = field("answers", list), field("ranking", list)
    if not all(isinstance(value, str) for value in (*answers, *ranking)):
        raise EvaluatorError(f"{where}: fields 'answers' and 'ranking' hold strings only")
    retrieval = {name: field(name, (int, float), optional=True) for name in RETRIEVAL_METRICS}
    labels = {name: value for name, value in row.items() if name not in COLUMNS}
    if not all(isinstance(value, str) for value in labels.values()):
        raise EvaluatorError(f"{where}: a label is not a string")
    return GradedQuery(
        **texts,
        labels=labels,
        answers=tuple(answers),
        answered=field("answered", bool),
        grade=check_grade(field("grade", str), where),
        rouge1_recall=float(field("rouge1_recall", (int, float))),
        ranking=tuple(ranking),
        retrieval=None if retrieval["recall@1"] is None else {
            name: float(value) for name, value in retrieval.items() if value is not None
        },
        **{n: field(n, str) for n in ("judge_id", "prompt_version", "prompt_hash")},
        judge_error=field("judge_error", str, optional=True),
    )  # fmt: skip
