"""One graded M2RAG answer and its row in the per-item table (``answers.jsonl``).

Scores are fractions (a 0-10 judge score / 10). ``grade``: ``failed`` (no answer, an empty one,
or the agent's failure), ``unjudged`` (a judge reply missing or unreadable: ``judge_error``
says which), else the answer's own overall, written shortest: the mean of its five answer
metrics and, when it placed images, its three per-image means.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaluator.judges.rubric import UNJUDGED
from evaluator.records import EvaluatorError

FAILED = "failed"
ANSWER_METRICS = ("fluency", "relevance", "context_precision", "faithfulness", "image_recall")
IMAGE_METRICS = ("coherence", "helpfulness", "reference")


@dataclass(frozen=True)
class GradedAnswer:
    query_id: str
    labels: dict[str, str]  # topic (a slice)
    query: str
    answer: str
    grade: str
    judge_id: str
    prompt_version: str
    prompt_hash: str
    placed: tuple[int, ...] = ()  # kept image indices, in the answer's order
    dropped: int = 0  # placements out of range or repeated
    fluency: float | None = None
    relevance: float | None = None
    context_precision: float | None = None
    faithfulness: float | None = None  # NaN (no statement) already read as 1.0
    faithfulness_nan: bool = False
    image_recall: float | None = None
    coherence: tuple[float, ...] = ()  # one per placed image
    helpfulness: tuple[float, ...] = ()
    reference: tuple[float, ...] = ()
    judge_error: str | None = None

    @property
    def judged(self) -> bool:
        return self.grade not in (FAILED, UNJUDGED)

    def answer_scores(self) -> dict[str, float]:
        """The five answer metrics (0 for a failed answer: Podium's headline)."""
        return {name: float(getattr(self, name) or 0.0) for name in ANSWER_METRICS}

    def with_grade(self) -> GradedAnswer:
        values = list(self.answer_scores().values())
        if self.placed:
            values += [sum(getattr(self, n)) / len(self.placed) for n in IMAGE_METRICS]
        return dataclasses.replace(self, grade=f"{sum(values) / len(values):.4g}")


COLUMNS: tuple[str, ...] = (
    "query_id", "query", "answer", "grade", "placed", "dropped", *ANSWER_METRICS,
    "faithfulness_nan", *IMAGE_METRICS, "judge_id", "prompt_version", "prompt_hash",
    "judge_error",
)  # fmt: skip


def to_row(item: GradedAnswer) -> dict[str, Any]:
    clash = sorted(set(item.labels) & set(COLUMNS))
    if clash:
        raise EvaluatorError(f"query {item.query_id}: label {clash[0]!r} has a column's name")
    row = {name: getattr(item, name) for name in COLUMNS}
    for name in ("placed", *IMAGE_METRICS):
        row[name] = list(row[name])
    return row | dict(sorted(item.labels.items()))


def _check(row: Mapping[str, Any], name: str, kinds: tuple[type, ...], where: str) -> Any:
    if name not in row:
        raise EvaluatorError(f"{where}: field {name!r}: missing")
    value = row[name]
    if isinstance(value, bool) != (bool in kinds) or not isinstance(value, kinds):
        raise EvaluatorError(f"{where}: field {name!r}: unexpected value {value!r:.80}")
    return value


def from_row(row: Mapping[str, Any], where: str) -> GradedAnswer:
    texts = ("query_id", "query", "answer", "grade", "judge_id", "prompt_version", "prompt_hash")
    values: dict[str, Any] = {name: _check(row, name, (str,), where) for name in texts}
    values["dropped"] = _check(row, "dropped", (int,), where)
    values["faithfulness_nan"] = _check(row, "faithfulness_nan", (bool,), where)
    values["judge_error"] = _check(row, "judge_error", (str, type(None)), where)
    for name in ANSWER_METRICS:
        number = _check(row, name, (int, float, type(None)), where)
        values[name] = None if number is None else float(number)
    for name in ("placed", *IMAGE_METRICS):
        items = _check(row, name, (list,), where)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
            raise EvaluatorError(f"{where}: field {name!r}: numbers only")
        values[name] = tuple(int(v) if name == "placed" else float(v) for v in items)
    labels = {name: value for name, value in row.items() if name not in COLUMNS}
    if not all(isinstance(value, str) for value in labels.values()):
        raise EvaluatorError(f"{where}: a label is not a string")
    return GradedAnswer(labels=labels, **values)
