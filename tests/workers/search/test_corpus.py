from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.workers.search.helpers import CorpusFiles, entity_name
from workers.search.corpus import (
    ChunkPolicy,
    Corpus,
    CorpusError,
    WebPage,
    chunk_index,
    chunk_text,
    page_chunks,
)


def test_loads_entries_in_order_with_entities(corpus: CorpusFiles) -> None:
    entries = Corpus(corpus.root).image_entries()
    assert [e.image for e in entries] == corpus.images
    assert entries[3].url == "https://img/3"
    assert entries[3].entities[0].entity_name == entity_name(3)
    assert entries[3].entities[0].entity_attributes["brand"] == "Brand03"
    pages = Corpus(corpus.root).web_pages()
    assert pages[5].page_url == "https://example.org/05"
    assert "1905" in pages[5].text


def test_chunks_overlap_and_cover_every_word() -> None:
    words = [f"w{i}" for i in range(50)]
    chunks = chunk_text(" ".join(words), ChunkPolicy(words=20, overlap=5))
    assert [c.split()[0] for c in chunks] == ["w0", "w15", "w30"]
    assert chunks[0].split()[-5:] == chunks[1].split()[:5]
    assert chunks[-1].split()[-1] == "w49"
    assert chunk_text("one two", ChunkPolicy()) == ["one two"]
    assert chunk_index("https://a/b", 2) == "https://a/b_chunk_2"


def test_pages_are_chunked_as_the_official_index_builder_chunks_them() -> None:
    """Chunk 0: "<page_name> <page_snippet>"; then 512-word windows, none shared; 50 at most."""
    words = [f"w{i}" for i in range(1100)]
    page = WebPage("https://a/b", "Name", "The snippet.", " ".join(words))
    chunks = page_chunks(page, ChunkPolicy())
    assert chunks[0] == "Name The snippet."
    assert [len(c.split()) for c in chunks[1:]] == [512, 512, 76]
    assert chunks[1].split()[0] == "w0" and chunks[2].split()[0] == "w512"
    long_page = WebPage("https://a/c", "N", "S", " ".join(["x"] * 512 * 60))
    assert len(page_chunks(long_page, ChunkPolicy())) == 50
    assert page_chunks(WebPage("https://a/d", "N", "S", ""), ChunkPolicy()) == ["N S"]


@pytest.mark.parametrize(("words", "overlap"), [(0, 0), (10, 10), (10, -1)])
def test_chunk_policy_rejects_nonsense(words: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="overlap"):
        ChunkPolicy(words=words, overlap=overlap)


def _rewrite_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n")


def _image_line(**changes) -> str:
    entry = {"image": "images/e01.png", "url": "u", "entities": [{"entity_name": "x"}]}
    entry.update(changes)
    return json.dumps({k: v for k, v in entry.items() if v is not None})


IMAGE_CASES = [
    ("{not json", "line 2: not valid JSON"),
    ("[1, 2]", "line 2: expected a JSON object"),
    (_image_line(image=None), "line 2: field 'image' must be a non-empty string"),
    (_image_line(image="../secret.png"), "line 2: field 'image' must be a path inside"),
    (_image_line(image="/etc/passwd"), "line 2: field 'image' must be a path inside"),
    (_image_line(image="images/none.png"), "line 2: field 'image': no such file"),
    (_image_line(url=7), "line 2: field 'url' must be a string"),
    (_image_line(entities={"a": 1}), "line 2: field 'entities' must be a list"),
    (_image_line(entities=["x"]), "line 2, entities[0]: expected an object"),
    (_image_line(entities=[{"entity_name": ""}]), "entities[0]: field 'entity_name' must be"),
    (
        _image_line(entities=[{"entity_name": "x", "entity_attributes": [1]}]),
        "entities[0]: field 'entity_attributes' must be an object",
    ),
]


@pytest.mark.parametrize(("line", "message"), IMAGE_CASES)
def test_bad_image_entry_names_file_line_and_field(
    corpus: CorpusFiles, line: str, message: str
) -> None:
    _rewrite_line(corpus.root / "images.jsonl", 2, line)
    with pytest.raises(CorpusError) as caught:
        Corpus(corpus.root).image_entries()
    assert str(corpus.root / "images.jsonl") in str(caught.value)
    assert message in str(caught.value)


def _page_line(**changes) -> str:
    page = {"page_url": "https://p", "page_name": "n", "page_snippet": "s", "text": "t"}
    page.update(changes)
    return json.dumps({k: v for k, v in page.items() if v is not None})


WEB_CASES = [
    (_page_line(page_url=None), "line 3: field 'page_url' must be a non-empty string"),
    (_page_line(text="   "), "line 3: field 'text' must be a non-empty string"),
    (_page_line(page_name=3), "line 3: field 'page_name' must be a string"),
    (_page_line(page_url="https://example.org/00"), "'https://example.org/00' already on line 1"),
]


@pytest.mark.parametrize(("line", "message"), WEB_CASES)
def test_bad_web_page_names_file_line_and_field(
    corpus: CorpusFiles, line: str, message: str
) -> None:
    _rewrite_line(corpus.root / "web.jsonl", 3, line)
    with pytest.raises(CorpusError, match=r"web\.jsonl") as caught:
        Corpus(corpus.root).web_pages()
    assert message in str(caught.value)


def test_missing_files_and_directory_are_named(corpus: CorpusFiles, tmp_path: Path) -> None:
    (corpus.root / "web.jsonl").unlink()
    with pytest.raises(CorpusError, match=r"web\.jsonl: missing from the corpus directory"):
        Corpus(corpus.root).web_pages()
    with pytest.raises(CorpusError, match="corpus directory not found"):
        Corpus(tmp_path / "nowhere").image_entries()


def test_empty_and_non_utf8_files_are_refused(corpus: CorpusFiles) -> None:
    (corpus.root / "web.jsonl").write_text("\n\n")
    with pytest.raises(CorpusError, match="no web pages"):
        Corpus(corpus.root).web_pages()
    (corpus.root / "images.jsonl").write_bytes(b'{"image": "\xff"}\n')
    with pytest.raises(CorpusError, match="not UTF-8"):
        Corpus(corpus.root).image_entries()


def test_content_hashes_follow_the_files(corpus: CorpusFiles) -> None:
    c = Corpus(corpus.root)
    image_hash, web_hash = c.image_content_hash(c.image_entries()), c.web_content_hash()
    corpus.images[0].write_bytes(corpus.images[0].read_bytes() + b"\0")
    assert c.image_content_hash(c.image_entries()) != image_hash
    assert c.web_content_hash() == web_hash
