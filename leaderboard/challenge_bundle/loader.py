"""``challenge.yaml`` checked: the schema, then what a schema cannot say (numbers that are
not finite, files that exist inside the bundle, unique names, dates, the task rules of
``Task.clean``, the overall ranking's tasks, settings and metrics (``overall.problems``), the
package index as the admin checks it, API keys written in). Every problem is
collected and raised at once (``BundleInvalid``), each with its file, line and field.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any

import jsonschema
from django.core.exceptions import ValidationError
from django.db import models

from evaluator.benchmarks import benchmark_class
from leaderboard import overall
from leaderboard.challenge_bundle import assets
from leaderboard.challenge_bundle.problems import BundleInvalid, Problem
from leaderboard.challenge_bundle.schema import PAGES, TASK_FIELDS, bundle_schema
from leaderboard.challenge_bundle.source import MANIFEST, MAX_MANIFEST_BYTES
from leaderboard.challenge_bundle.yaml_doc import Document
from leaderboard.models import Challenge, Task

MAX_PAGE_BYTES = 1024 * 1024
# keys that would hold a secret: refused with the way to name it instead
SECRET_KEYS = {"api_key", "apikey", "key", "token", "secret", "password", "authorization"}


@dataclass(frozen=True)
class Bundle:
    """A checked bundle: its root directory and its document (as written, defaults not
    filled in)."""

    root: Path
    document: Document

    @property
    def value(self) -> dict[str, Any]:
        value: dict[str, Any] = self.document.value  # a mapping: the schema was checked
        return value

    def page(self, name: str) -> str:
        path = self.value["challenge"].get("pages", {}).get(name)
        return (self.root / path).read_text(encoding="utf-8") if path else ""

    @property
    def logo(self) -> Path | None:
        name = self.value["challenge"].get("logo")
        return self.root / name if name else None

    def kit_files(self) -> dict[str, Path]:
        """The files the starter kit carries, by their path in the bundle."""
        return assets.kit_files(self.root, self.value["challenge"].get("kit_files", []))


def moment(value: datetime | str | None) -> str | None:
    """A date-time in UTC, ISO 8601 (how documents compare them)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.astimezone(UTC).isoformat()


def load(
    root: Path, now: datetime, kept_phases: Iterable[tuple[str, str | None, str | None]] = ()
) -> Bundle:
    """The bundle at ``root``, checked; ``kept_phases``: (name, starts_at, ends_at) of the live
    challenge's phases, which may lie in the past."""
    manifest = root / MANIFEST
    size = manifest.stat().st_size
    if size > MAX_MANIFEST_BYTES:
        raise BundleInvalid(
            [Problem(MANIFEST, None, "(file)", f"{size} bytes; at most {MAX_MANIFEST_BYTES}")]
        )
    try:
        text = manifest.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BundleInvalid([Problem(MANIFEST, None, "(file)", f"not UTF-8 ({exc})")]) from None
    document = Document(MANIFEST, text)
    problems = _schema_problems(document) + _number_problems(document)
    if not problems:  # the rules below read a document of the schema's shape
        problems = _rule_problems(Bundle(root, document), now, set(kept_phases))
    if problems:
        raise BundleInvalid(problems)
    return Bundle(root, document)


# jsonschema checks a format only where the library it needs is installed, and skips it silently
# otherwise: the bundle's dates are checked by rfc3339-validator (requirements.txt), or by nothing.
FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER
if "date-time" not in FORMATS.checkers:  # pragma: no cover - an install without it
    raise ImportError("jsonschema cannot check date-times: pip install rfc3339-validator")


def _schema_problems(document: Document) -> list[Problem]:
    validator = jsonschema.Draft202012Validator(bundle_schema(), format_checker=FORMATS)
    problems = []
    for error in validator.iter_errors(document.value):
        path = tuple(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = sorted(error.schema.get("properties", {}))
            for key in sorted(set(error.instance) - set(allowed)):
                problems.append(document.problem((*path, key), _unknown(str(key), allowed)))
        elif error.validator == "format":
            problems.append(
                document.problem(path, f"{error.instance!r} is not an ISO 8601 date-time with "
                                 "a time zone (e.g. 2027-01-31T23:59:00Z)")
            )  # fmt: skip
        else:
            problems.append(document.problem(path, error.message))
    return sorted(problems, key=lambda p: (p.line or 0, p.field))


def _number_problems(document: Document) -> list[Problem]:
    """``.nan`` and ``.inf`` (YAML's), wherever they are: no limit, setting or quota is one."""
    return [
        document.problem(path, f"{value} is not a number Podium can use: write a finite one")
        for path, value in _floats(document.value, ())
        if not math.isfinite(value)
    ]


def _floats(
    value: Any, path: tuple[str | int, ...]
) -> Iterator[tuple[tuple[str | int, ...], float]]:
    if isinstance(value, float):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _floats(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _floats(item, (*path, index))


def _unknown(key: str, allowed: list[str]) -> str:
    if key.lower().replace("-", "_") in {*SECRET_KEYS, "api_key_env"}:
        return (
            "an API key is never written in a bundle, nor where one is: a judge endpoint's key "
            "is configured with the endpoint on the server (PODIUM_JUDGE_ENDPOINTS)"
        )
    return f"unknown key {key!r}; allowed here: {', '.join(allowed) or 'none'}"


def _rule_problems(bundle: Bundle, now: datetime, kept: set[tuple[Any, ...]]) -> list[Problem]:
    doc, value = bundle.document, bundle.value
    problems: list[Problem] = []
    challenge = value["challenge"]
    if challenge.get("package_index"):
        try:  # the admin's check (``Challenge.package_index``'s validators)
            Challenge._meta.get_field("package_index").run_validators(challenge["package_index"])
        except ValidationError as exc:
            for message in exc.messages:
                problems.append(doc.problem(("challenge", "package_index"), message))
    for page in PAGES:
        if page in challenge.get("pages", {}):
            problems += _file_problems(bundle, ("challenge", "pages", page), want="page")
    if "corpus" in challenge:
        problems += _file_problems(bundle, ("challenge", "corpus"), want="tree")
    if "logo" in challenge:
        problems += _file_problems(bundle, ("challenge", "logo"), want="logo")
    for index in range(len(challenge.get("kit_files", []))):
        problems += _file_problems(bundle, ("challenge", "kit_files", index), want="kit")
    phases = value.get("phases", [])
    problems += _duplicates(doc, "phases", [p["name"] for p in phases], "phase name")
    for index, phase in enumerate(phases):
        starts, ends = (datetime.fromisoformat(phase[k]) for k in ("starts_at", "ends_at"))
        if ends <= starts:
            problems.append(doc.problem(("phases", index, "ends_at"), "ends before it starts"))
        elif ends < now and (phase["name"], moment(starts), moment(ends)) not in kept:
            problems.append(
                doc.problem(("phases", index, "ends_at"), f"{phase['ends_at']} is in the past")
            )
    tasks = value.get("tasks", [])
    task_problems = _duplicates(doc, "tasks", [t["id"] for t in tasks], "task id")
    for index, task in enumerate(tasks):
        task_problems += _task_problems(bundle, index, task)
    problems += task_problems
    if "overall" in value and not task_problems:  # it reads the tasks' rules
        found = overall.problems(value["overall"], [model_task(t) for t in tasks])
        problems += [doc.problem(("overall", *place), message) for place, message in found]
    baselines = value.get("baselines", [])
    names = [b["method_name"].strip() for b in baselines]
    problems += _duplicates(doc, "baselines", names, "baseline method_name")
    task_ids = {t["id"] for t in tasks}
    known = ", ".join(sorted(task_ids))
    for index, baseline in enumerate(baselines):
        problems += _file_problems(bundle, ("baselines", index, "context"), want="context")
        for i, task_id in enumerate(baseline["tasks"]):
            if task_id not in task_ids:
                problems.append(
                    doc.problem(
                        ("baselines", index, "tasks", i),
                        f"no task {task_id!r} in this bundle (tasks: {known})",
                    )
                )
    return sorted(problems, key=lambda p: (p.file != MANIFEST, p.line or 0, p.field))


def _duplicates(doc: Document, where: str, names: list[str], what: str) -> list[Problem]:
    seen: set[str] = set()
    problems = []
    for index, name in enumerate(names):
        if name in seen:
            problems.append(doc.problem((where, index), f"{what} {name!r} appears twice"))
        seen.add(name)
    return problems


def _task_problems(bundle: Bundle, index: int, task: dict[str, Any]) -> list[Problem]:
    doc = bundle.document
    kinds = [split["kind"] for split in task.get("splits", [])]
    problems = [
        doc.problem(("tasks", index, "splits", i), f"split kind {kind!r} appears twice")
        for i, kind in enumerate(kinds)
        if kind in kinds[:i]
    ]
    for i in range(len(kinds)):
        problems += _file_problems(bundle, ("tasks", index, "splits", i, "files"), want="tree")
    try:
        model_task(task).clean()
    except ValidationError as exc:
        places = {field: place for place, field in TASK_FIELDS}
        for field, messages in exc.message_dict.items():
            place = places.get(field, ())
            for message in messages:
                problems.append(doc.problem(("tasks", index, *place), message))
    return problems


def model_task(task: dict[str, Any], **more: Any) -> Task:
    """An unsaved ``Task`` with the bundle's values over the model's defaults."""
    return Task(task_id=task["id"], **task_values(task), **more)


def task_values(task: dict[str, Any]) -> dict[str, Any]:
    """The Task fields ``task`` (as written) sets, each field's default where it is silent
    (the primary metric: the benchmark's)."""
    values = {}
    for place, field in TASK_FIELDS:
        found: Any = task
        for key in place:
            found = found.get(key, _MISSING) if isinstance(found, dict) else _MISSING
        if found is _MISSING and field == "primary_metric":
            found = benchmark_class(task["protocol"]).primary  # the benchmark's own ranking
        elif found is _MISSING:
            model_field = Task._meta.get_field(field)
            assert isinstance(model_field, models.Field)  # TASK_FIELDS are columns, no relations
            found = model_field.get_default()
        values[field] = found.value if isinstance(found, Enum) else found
    return values


_MISSING = object()


def _file_problems(bundle: Bundle, place: tuple[str | int, ...], want: str) -> list[Problem]:
    """``want``: ``page`` (a UTF-8 Markdown file), ``tree`` (a directory or a tar file),
    ``logo`` (a raster image), ``kit`` (a file or a directory holding files) or ``context``
    (a build context: a directory with a Dockerfile)."""
    found: Any = bundle.value
    for key in place:
        found = found[key]
    path = (bundle.root / found).resolve()
    root = bundle.root.resolve()
    doc = bundle.document
    if root not in path.parents:
        return [doc.problem(place, f"{found!r} leads outside the bundle")]
    if not path.exists():
        return [doc.problem(place, f"{found!r}: no such file or directory in the bundle")]
    if want == "page":
        if not path.is_file():
            return [doc.problem(place, f"{found!r} is not a file")]
        if path.stat().st_size > MAX_PAGE_BYTES:
            return [doc.problem(place, f"{found!r}: a page holds at most {MAX_PAGE_BYTES} bytes")]
        try:
            path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            return [doc.problem(place, f"{found!r} is not UTF-8 text")]
    elif want == "logo":
        why = assets.logo_problem(path) if path.is_file() else "not a file"
        return [doc.problem(place, f"{found!r}: {why}")] if why else []
    elif want == "kit" and path == root / MANIFEST:
        return [doc.problem(place, f"{found!r}: the bundle's manifest is not a kit file")]
    elif want == "kit" and path.is_dir() and not any(p.is_file() for p in path.rglob("*")):
        return [doc.problem(place, f"{found!r}: a directory without a file")]
    elif want == "context" and not (path / "Dockerfile").is_file():
        return [
            doc.problem(
                place,
                f"{found!r} is not a build context: a baseline is a directory with a "
                "Dockerfile at its top level",
            )
        ]
    return []
