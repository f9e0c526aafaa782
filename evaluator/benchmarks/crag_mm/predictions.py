"""Loading and writing an agent's answers (predictions) for a split.

Accepted files:

- Podium JSONL: one ``{"session_id", "interaction_id", "response"}`` object per line.
- The official CRAG-MM kit's own outputs: ``response.jsonl`` (JSONL whose lines carry
  ``agent_response``) and ``turn_evaluation_results_all.csv`` / ``..._ego.csv`` (the per-turn
  table with ``session_id``, ``interaction_id`` and ``agent_response`` columns).

A ``.csv`` file is read as the official table; any other file as JSONL, whose first record
decides whether answers are under ``response`` (Podium) or ``agent_response`` (official kit).
"""

from __future__ import annotations

import csv
import json
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from evaluator.benchmarks.crag_mm.records import Prediction, Split
from evaluator.records import EvaluatorError

PODIUM_FIELD = "response"
OFFICIAL_FIELD = "agent_response"
MISSING_LISTED = 10  # missing ids named in the warning; the count is always complete


def load_predictions(path: str | Path, split: Split) -> tuple[dict[str, Prediction], list[str]]:
    """Predictions keyed by interaction_id, and warnings (turns without a prediction).

    An id not in the split, a prediction under the wrong session, a duplicate or a response that
    is not a string is an ``EvaluatorError`` naming the file and line.
    """
    file = Path(path)
    if not file.is_file():
        raise EvaluatorError(f"{file}: predictions file does not exist")
    sessions = {turn.interaction_id: conv.session_id for conv, _, turn in split.turns()}
    predictions: dict[str, Prediction] = {}
    first_line: dict[str, int] = {}
    for line_no, record, field in _records(file):
        where = f"{file}:{line_no}"
        prediction = _prediction(record, field, where)
        interaction_id = prediction.interaction_id
        if interaction_id not in sessions:
            raise EvaluatorError(
                f"{where}: field 'interaction_id': {interaction_id!r} is not in the split"
            )
        if prediction.session_id != sessions[interaction_id]:
            raise EvaluatorError(
                f"{where}: field 'session_id': {interaction_id!r} belongs to session "
                f"{sessions[interaction_id]!r}, not {prediction.session_id!r}"
            )
        if interaction_id in predictions:
            raise EvaluatorError(
                f"{where}: field 'interaction_id': duplicate {interaction_id!r} "
                f"(first at line {first_line[interaction_id]})"
            )
        predictions[interaction_id] = prediction
        first_line[interaction_id] = line_no
    missing = [i for i in sessions if i not in predictions]
    warnings = []
    if missing:
        named = ", ".join(missing[:MISSING_LISTED])
        more = f" and {len(missing) - MISSING_LISTED} more" if len(missing) > MISSING_LISTED else ""
        warnings.append(
            f"{file}: {len(missing)} of {len(sessions)} turns have no prediction and count as "
            f"missing: {named}{more}"
        )
    return predictions, warnings


def _prediction(record: Any, field: str, where: str) -> Prediction:
    if not isinstance(record, dict):
        raise EvaluatorError(f"{where}: expected a JSON object, got {type(record).__name__}")
    values = {}
    for name in ("session_id", "interaction_id", field):
        if record.get(name) is None:
            raise EvaluatorError(f"{where}: field '{name}' is missing")
        if not isinstance(record[name], str):
            kind = type(record[name]).__name__
            raise EvaluatorError(f"{where}: field '{name}': expected a string, got {kind}")
        values[name] = record[name]
    return Prediction(values["session_id"], values["interaction_id"], values[field])


def _records(file: Path) -> Iterator[tuple[int, Any, str]]:
    """(line number, record, name of the response field) for each prediction in the file."""
    try:
        with file.open(encoding="utf-8-sig", newline="") as handle:
            if file.suffix.lower() == ".csv":
                yield from _csv_records(handle, file)
            else:
                yield from _jsonl_records(handle, file)
    except UnicodeDecodeError as exc:
        raise EvaluatorError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def _jsonl_records(handle: Iterable[str], file: Path) -> Iterator[tuple[int, Any, str]]:
    field = None
    for line_no, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line.rstrip())
        except json.JSONDecodeError as exc:
            message = f"{file}:{line_no}: malformed JSON: {exc.msg} (column {exc.colno})"
            raise EvaluatorError(message) from exc
        if field is None and isinstance(record, dict):
            field = OFFICIAL_FIELD if OFFICIAL_FIELD in record else PODIUM_FIELD
        yield line_no, record, field or PODIUM_FIELD


def _csv_records(handle: Iterable[str], file: Path) -> Iterator[tuple[int, Any, str]]:
    reader = csv.DictReader(handle)
    columns = reader.fieldnames or []
    needed = [c for c in ("session_id", "interaction_id", OFFICIAL_FIELD) if c not in columns]
    if needed:
        raise EvaluatorError(f"{file}:1: missing column(s) {', '.join(needed)}")
    try:
        for row in reader:
            if None in row or None in row.values():
                raise EvaluatorError(
                    f"{file}:{reader.line_num}: row has {len(columns)} columns in the header "
                    "but a different number of cells"
                )
            yield reader.line_num, row, OFFICIAL_FIELD
    except csv.Error as exc:
        raise EvaluatorError(f"{file}:{reader.line_num}: malformed CSV: {exc}") from exc


def write_predictions(path: str | Path, predictions: Iterable[Prediction]) -> None:
    """Write predictions as Podium JSONL (written to a temporary file, then renamed)."""
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    descriptor, name = tempfile.mkstemp(prefix=f".{file.name}.partial-", dir=file.parent)
    partial = Path(name)
    partial.chmod(0o644)  # mkstemp makes it private
    try:
        with open(descriptor, "w", encoding="utf-8") as handle:
            for prediction in predictions:
                record = {
                    "session_id": prediction.session_id,
                    "interaction_id": prediction.interaction_id,
                    PODIUM_FIELD: prediction.response,
                }
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        partial.replace(file)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
