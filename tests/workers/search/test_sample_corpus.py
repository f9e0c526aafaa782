"""The search service over the sample data ``python -m evaluator sample`` writes (the demo)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from evaluator.protocols.crag_mm.sample import write_sample
from workers.search.corpus import Corpus
from workers.search.encoders import ColourImageEncoder
from workers.search.engine import SearchEngine
from workers.search.rag import rag_context

TASK = "multi-source-augmentation"
ATTRIBUTE_QUESTION = re.compile(r"What is the (\w+) of this")


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sample") / "out"
    write_sample(out, seed=0)
    return out


@pytest.fixture(scope="module")
def sample_engine(sample: Path, minilm, tmp_path_factory) -> SearchEngine:
    cache = tmp_path_factory.mktemp("sample-cache")
    engine = SearchEngine(
        sample / "corpus", text_encoder=minilm, image_encoder=ColourImageEncoder(), cache_dir=cache
    )
    engine.prepare(TASK)
    return engine


def _attribute_turns(split_dir: Path, quality: str) -> list[tuple[Path, str, str, str]]:
    """(photo, query, attribute key, answer) of single-turn attribute questions."""
    found = []
    for line in (split_dir / "sessions.jsonl").read_text().splitlines():
        session = json.loads(line)
        turn, answer = session["turns"][0], session["answers"][0]["ans_full"]
        match = ATTRIBUTE_QUESTION.match(turn["query"])
        if match and turn["image_quality"] == quality:
            found.append((split_dir / session["image"], turn["query"], match[1], answer))
    return found


def test_sample_corpus_is_valid(sample: Path) -> None:
    corpus = Corpus(sample / "corpus")
    assert len(corpus.image_entries()) > 20 and len(corpus.web_pages()) > 20


def test_normal_photos_find_an_entity_holding_the_answer(
    sample: Path, sample_engine: SearchEngine
) -> None:
    entries = Corpus(sample / "corpus").image_entries()
    turns = []
    for split in ("validation", "public-test", "private-test"):
        turns += _attribute_turns(sample / TASK / split, "normal")
    hits = answerable = 0
    for photo, _, key, answer in turns:
        holders = {
            e.entity_name
            for entry in entries
            for e in entry.entities
            if str(e.entity_attributes.get(key, "")).lower() in answer.lower()
            and e.entity_attributes.get(key)
        }
        if not holders:  # the answer is on a web page, not in the image attributes
            continue
        answerable += 1
        with Image.open(photo) as image:
            top = sample_engine.image_search(image, k=1)[0]
        hits += any(e["entity_name"] in holders for e in top["entities"])
    assert answerable >= 8
    assert hits >= 0.7 * answerable


def test_kit_b_context_names_the_entity_for_normal_photos(
    sample: Path, sample_engine: SearchEngine
) -> None:
    turns = _attribute_turns(sample / TASK / "validation", "normal")
    with_entity = 0
    for photo, query, _, _ in turns:
        with Image.open(photo) as image:
            context = rag_context(sample_engine, query, image, TASK)
        assert "<DOC>\nWebpage ID: [1]" in context
        with_entity += "Entity 1: " in context
    assert with_entity >= 0.5 * len(turns)
