"""The toy benchmark's data: a split (one question a line of ``questions.jsonl``), predictions
(one ``{"id", "answer"}`` a line), graded questions and their per-item table rows."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evaluator.records import EvaluatorError

QUESTIONS = "questions.jsonl"
COLUMNS = (
    "id", "region", "question", "reference", "answer", "grade",
    "judge_id", "prompt_version", "prompt_hash", "judge_error",
)  # fmt: skip


@dataclass(frozen=True)
class Question:
    id: str
    region: str  # the slice dimension, and the split's groups
    question: str
    reference: str


@dataclass(frozen=True)
class Split:
    root: Path
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Prediction:
    id: str
    answer: str


@dataclass(frozen=True)
class GradedQuestion:
    id: str
    region: str
    question: str
    reference: str
    answer: str
    grade: str  # "correct", "wrong", "idk" or "unjudged"
    judge_id: str
    prompt_version: str
    prompt_hash: str
    judge_error: str | None = None


def _lines(path: Path) -> list[tuple[str, dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EvaluatorError(f"{path}: cannot read: {exc}") from None
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise EvaluatorError(f"{path}:{number}: not JSON") from None
        if not isinstance(record, dict):
            raise EvaluatorError(f"{path}:{number}: not an object")
        found.append((f"{path}:{number}", record))
    return found


def _text(record: Mapping[str, Any], name: str, where: str) -> str:
    value = record.get(name)
    if not isinstance(value, str) or not value:
        raise EvaluatorError(f"{where}: field {name!r}: missing or not a string")
    return value


def load_split(path: str | Path) -> Split:
    root = Path(path)
    questions = tuple(
        Question(
            *(_text(record, name, where) for name in ("id", "region", "question", "reference"))
        )
        for where, record in _lines(root / QUESTIONS)
    )
    if not questions:
        raise EvaluatorError(f"{root / QUESTIONS}: no question")
    if len({q.id for q in questions}) != len(questions):
        raise EvaluatorError(f"{root / QUESTIONS}: an id is given twice")
    return Split(root, questions)


def load_predictions(path: str | Path, split: Split) -> tuple[dict[str, Prediction], list[str]]:
    known = {q.id for q in split.questions}
    found: dict[str, Prediction] = {}
    for where, record in _lines(Path(path)):
        key, answer = _text(record, "id", where), record.get("answer")
        if key not in known:
            raise EvaluatorError(f"{where}: id {key!r} is not a question of the split")
        if not isinstance(answer, str):
            raise EvaluatorError(f"{where}: field 'answer': not a string")
        found[key] = Prediction(key, answer)
    missing = len(known - set(found))
    return found, [f"{missing} question(s) unanswered (graded idk)"] if missing else []


def to_row(item: GradedQuestion) -> dict[str, Any]:
    return asdict(item)


def from_row(row: Mapping[str, Any], where: str) -> GradedQuestion:
    texts = {name: row.get(name) for name in COLUMNS[:-1]}
    error = row.get("judge_error")
    if not all(isinstance(value, str) for value in texts.values()) or not isinstance(
        error, str | None
    ):
        raise EvaluatorError(f"{where}: a field is missing or not a string")
    return GradedQuestion(**texts, judge_error=error)
