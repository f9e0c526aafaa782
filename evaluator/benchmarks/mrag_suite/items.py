"""MRAG-Suite items: the normalised record, its labels, its distractor pool, the split file.

A split directory holds ``items.jsonl`` and the image files it names (``docs/mrag-suite.md``).
One line per item, MRAG-Suite's normalised shape plus Podium's fields::

    {"item_id": str, "question": str, "short_answer": str, "long_answer": str,
     "evidence_imgs": [{"id", "file", "caption"}], "evidence_txts": [{"id", "text"}],
     "distractor_imgs": [...], "distractor_txts": [...],
     "source": str, "variant": "filtered" | "full", "ambiguity": "ambiguous" | "clear"}

An image entry may be a bare file name (its id is the name, its caption empty). A caption is
what the text-only claim checker reads for an image. The labels (``source``, ``variant``,
``ambiguity``) become slices. Errors name the file, line and field.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evaluator.jsonl import unique_records
from evaluator.records import EvaluatorError

SPLIT_FILE = "items.jsonl"
LABELS = ("source", "variant", "ambiguity")
LABEL_VALUES: dict[str, tuple[str, ...]] = {
    "variant": ("filtered", "full"),
    "ambiguity": ("ambiguous", "clear"),
}
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
Modality = Literal["image", "text"]


@dataclass(frozen=True)
class Evidence:
    """One image or passage an item can retrieve: gold evidence or a distractor."""

    evidence_id: str
    modality: Modality
    content: str  # the passage, or the image's caption (what the claim checker reads)
    file: str = ""  # an image's file, relative to the split's root
    gold: bool = False


@dataclass(frozen=True)
class MragItem:
    item_id: str
    question: str
    short_answer: str
    long_answer: str
    evidence: tuple[Evidence, ...]  # gold images, then gold passages
    distractors: tuple[Evidence, ...]  # the pool: images, then passages
    labels: dict[str, str]

    def pool(self, modality: Modality, gold: bool) -> list[Evidence]:
        found = self.evidence if gold else self.distractors
        return [entry for entry in found if entry.modality == modality]


@dataclass
class MragSplit:
    root: Path
    items: list[MragItem]

    def item(self, item_id: str) -> MragItem:
        """The item with this id (KeyError when there is none)."""
        return self._by_id[item_id]

    @functools.cached_property
    def _by_id(self) -> dict[str, MragItem]:
        return {item.item_id: item for item in self.items}

    def image_files(self) -> list[str]:
        """Every image file the split names, once, sorted."""
        every = (*(e for i in self.items for e in (*i.evidence, *i.distractors)),)
        return sorted({entry.file for entry in every if entry.modality == "image"})


def load_split(path: str | Path) -> MragSplit:
    """An MRAG-Suite split directory (``items.jsonl`` and its images)."""
    root = Path(path)
    file = root / SPLIT_FILE
    if not file.is_file():
        raise EvaluatorError(f"{root}: no {SPLIT_FILE}")
    items = unique_records(
        file,
        lambda record, where: _item(record, where, root),
        lambda i: i.item_id,
        "item_id",
        "items",
    )
    return MragSplit(root, items)


def _text(record: dict[str, Any], name: str, where: str, empty: bool = False) -> str:
    value = record.get(name)
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise EvaluatorError(f"{where}: field {name!r}: must be a non-empty string")
    return value


def _item(record: dict[str, Any], where: str, root: Path) -> MragItem:
    item_id = _text(record, "item_id", where)
    if _ID.fullmatch(item_id) is None:
        raise EvaluatorError(f"{where}: field 'item_id': {item_id!r} is not a plain id")
    evidence = (
        *_images(record, "evidence_imgs", where, root, True),
        *_passages(record, "evidence_txts", where, True),
    )
    distractors = (
        *_images(record, "distractor_imgs", where, root, False),
        *_passages(record, "distractor_txts", where, False),
    )
    if not evidence:
        raise EvaluatorError(f"{where}: no evidence: evidence_imgs and evidence_txts are empty")
    ids = [entry.evidence_id for entry in (*evidence, *distractors)]
    twice = sorted({entry for entry in ids if ids.count(entry) > 1})
    if twice:
        raise EvaluatorError(f"{where}: evidence id {twice[0]!r} twice in one item")
    return MragItem(
        item_id=item_id,
        question=_text(record, "question", where),
        short_answer=_text(record, "short_answer", where),
        long_answer=_text(record, "long_answer", where),
        evidence=evidence,
        distractors=distractors,
        labels=_labels(record, where),
    )


def _labels(record: dict[str, Any], where: str) -> dict[str, str]:
    labels = {}
    for name in LABELS:
        value = record.get(name)
        if value is None:
            continue
        allowed = LABEL_VALUES.get(name)
        if not isinstance(value, str) or not value or (allowed and value not in allowed):
            wanted = " or ".join(allowed) if allowed else "a non-empty string"
            raise EvaluatorError(f"{where}: field {name!r}: {value!r} is not {wanted}")
        labels[name] = value
    return labels


def _entries(record: dict[str, Any], name: str, where: str) -> list[Any]:
    value = record.get(name, [])
    if not isinstance(value, list):
        raise EvaluatorError(f"{where}: field {name!r}: must be a list")
    return value


def _images(
    record: dict[str, Any], name: str, where: str, root: Path, gold: bool
) -> list[Evidence]:
    found = []
    for index, entry in enumerate(_entries(record, name, where)):
        at = f"{where}: field '{name}[{index}]'"
        if isinstance(entry, str):
            entry = {"id": Path(entry).stem, "file": entry, "caption": ""}
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            raise EvaluatorError(f"{at}: must be a file name or an object with a 'file'")
        file, caption = entry["file"], entry.get("caption", "")
        image_id = entry.get("id", Path(file).stem)
        if not isinstance(caption, str) or not isinstance(image_id, str) or not image_id:
            raise EvaluatorError(f"{at}: 'id' and 'caption' must be strings")
        if Path(file).is_absolute() or ".." in Path(file).parts or not (root / file).is_file():
            raise EvaluatorError(f"{at}: no image file {file!r} under {root}")
        found.append(Evidence(image_id, "image", caption, file, gold))
    return found


def _passages(record: dict[str, Any], name: str, where: str, gold: bool) -> list[Evidence]:
    found = []
    for index, entry in enumerate(_entries(record, name, where)):
        at = f"{where}: field '{name}[{index}]'"
        if isinstance(entry, str):
            entry = {"id": f"{'e' if gold else 'd'}txt{index}", "text": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            raise EvaluatorError(f"{at}: must be a passage or an object with a 'text'")
        if not isinstance(entry.get("id"), str) or not entry["id"]:
            raise EvaluatorError(f"{at}: 'id' must be a non-empty string")
        found.append(Evidence(entry["id"], "text", entry["text"], "", gold))
    return found
