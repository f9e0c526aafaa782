"""The organiser's search corpus: image entries, web pages, and the chunks web search indexes.

Format (``docs/internals.md``): a directory with ``images.jsonl`` (one image entry a line:
``{"image": "images/<file>", "url", "entities": [{"entity_name", "entity_attributes"}]}``),
``web.jsonl`` (one page a line: ``{"page_url", "page_name", "page_snippet", "text"}``) and
``images/``. Either JSONL file may be absent; a task that needs it then fails with a clear error.

Chunking, by default as the official index builder chunks a page (its ``enable_chunking``):
chunk 0 is ``"<page_name> <page_snippet>"``, then windows of ``ChunkPolicy.words``
whitespace-separated words of the page's ``text`` (512, none shared: ``overlap`` 0), at most
``ChunkPolicy.max_chunks`` (50) chunks a page in all. Chunk ``n`` of a page is indexed
``"<page_url>_chunk_<n>"`` as in the official API. (The encoder then truncates a chunk to 512
tokens, as the official one does.) An organiser may choose overlapping windows instead, so a
fact straddling a boundary is whole in one chunk; rankings then differ from the official ones.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from evaluator.records import EvaluatorError

IMAGES_FILE = "images.jsonl"
WEB_FILE = "web.jsonl"


class CorpusError(EvaluatorError):
    """The corpus directory is malformed; the message names the file, line and field."""


@dataclass(frozen=True)
class Entity:
    entity_name: str
    entity_attributes: dict[str, Any]


@dataclass(frozen=True)
class ImageEntry:
    image: Path  # absolute path of the image file
    url: str
    entities: tuple[Entity, ...]


@dataclass(frozen=True)
class WebPage:
    page_url: str
    page_name: str
    page_snippet: str
    text: str


@dataclass(frozen=True)
class ChunkPolicy:
    words: int = 512
    overlap: int = 0
    max_chunks: int = 50

    def __post_init__(self) -> None:
        if self.words < 1 or not 0 <= self.overlap < self.words:
            raise ValueError(f"chunk policy needs words >= 1 and 0 <= overlap < words: {self}")
        if self.max_chunks < 1:
            raise ValueError(f"chunk policy needs max_chunks >= 1: {self}")

    @property
    def id(self) -> str:
        return f"title-words{self.words}-overlap{self.overlap}-max{self.max_chunks}"


def page_chunks(page: WebPage, policy: ChunkPolicy) -> list[str]:
    """What web search indexes of ``page``: its name and snippet, then its text's windows."""
    return [f"{page.page_name} {page.page_snippet}", *chunk_text(page.text, policy)][
        : policy.max_chunks
    ]


def chunk_text(text: str, policy: ChunkPolicy) -> list[str]:
    """Overlapping word windows covering ``text``; a short text is one chunk."""
    words = text.split()
    step = policy.words - policy.overlap
    chunks = []
    for start in range(0, len(words), step):
        chunks.append(" ".join(words[start : start + policy.words]))
        if start + policy.words >= len(words):
            break
    return chunks


def chunk_index(page_url: str, n: int) -> str:
    return f"{page_url}_chunk_{n}"


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read: {exc.strerror}") from exc
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise CorpusError(f"{path}, line {number}: not valid JSON: {exc.msg}") from exc
                if not isinstance(record, dict):
                    raise CorpusError(f"{path}, line {number}: expected a JSON object")
                yield number, record
        except UnicodeDecodeError as exc:
            raise CorpusError(f"{path}: not UTF-8 text ({exc.reason})") from exc


def _string(record: dict[str, Any], name: str, where: str, *, non_empty: bool = True) -> str:
    value = record.get(name)
    if not isinstance(value, str) or (non_empty and not value.strip()):
        kind = "a non-empty string" if non_empty else "a string"
        raise CorpusError(f"{where}: field {name!r} must be {kind}, got {value!r:.80}")
    return value


def _entities(record: dict[str, Any], where: str) -> tuple[Entity, ...]:
    raw = record.get("entities")
    if not isinstance(raw, list):
        raise CorpusError(f"{where}: field 'entities' must be a list, got {raw!r:.80}")
    entities = []
    for i, item in enumerate(raw):
        at = f"{where}, entities[{i}]"
        if not isinstance(item, dict):
            raise CorpusError(f"{at}: expected an object with entity_name and entity_attributes")
        attributes = item.get("entity_attributes", {})
        if not isinstance(attributes, dict):
            raise CorpusError(f"{at}: field 'entity_attributes' must be an object")
        entities.append(Entity(_string(item, "entity_name", at), attributes))
    return tuple(entities)


def _image_path(root: Path, record: dict[str, Any], where: str) -> Path:
    relative = _string(record, "image", where)
    pure = PurePosixPath(relative)
    if pure.is_absolute() or ".." in pure.parts:
        raise CorpusError(f"{where}: field 'image' must be a path inside the corpus: {relative!r}")
    path = root / pure
    if not path.is_file():
        raise CorpusError(f"{where}: field 'image': no such file {path}")
    return path


@dataclass
class Corpus:
    root: Path

    @property
    def images_file(self) -> Path:
        return self.root / IMAGES_FILE

    @property
    def web_file(self) -> Path:
        return self.root / WEB_FILE

    def image_entries(self) -> list[ImageEntry]:
        """All image entries, validated; the entry's position is its search ``index``."""
        entries = []
        for number, record in _json_lines(self._require(self.images_file)):
            where = f"{self.images_file}, line {number}"
            entries.append(
                ImageEntry(
                    image=_image_path(self.root, record, where),
                    url=_string(record, "url", where, non_empty=False),
                    entities=_entities(record, where),
                )
            )
        if not entries:
            raise CorpusError(f"{self.images_file}: no image entries")
        return entries

    def web_pages(self) -> list[WebPage]:
        """All web pages, validated; a page URL appears once."""
        pages: list[WebPage] = []
        first_line: dict[str, int] = {}
        for number, record in _json_lines(self._require(self.web_file)):
            where = f"{self.web_file}, line {number}"
            page = WebPage(
                page_url=_string(record, "page_url", where),
                page_name=_string(record, "page_name", where, non_empty=False),
                page_snippet=_string(record, "page_snippet", where, non_empty=False),
                text=_string(record, "text", where),
            )
            if page.page_url in first_line:
                raise CorpusError(
                    f"{where}: field 'page_url': {page.page_url!r} already on line "
                    f"{first_line[page.page_url]}"
                )
            first_line[page.page_url] = number
            pages.append(page)
        if not pages:
            raise CorpusError(f"{self.web_file}: no web pages")
        return pages

    def image_content_hash(self, entries: list[ImageEntry]) -> str:
        """SHA-256 over images.jsonl and every image file its ``entries`` name, in order."""
        digest = hashlib.sha256(_file_digest(self._require(self.images_file)))
        for entry in entries:
            digest.update(entry.image.relative_to(self.root).as_posix().encode())
            digest.update(_file_digest(entry.image))
        return digest.hexdigest()

    def web_content_hash(self) -> str:
        """SHA-256 of web.jsonl."""
        return _file_digest(self._require(self.web_file)).hex()

    def _require(self, path: Path) -> Path:
        if not self.root.is_dir():
            raise CorpusError(f"{self.root}: corpus directory not found")
        if not path.is_file():
            raise CorpusError(f"{path}: missing from the corpus directory")
        return path


def _file_digest(path: Path) -> bytes:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").digest()
