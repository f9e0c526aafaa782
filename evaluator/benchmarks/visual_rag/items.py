"""Visual-RAG queries and predictions: the records, the two split layouts, the predictions file.

A split directory is either Podium's format (``queries.jsonl``) or the released layout
(``v1_anno.jsonl``), each beside ``images/<image id>.<ext>`` (``docs/split-format.md``):

- Podium: ``{"query_id", "question", "answers": [str], "candidates": {id: 0 | 1},
  "species": str, <any other string field: an extra label>}``;
- released: ``{"question", "answer": [str], "images": {guid: 0 | 1}, "sn": str}``; a row
  without an ``id`` gets its 1-based line number, as a string, as its query id; ``sn`` is the
  ``species`` label.

A query needs a non-empty question, a non-empty list of non-empty answers, candidates with at
least one clue (1), and an image file for every candidate. Errors name the file, line and field.

Predictions (JSONL): ``{"query_id", "setting", "answer": str, "ranking": [image id]}``, one per
(query, setting); ``ranking`` is required in the ``retrieval`` setting and ignored elsewhere.
Setting names: ``retrieval``, ``zero_shot``, ``gt_clue``, ``non_clue``, ``topk_<k>``,
``one_in_<k>``.
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.jsonl import json_objects
from evaluator.records import EvaluatorError

PODIUM_FILE = "queries.jsonl"
RELEASED_FILE = "v1_anno.jsonl"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")
SPECIES = "species"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_LABEL = re.compile(r"[a-z][a-z0-9_]{0,63}")
# A setting's name (the JSON Schema's ``pattern``; ``one_in_<k>`` needs k >= 2).
SETTING_PATTERN = (
    r"^(retrieval|zero_shot|gt_clue|non_clue|topk_[1-9][0-9]*|one_in_([2-9]|[1-9][0-9]+))$"
)
_SETTING = re.compile(SETTING_PATTERN)
_PODIUM_FIELDS = ("query_id", "question", "answers", "candidates", SPECIES)
_RELEASED_FIELDS = ("question", "answer", "images", "sn")


@dataclass(frozen=True)
class VisualQuery:
    query_id: str
    question: str
    answers: tuple[str, ...]  # the annotators' answers: valid alternatives
    candidates: tuple[str, ...]  # image ids, in the file's order
    clues: frozenset[str]  # the candidates marked 1
    labels: dict[str, str] = field(default_factory=dict)  # species + extra labels: slices


@dataclass
class VisualSplit:
    root: Path
    queries: list[VisualQuery]
    images: dict[str, str]  # image id -> path relative to root ("images/<id>.png")
    layout: str  # "podium" or "released"

    def image_path(self, image_id: str) -> Path:
        return self.root / self.images[image_id]

    def query(self, query_id: str) -> VisualQuery:
        """The query with this id (KeyError when there is none)."""
        return self._by_id[query_id]

    @functools.cached_property
    def _by_id(self) -> dict[str, VisualQuery]:
        return {query.query_id: query for query in self.queries}


@dataclass(frozen=True)
class VisualPrediction:
    query_id: str
    setting: str
    answer: str
    ranking: tuple[str, ...] | None  # None: not given


def check_setting(name: str, where: str = "setting") -> str:
    """A setting name, checked (``topk_<k>`` with k >= 1, ``one_in_<k>`` with k >= 2)."""
    if not isinstance(name, str) or _SETTING.fullmatch(name) is None:
        raise EvaluatorError(
            f"{where}: {name!r} is not a setting (retrieval, zero_shot, gt_clue, non_clue, "
            "topk_<k>, one_in_<k> with k >= 2)"
        )
    return name


def load_split(path: str | Path) -> VisualSplit:
    """A Visual-RAG split directory in either layout."""
    root = Path(path)
    if (root / PODIUM_FILE).is_file():
        layout, file = "podium", root / PODIUM_FILE
    elif (root / RELEASED_FILE).is_file():
        layout, file = "released", root / RELEASED_FILE
    else:
        raise EvaluatorError(f"{root}: no {PODIUM_FILE} (Podium) or {RELEASED_FILE} (released)")
    images = _image_files(root)
    queries: list[VisualQuery] = []
    seen: dict[str, str] = {}
    for number, (where, record) in enumerate(json_objects(file), start=1):
        query = _podium(record, where) if layout == "podium" else _released(record, number, where)
        if query.query_id in seen:
            raise EvaluatorError(
                f"{where}: field 'query_id': {query.query_id!r} again "
                f"(first at {seen[query.query_id]})"
            )
        seen[query.query_id] = where
        missing = [image for image in query.candidates if image not in images]
        if missing:
            raise EvaluatorError(
                f"{where}: field 'candidates': no image file for {missing[0]!r} under "
                f"{root / 'images'} ({len(missing)} missing)"
            )
        queries.append(query)
    if not queries:
        raise EvaluatorError(f"{file}: no queries")
    return VisualSplit(root, queries, images, layout)


def _image_files(root: Path) -> dict[str, str]:
    folder = root / "images"
    if not folder.is_dir():
        raise EvaluatorError(f"{root}: no images/ directory")
    return {
        entry.stem: f"images/{entry.name}"
        for entry in sorted(folder.iterdir())
        if entry.suffix.lower() in IMAGE_SUFFIXES and entry.is_file()
    }


def _text(record: dict[str, Any], name: str, where: str) -> str:
    value = record.get(name)
    if not isinstance(value, str) or not value.strip():
        raise EvaluatorError(f"{where}: field {name!r}: expected a non-empty string, got {value!r}")
    return value


def _answers(record: dict[str, Any], name: str, where: str) -> tuple[str, ...]:
    value = record.get(name)
    if not isinstance(value, list) or not value:
        raise EvaluatorError(f"{where}: field {name!r}: expected a non-empty list of answers")
    for answer in value:
        if not isinstance(answer, str) or not answer.strip():
            raise EvaluatorError(f"{where}: field {name!r}: an answer is {answer!r}")
    return tuple(value)


def _candidates(
    record: dict[str, Any], name: str, where: str
) -> tuple[tuple[str, ...], frozenset[str]]:
    value = record.get(name)
    if not isinstance(value, dict) or not value:
        raise EvaluatorError(f"{where}: field {name!r}: expected {{image id: 0 or 1}}, non-empty")
    for image, mark in value.items():
        if not _ID.fullmatch(image):
            raise EvaluatorError(f"{where}: field {name!r}: {image!r} is not an image id")
        if mark not in (0, 1) or isinstance(mark, bool):
            raise EvaluatorError(
                f"{where}: field {name!r}: {image!r} is marked {mark!r}, not 0 or 1"
            )
    clues = frozenset(image for image, mark in value.items() if mark == 1)
    if not clues:
        raise EvaluatorError(f"{where}: field {name!r}: no clue image (none is marked 1)")
    return tuple(value), clues


def _podium(record: dict[str, Any], where: str) -> VisualQuery:
    candidates, clues = _candidates(record, "candidates", where)
    labels = {SPECIES: _text(record, SPECIES, where)}
    for name in record:
        if name in _PODIUM_FIELDS:
            continue
        if not _LABEL.fullmatch(name):
            raise EvaluatorError(f"{where}: field {name!r}: not a label name ([a-z][a-z0-9_]*)")
        labels[name] = _text(record, name, where)
    query_id = _text(record, "query_id", where)
    if not _ID.fullmatch(query_id):
        raise EvaluatorError(f"{where}: field 'query_id': {query_id!r} is not an id")
    return VisualQuery(
        query_id, _text(record, "question", where), _answers(record, "answers", where),
        candidates, clues, labels,
    )  # fmt: skip


def _released(record: dict[str, Any], number: int, where: str) -> VisualQuery:
    unknown = sorted(set(record) - {*_RELEASED_FIELDS, "id"})
    if unknown:
        raise EvaluatorError(f"{where}: field {unknown[0]!r}: not in the released layout")
    candidates, clues = _candidates(record, "images", where)
    query_id = str(record["id"]) if "id" in record else str(number)
    return VisualQuery(
        query_id, _text(record, "question", where), _answers(record, "answer", where),
        candidates, clues, {SPECIES: _text(record, "sn", where)},
    )  # fmt: skip


def load_predictions(
    path: str | Path, split: VisualSplit, settings: tuple[str, ...] | None = None
) -> tuple[dict[str, VisualPrediction], list[str]]:
    """Predictions keyed ``<setting>/<query_id>``, and warnings (queries with no prediction in
    a setting that has some). ``settings`` limits what is accepted (default: any)."""
    file = Path(path)
    if not file.is_file():
        raise EvaluatorError(f"{file}: predictions file does not exist")
    known = {query.query_id for query in split.queries}
    found: dict[str, VisualPrediction] = {}
    lines: dict[str, str] = {}
    for where, record in json_objects(file):
        prediction = _prediction(record, where)
        if prediction.query_id not in known:
            raise EvaluatorError(
                f"{where}: field 'query_id': {prediction.query_id!r} is not in the split"
            )
        if settings is not None and prediction.setting not in settings:
            raise EvaluatorError(
                f"{where}: field 'setting': {prediction.setting!r} is not evaluated here "
                f"({', '.join(settings)})"
            )
        key = prediction_key(prediction.setting, prediction.query_id)
        if key in found:
            raise EvaluatorError(f"{where}: a second prediction for {key} (first at {lines[key]})")
        found[key], lines[key] = prediction, where
    warnings = []
    for setting in sorted({p.setting for p in found.values()} | set(settings or ())):
        absent = [
            q.query_id for q in split.queries if prediction_key(setting, q.query_id) not in found
        ]
        if absent:
            warnings.append(
                f"setting {setting}: {len(absent)} queries without a prediction (scored as no "
                f"answer): {', '.join(absent[:10])}{' ...' if len(absent) > 10 else ''}"
            )
    return found, warnings


def prediction_key(setting: str, query_id: str) -> str:
    return f"{setting}/{query_id}"


def _prediction(record: dict[str, Any], where: str) -> VisualPrediction:
    for name in ("query_id", "setting"):
        if not isinstance(record.get(name), str):
            raise EvaluatorError(f"{where}: field {name!r}: expected a string")
    setting = check_setting(record["setting"], f"{where}: field 'setting'")
    answer = record.get("answer", "")
    if not isinstance(answer, str):
        raise EvaluatorError(f"{where}: field 'answer': expected a string, got {answer!r:.80}")
    ranking = record.get("ranking")
    if ranking is not None and not (
        isinstance(ranking, list) and all(isinstance(image, str) for image in ranking)
    ):
        raise EvaluatorError(f"{where}: field 'ranking': expected a list of image ids")
    if setting == "retrieval" and ranking is None:
        raise EvaluatorError(f"{where}: field 'ranking': required in the retrieval setting")
    unknown = sorted(set(record) - {"query_id", "setting", "answer", "ranking"})
    if unknown:
        raise EvaluatorError(f"{where}: field {unknown[0]!r}: not a prediction field")
    return VisualPrediction(
        record["query_id"], setting, answer, None if ranking is None else tuple(ranking)
    )


def write_sample_predictions(
    split: VisualSplit, path: str | Path, settings: Sequence[str], seed: int = 0
) -> None:
    """Made-up predictions: per (setting, query) an annotator answer, "I don't know" or a
    wrong one, and in ``retrieval`` the candidates with the clues moved partly forward."""
    rng = random.Random(seed)
    lines = []
    for setting in settings:
        for query in split.queries:
            answer = rng.choice((query.answers[0], "I don't know", "purple with stripes"))
            record: dict[str, Any] = {"query_id": query.query_id, "setting": setting}
            record["answer"] = answer
            if setting == "retrieval":
                ranking = list(query.candidates)
                rng.shuffle(ranking)
                ranking.sort(key=lambda image: (image not in query.clues) and rng.random() < 0.7)
                record["ranking"] = ranking
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    Path(path).write_text("".join(lines), encoding="utf-8")
