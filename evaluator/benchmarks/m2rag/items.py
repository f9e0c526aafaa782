"""M2RAG items: a query, its topic, web pages (text and images) and extra images.

Podium's layout (``docs/split-format.md``): ``queries.jsonl``, one query a line, and the image
files under ``images/``. Every image has its stored 0-10 relevance score and a caption. The
agent sees the images numbered from 0: the pages' images in page order, then the extra images
(the official code's order); an answer places image N as ``![caption](image N)``.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.jsonl import json_objects, unique_records
from evaluator.records import EvaluatorError

PODIUM_FILE = "queries.jsonl"
TOPIC = "topic"  # the label that becomes a slice
POSITIVE_SCORE = 8  # an image whose stored score is >= this is a positive (image recall)
_QUERY_FIELDS = ("query_id", "query", "topic", "pages", "extra_images")


@dataclass(frozen=True)
class M2Image:
    """One image the agent may place: its file (relative to the split), score and caption."""

    file: str
    score: int  # the stored relevance score, 0-10
    caption: str


@dataclass(frozen=True)
class WebPage:
    title: str
    text: str
    images: tuple[M2Image, ...]


@dataclass(frozen=True)
class M2Query:
    query_id: str
    query: str
    topic: str
    pages: tuple[WebPage, ...]
    extra_images: tuple[M2Image, ...]

    @functools.cached_property
    def images(self) -> tuple[M2Image, ...]:
        """Every image in the order the agent numbers them (from 0)."""
        return (*(image for page in self.pages for image in page.images), *self.extra_images)

    def positives(self) -> set[int]:
        """The indices of the images whose stored score is at least ``POSITIVE_SCORE``."""
        return {i for i, image in enumerate(self.images) if image.score >= POSITIVE_SCORE}

    def positive_files(self) -> list[str]:
        """The files of the positive listings, in order, a file listed twice twice (what
        image recall counts, as the official code counts cached URLs)."""
        return [self.images[i].file for i in sorted(self.positives())]


@dataclass
class M2Split:
    root: Path
    queries: list[M2Query]

    def image_path(self, image: M2Image) -> Path:
        return self.root / image.file

    def query(self, query_id: str) -> M2Query:
        """The query with this id (KeyError when there is none)."""
        return self._by_id[query_id]

    @functools.cached_property
    def _by_id(self) -> dict[str, M2Query]:
        return {query.query_id: query for query in self.queries}


@dataclass(frozen=True)
class M2Prediction:
    query_id: str
    answer: str  # markdown, images placed as ![caption](image N)
    failed: bool = False  # the agent gave no answer (error, time-out, broken reply)


def _text(record: Mapping[str, Any], name: str, where: str, empty: bool = False) -> str:
    value = record.get(name)
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise EvaluatorError(f"{where}: field {name!r}: expected a non-empty string")
    return value


def _image(record: object, root: Path, where: str) -> M2Image:
    if not isinstance(record, dict):
        raise EvaluatorError(f"{where}: expected an object with file, score and caption")
    file = _text(record, "file", where)
    score = record.get("score")
    if isinstance(score, bool) or not isinstance(score, int) or not 0 <= score <= 10:
        raise EvaluatorError(f"{where}: field 'score': expected an integer 0-10, got {score!r}")
    if Path(file).is_absolute() or ".." in Path(file).parts or not (root / file).is_file():
        raise EvaluatorError(f"{where}: field 'file': no image file {file!r} under {root}")
    return M2Image(file, score, _text(record, "caption", where, empty=True))


def _images(records: object, root: Path, where: str) -> tuple[M2Image, ...]:
    if not isinstance(records, list):
        raise EvaluatorError(f"{where}: expected a list of images")
    return tuple(_image(r, root, f"{where}[{i}]") for i, r in enumerate(records))


def _page(record: object, root: Path, where: str) -> WebPage:
    if not isinstance(record, dict):
        raise EvaluatorError(f"{where}: expected an object with title, text and images")
    images = _images(record.get("images", []), root, f"{where}: field 'images'")
    return WebPage(_text(record, "title", where, empty=True), _text(record, "text", where), images)


def read_query(record: Mapping[str, Any], root: Path, where: str) -> M2Query:
    unknown = sorted(set(record) - set(_QUERY_FIELDS))
    if unknown:
        raise EvaluatorError(f"{where}: field {unknown[0]!r}: not a query field")
    pages = record.get("pages")
    if not isinstance(pages, list) or not pages:
        raise EvaluatorError(f"{where}: field 'pages': expected a non-empty list of pages")
    return M2Query(
        _text(record, "query_id", where),
        _text(record, "query", where),
        _text(record, TOPIC, where),
        tuple(_page(page, root, f"{where}: pages[{i}]") for i, page in enumerate(pages)),
        _images(record.get("extra_images", []), root, f"{where}: field 'extra_images'"),
    )


def load_split(path: str | Path) -> M2Split:
    root = Path(path)
    file = root / PODIUM_FILE
    if not file.is_file():
        raise EvaluatorError(f"{root}: no {PODIUM_FILE}")
    queries = unique_records(
        file, lambda record, where: read_query(record, root, where), lambda q: q.query_id,
        "query_id", "queries",
    )  # fmt: skip
    return M2Split(root, queries)


def load_predictions(path: str | Path, split: M2Split) -> tuple[dict[str, M2Prediction], list[str]]:
    """Predictions ``{"query_id", "answer"}`` keyed by query id (``"failed": true`` marks an
    agent that gave none); a warning for the queries left unanswered (scored as failed)."""
    file = Path(path)
    if not file.is_file():
        raise EvaluatorError(f"{file}: predictions file does not exist")
    found: dict[str, M2Prediction] = {}
    for where, record in json_objects(file):
        unknown = sorted(set(record) - {"query_id", "answer", "failed"})
        if unknown:
            raise EvaluatorError(f"{where}: field {unknown[0]!r}: not a prediction field")
        query_id = _text(record, "query_id", where)
        if query_id not in split._by_id:
            raise EvaluatorError(f"{where}: field 'query_id': {query_id!r} is not in the split")
        if query_id in found:
            raise EvaluatorError(f"{where}: a second prediction for {query_id}")
        answer = record.get("answer", "")
        failed = record.get("failed", False)
        if not isinstance(answer, str) or not isinstance(failed, bool):
            raise EvaluatorError(f"{where}: fields 'answer' (a string), 'failed' (true/false)")
        found[query_id] = M2Prediction(query_id, answer, failed)
    absent = [q.query_id for q in split.queries if q.query_id not in found]
    warnings = []
    if absent:
        more = " ..." if len(absent) > 10 else ""
        warnings.append(
            f"{len(absent)} queries without a prediction (scored as failed): "
            f"{', '.join(absent[:10])}{more}"
        )
    return found, warnings


def write_sample_predictions(split: M2Split, path: str | Path, seed: int = 0) -> None:
    """Made-up answers: some placing the positive images, some text-only, one repeating an
    index and one out of range (both dropped), some failed."""
    rng = random.Random(seed)
    lines = []
    for query in split.queries:
        kind = rng.choice(("images", "images", "text", "quirks", "failed"))
        text = f"{query.pages[0].text.split('.')[0]}. This answers: {query.query}"
        if kind == "images":
            for index in sorted(query.positives())[:3]:
                caption = query.images[index].caption
                text += f"\n\nAs shown below, {caption}.\n\n![{caption}](image {index})\n"
        elif kind == "quirks":
            text += "\n\n![first](image 0)\n\n![again](image 0)\n\n![none](image 999)\n"
        record: dict[str, Any] = {"query_id": query.query_id, "answer": text}
        if kind == "failed":
            record = {"query_id": query.query_id, "answer": "", "failed": True}
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    Path(path).write_text("".join(lines), encoding="utf-8")
