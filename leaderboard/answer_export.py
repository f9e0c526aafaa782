"""Every run's per-item answers and verdicts, for a challenge's organisers: a whole challenge or
one split (of one task, every version of it), as CSV, JSON Lines or Parquet (pyarrow: a row
group per chunk), one row per answer, streamed.

Rows are read with ``QuerySet.iterator`` (a server-side cursor, ``CHUNK`` rows at a time) and
written a row at a time, so the memory used does not grow with the rows exported. A row names
its run, team, submission, task, split (and its version), the answer (outcome, problem,
latency, response), its verdict (empty where not judged) and where the judge's account of it
is: the run's transcript (``transcript``: its address, whose lines are keyed by the item; empty
where the run kept none) and the judge and prompt that gave the verdict. Who may export is the
caller's to check.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.urls import reverse

from leaderboard.models import Challenge, ItemAnswer

CHUNK = 2_000
FORMATS = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/jsonl; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
}
# (column, the query's field)
FIELDS = (
    ("run", "run_id"),
    ("team", "run__submission__team__name"),
    ("submission", "run__submission_id"),
    ("method", "run__submission__method_name"),
    ("task", "run__task__task_id"),
    ("split", "run__split__kind"),
    ("split_version", "run__split__version"),
    ("setting", "run__setting"),
    ("trial", "run__trial"),  # 0: the submission's own run; 1, 2, ...: its repeats
    ("run_state", "run__state"),
    ("group", "group"),
    ("position", "position"),
    ("item_key", "item_key"),
    ("outcome", "outcome"),
    ("problem", "problem"),
    ("latency_s", "latency_s"),
    ("response", "response"),
    ("verdict", "verdict__verdict"),
    ("judge_id", "verdict__judge_id"),
    ("prompt_version", "verdict__prompt_version"),
    ("prompt_hash", "verdict__prompt_hash"),
    ("judged_at", "verdict__judged_at"),
    ("transcript", "run__transcript"),
)
COLUMNS = tuple(column for column, _ in FIELDS)
# a Parquet column's type where it is not a string (pyarrow's names)
PARQUET_TYPES = {
    "run": "int64",
    "submission": "int64",
    "split_version": "int64",
    "trial": "int64",
    "position": "int64",
    "latency_s": "float64",
}


class ExportRefused(ValueError):
    """An export asked of a split the challenge does not have, or in an unknown format."""


def answers(challenge: Challenge, task: str = "", split: str = "") -> QuerySet[ItemAnswer, Any]:
    """The answers to export, in run, group and position order: ``task`` and ``split`` (a kind)
    narrow them to one split; both or neither are given."""
    if bool(task) != bool(split):
        raise ExportRefused("name both the task and the split, or neither")
    found = ItemAnswer.objects.filter(run__task__challenge=challenge)
    if task:
        if not challenge.tasks.filter(task_id=task, splits__kind=split).exists():
            raise ExportRefused(f"{challenge.name} has no split {split!r} in a task {task!r}")
        found = found.filter(run__task__task_id=task, run__split__kind=split)
    ordered: QuerySet[ItemAnswer, Any] = found.order_by("run_id", "group", "position")
    values: QuerySet[ItemAnswer, Any] = ordered.values(*(f for _, f in FIELDS))
    return values


def rows(found: QuerySet[ItemAnswer, Any]) -> Iterator[dict[str, Any]]:
    """Each answer as a row of ``COLUMNS``, read ``CHUNK`` at a time."""
    for raw in found.iterator(chunk_size=CHUNK):
        row = {column: raw[field] for column, field in FIELDS}
        if row["transcript"]:
            row["transcript"] = reverse("leaderboard:run-transcript", args=[row["run"]])
        else:
            row["transcript"] = None
        judged = row["judged_at"]
        row["judged_at"] = judged.isoformat() if isinstance(judged, datetime) else None
        yield row


class _Line:
    """What ``csv.writer`` writes to: the line it was given, handed back."""

    def write(self, text: str) -> str:
        return text


def csv_lines(found: Iterable[dict[str, Any]]) -> Iterator[str]:
    writer = csv.writer(_Line())
    yield writer.writerow(COLUMNS)
    for row in found:
        yield writer.writerow(["" if row[c] is None else row[c] for c in COLUMNS])


def jsonl_lines(found: Iterable[dict[str, Any]]) -> Iterator[str]:
    for row in found:
        yield json.dumps(row, ensure_ascii=False) + "\n"


class _Sink:
    """What ``pyarrow.parquet.ParquetWriter`` writes to: the bytes kept until taken."""

    closed = False

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.position = 0

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def take(self) -> bytes:
        data, self.parts = b"".join(self.parts), []
        return data


def parquet_parts(found: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """The rows as a Parquet file, a row group per ``CHUNK`` rows, its bytes as written."""
    import pyarrow as pa  # only an export in Parquet needs it
    import pyarrow.parquet as pq

    types = {column: PARQUET_TYPES.get(column, "string") for column in COLUMNS}
    schema = pa.schema([(column, pa.type_for_alias(name)) for column, name in types.items()])
    sink = _Sink()
    with pq.ParquetWriter(sink, schema) as writer:
        batch: list[dict[str, Any]] = []
        for row in found:
            batch.append(row)
            if len(batch) == CHUNK:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
                yield sink.take()
        if batch or not sink.position:  # a file with no rows still has its schema
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    yield sink.take()


def streamed(
    challenge: Challenge, fmt: str, task: str = "", split: str = ""
) -> Iterator[str] | Iterator[bytes]:
    """The export's lines (Parquet: bytes) in ``fmt`` (one of ``FORMATS``); ``ExportRefused``
    before any."""
    if fmt not in FORMATS:
        raise ExportRefused(f"export as csv, jsonl or parquet, not {fmt!r}")
    found = rows(answers(challenge, task, split))
    if fmt == "parquet":
        return parquet_parts(found)
    return csv_lines(found) if fmt == "csv" else jsonl_lines(found)


def filename(challenge: Challenge, fmt: str, task: str = "", split: str = "") -> str:
    part = f"-{task}-{split}" if task else ""
    return f"{challenge.slug}{part}-answers.{fmt}"
