"""JSON Lines read one way: non-blank lines numbered from 1, errors naming ``file:line``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from evaluator.records import EvaluatorError

T = TypeVar("T")


def numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers; a missing file or one that is not UTF-8 is
    an ``EvaluatorError``."""
    try:
        with path.open(encoding="utf-8-sig") as handle:
            for line_no, line in enumerate(handle, start=1):
                if line.strip():
                    yield line_no, line
    except FileNotFoundError:
        raise EvaluatorError(f"{path}: not found") from None
    except UnicodeDecodeError as exc:
        raise EvaluatorError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise EvaluatorError(f"{path}: cannot read: {exc}") from exc


def parse_line(line: str, where: str) -> Any:
    try:
        return json.loads(line.rstrip())
    except json.JSONDecodeError as exc:
        raise EvaluatorError(f"{where}: malformed JSON: {exc.msg} (column {exc.colno})") from exc


def json_objects(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, object)`` for each line of a JSON Lines file of objects."""
    for line_no, line in numbered_lines(path):
        where = f"{path}:{line_no}"
        value = parse_line(line, where)
        if not isinstance(value, dict):
            raise EvaluatorError(f"{where}: expected a JSON object, got {type(value).__name__}")
        yield where, value


def unique_records(
    path: Path,
    read: Callable[[dict[str, Any], str], T],
    key: Callable[[T], str],
    field: str,
    noun: str,
) -> list[T]:
    """Each object of a JSON Lines file read by ``read(object, where)``, in order; an id
    (``key``, the record's ``field``) seen twice, or no record at all ("no ``noun``"), is an
    ``EvaluatorError``."""
    records: list[T] = []
    seen: dict[str, str] = {}
    for where, value in json_objects(path):
        record = read(value, where)
        if key(record) in seen:
            raise EvaluatorError(
                f"{where}: field {field!r}: {key(record)!r} again (first at {seen[key(record)]})"
            )
        seen[key(record)] = where
        records.append(record)
    if not records:
        raise EvaluatorError(f"{path}: no {noun}")
    return records
