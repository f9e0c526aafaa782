"""The Hugging Face layout of the public CRAG-MM data: reading it and converting it.

Two layouts are read: a ``datasets`` ``save_to_disk`` directory (a ``Dataset`` or a
``DatasetDict``) and parquet files as published on the hub (``<split>-00000-of-00001.parquet``,
the ``datasets`` features stored in the parquet metadata). Label names come from the
``ClassLabel`` features, never from a list in this code. ``turns`` and ``answers`` may be stored
either as a sequence of structs (columns of lists) or as a list of structs (rows); an
``image_quality`` column at conversation level (as in some releases) applies to every turn.
Turn fields that are strings or ``ClassLabel`` values become labels; other turn fields are
not labels and are left out.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image, UnidentifiedImageError

from evaluator.benchmarks.crag_mm.official_data import DataFixes
from evaluator.benchmarks.crag_mm.records import STANDARD_LABELS, Conversation, Split
from evaluator.benchmarks.crag_mm.split import (
    SESSIONS_FILE,
    UniqueIds,
    parse_conversation,
    read_split,
    write_split,
)
from evaluator.records import EvaluatorError

if TYPE_CHECKING:
    import datasets

BATCH_ROWS = 64
SHARD_NAME = re.compile(r"(?P<split>.+?)(?:-\d+-of-\d+)?\.parquet")
SAFE_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")
_NOT_LABEL = object()  # a turn field that is neither a string nor a ClassLabel


def is_hf_layout(path: str | Path) -> bool:
    """True for a save_to_disk directory, a parquet file or a directory holding parquet files."""
    root = Path(path)
    if root.is_file():
        return root.suffix == ".parquet"
    return root.is_dir() and (_is_saved_dataset(root) or any(root.rglob("*.parquet")))


def _is_saved_dataset(root: Path) -> bool:
    return (root / "dataset_dict.json").is_file() or (root / "state.json").is_file()


def convert_hf(src: str | Path, out_dir: str | Path, *, hf_split: str | None = None) -> Split:
    """Convert Hugging Face CRAG-MM data to a Podium split directory (images saved as files),
    with the official evaluation's corrections (``official_data``); the split's ``notes`` say
    which were made."""
    fixes = DataFixes()
    split = write_split(hf_conversations(src, hf_split=hf_split, fixes=fixes), out_dir)
    return dataclasses.replace(split, notes=tuple(fixes.describe()))


def load_hf(
    src: str | Path, *, hf_split: str | None = None, cache_dir: str | Path | None = None
) -> Split:
    """Load Hugging Face data as a split, converting it once into ``cache_dir``.

    The cache entry is keyed by the source path, the split name and each data file's size
    and modification time, so a changed source is converted again. The default cache is
    ``$XDG_CACHE_HOME/podium/hf-splits`` (``~/.cache`` when unset).
    """
    root = Path(src).resolve()
    files = sorted(p for p in ([root] if root.is_file() else root.rglob("*")) if p.is_file())
    stamp = [(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    key = hashlib.sha256(json.dumps([str(root), hf_split, stamp]).encode()).hexdigest()[:24]
    target = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = target / key
    if (target / SESSIONS_FILE).is_file():
        return read_split(target)
    try:
        return convert_hf(root, target, hf_split=hf_split)
    except (EvaluatorError, OSError):
        if (target / SESSIONS_FILE).is_file():  # another process converted it meanwhile
            return read_split(target)
        raise


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "podium" / "hf-splits"


def hf_conversations(
    src: str | Path, *, hf_split: str | None = None, fixes: DataFixes | None = None
) -> Iterator[tuple[Conversation, bytes | None]]:
    """Validated conversations with their image bytes, in the dataset's order, corrected as the
    official evaluation corrects them (``fixes`` records what was changed)."""
    features, rows = _open(Path(src), hf_split)
    schema = _Schema.from_features(features, str(src))
    ids = UniqueIds()
    fixes = fixes if fixes is not None else DataFixes()
    for index, (where, row) in enumerate(rows):
        read, image_bytes = schema.record(row, where)
        record = fixes.apply(read)
        if record is None:
            continue
        if image_bytes is not None:
            safe_id = SAFE_CHARS.sub("_", str(record["session_id"]))[:48]
            record["image"] = f"images/{index:06d}-{safe_id}.{_image_extension(image_bytes, where)}"
        conversation = parse_conversation(record, where)
        ids.add(conversation, where)
        yield conversation, image_bytes


def _open(
    src: Path, hf_split: str | None
) -> tuple[datasets.Features, Iterator[tuple[str, dict[str, Any]]]]:
    import datasets  # here: loading it takes a second and a half (``loading.py`` imports this)

    if src.is_dir() and _is_saved_dataset(src):
        try:
            loaded = datasets.load_from_disk(str(src))
        except Exception as exc:  # datasets raises several types for a damaged directory
            raise EvaluatorError(f"{src}: not a readable save_to_disk directory: {exc}") from exc
        name = None
        if isinstance(loaded, datasets.DatasetDict):
            name = _choose_split(src, sorted(loaded), hf_split)
            loaded = loaded[name]
        label = f"{src} [{name}]" if name else str(src)
        return loaded.features, _dataset_rows(loaded, label)
    shards: dict[str, list[Path]] = {}
    for file in sorted([src] if src.is_file() else src.rglob("*.parquet")):
        shards.setdefault(_shard_split(file), []).append(file)
    if not shards:
        raise EvaluatorError(f"{src}: no parquet files")
    files = shards[_choose_split(src, sorted(shards), hf_split)]
    features = _parquet_features(files[0])
    for file in files[1:]:
        if _parquet_features(file) != features:
            raise EvaluatorError(f"{file}: features differ from those of {files[0]}")
    return features, _parquet_rows(files)


def _choose_split(src: Path, names: list[str], hf_split: str | None) -> str:
    if hf_split is None and len(names) == 1:
        return names[0]
    if hf_split in names:
        return hf_split
    wanted = f"split {hf_split!r} not found" if hf_split else "several splits, pick one"
    raise EvaluatorError(f"{src}: {wanted} (hf_split); available: {', '.join(names)}")


def _shard_split(file: Path) -> str:
    """``validation-00000-of-00002.parquet`` -> validation; ``validation/0000.parquet`` too."""
    match = SHARD_NAME.fullmatch(file.name)
    name = match["split"] if match else file.stem
    return file.parent.name if name.isdigit() else name


def _parquet_features(file: Path) -> datasets.Features:
    import datasets
    import pyarrow.parquet as pq

    try:
        return datasets.Features.from_arrow_schema(pq.read_schema(file))
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError... for a damaged file
        raise EvaluatorError(f"{file}: not a readable parquet file: {exc}") from exc


def _parquet_rows(files: list[Path]) -> Iterator[tuple[str, dict[str, Any]]]:
    import pyarrow.parquet as pq

    for file in files:
        row = 0
        for batch in pq.ParquetFile(file).iter_batches(batch_size=BATCH_ROWS):
            for item in batch.to_pylist():
                yield f"{file} row {row}", item
                row += 1


def _dataset_rows(dataset: datasets.Dataset, label: str) -> Iterator[tuple[str, dict[str, Any]]]:
    row = 0
    for table in dataset.with_format("arrow").iter(batch_size=BATCH_ROWS):
        for item in table.to_pylist():
            yield f"{label} row {row}", item
            row += 1


@dataclass(frozen=True)
class _Schema:
    """How to read one row: the turn fields (with their ClassLabel, if any) and the layouts."""

    turn_fields: dict[str, datasets.ClassLabel | None]
    turns_as_columns: bool
    answers_as_columns: bool
    conversation_labels: dict[str, datasets.ClassLabel | None]

    @classmethod
    def from_features(cls, features: datasets.Features, src: str) -> _Schema:
        for name in ("session_id", "turns", "answers"):
            if name not in features:
                raise EvaluatorError(f"{src}: no '{name}' column (columns: {', '.join(features)})")
        turns, turns_as_columns = _struct(features["turns"], "turns", src)
        _, answers_as_columns = _struct(features["answers"], "answers", src)
        fields = {n: _label_kind(f) for n, f in turns.items()}
        shared = {}
        if "image_quality" in features:
            shared["image_quality"] = _label_kind(features["image_quality"])
        for name, kind in [*fields.items(), *shared.items()]:
            if name in STANDARD_LABELS and kind is _NOT_LABEL:
                raise EvaluatorError(
                    f"{src}: label column '{name}' is neither strings nor a ClassLabel"
                )
        return cls(
            turn_fields={n: k for n, k in fields.items() if k is not _NOT_LABEL},
            turns_as_columns=turns_as_columns,
            answers_as_columns=answers_as_columns,
            conversation_labels={n: k for n, k in shared.items() if k is not _NOT_LABEL},
        )

    def record(self, row: dict[str, Any], where: str) -> tuple[dict[str, Any], bytes | None]:
        """The Podium ``sessions.jsonl`` record of a row (image path filled in later)."""
        shared = {
            name: _decode(row.get(name), kind, where, name)
            for name, kind in self.conversation_labels.items()
        }
        turns = []
        for index, turn in enumerate(
            _rows(row.get("turns"), self.turns_as_columns, where, "turns")
        ):
            decoded = dict(shared)
            for name, kind in self.turn_fields.items():
                value = _decode(turn.get(name), kind, where, f"turns[{index}].{name}")
                if value is not None:
                    decoded[name] = value
            turns.append({n: v for n, v in decoded.items() if v is not None})
        answers = _rows(row.get("answers"), self.answers_as_columns, where, "answers")
        record = {
            "session_id": row.get("session_id"),
            "image": None,
            "image_url": row.get("image_url"),
            "turns": turns,
            "answers": [{k: a.get(k) for k in ("interaction_id", "ans_full")} for a in answers],
        }
        return record, _image_bytes(row.get("image"), where)


def _struct(feature: Any, name: str, src: str) -> tuple[dict[str, Any], bool]:
    """The fields of a ``turns``/``answers`` feature and whether they are stored as columns."""
    if isinstance(feature, dict):
        return {n: getattr(f, "feature", f) for n, f in feature.items()}, True
    inner = getattr(feature, "feature", None)
    if isinstance(inner, dict):
        return dict(inner), False
    raise EvaluatorError(f"{src}: column '{name}' is not a sequence of structs ({feature!r})")


def _label_kind(feature: Any) -> Any:
    import datasets

    if isinstance(feature, datasets.ClassLabel):
        return feature
    if isinstance(feature, datasets.Value) and feature.dtype in ("string", "large_string"):
        return None
    return _NOT_LABEL


def _decode(value: Any, kind: datasets.ClassLabel | None, where: str, field: str) -> Any:
    if kind is None or value is None or not isinstance(value, int):
        return value
    if not 0 <= value < kind.num_classes:
        raise EvaluatorError(
            f"{where}: field '{field}': label index {value} outside the {kind.num_classes} "
            "ClassLabel names"
        )
    return kind.int2str(value)


def _rows(value: Any, as_columns: bool, where: str, field: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not as_columns:
        return [item or {} for item in value]
    lengths = {len(column or []) for column in value.values()}
    if len(lengths) > 1:
        raise EvaluatorError(f"{where}: field '{field}': its columns have different lengths")
    count = lengths.pop() if lengths else 0
    return [{n: (column or [])[i] for n, column in value.items()} for i in range(count)]


def _image_bytes(value: Any, where: str) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, dict) and value.get("bytes"):
        data: bytes | None = value["bytes"]
        return data
    path = value.get("path") if isinstance(value, dict) else None
    if path and Path(path).is_file():
        return Path(path).read_bytes()
    raise EvaluatorError(f"{where}: field 'image': no image bytes and no readable file ({path})")


def _image_extension(data: bytes, where: str) -> str:
    try:
        with Image.open(io.BytesIO(data)) as image:
            kind = (image.format or "").lower()
    except (UnidentifiedImageError, OSError) as exc:
        raise EvaluatorError(f"{where}: field 'image': bytes are not a readable image") from exc
    return {"jpeg": "jpg", "": "img"}.get(kind, kind)
