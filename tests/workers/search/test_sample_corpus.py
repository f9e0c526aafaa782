"""The search service over the sample data ``python -m evaluator sample`` writes (the demo)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from evaluator.benchmarks.crag_mm.sample import write_sample
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


class OfficialWebSearch:
    """The official web search, written out from the kit's code (``cragmm_search``
    ``generate_index.process_result`` with chunking, ``extract_features``, ``web_search``) and
    searched exhaustively: each page's fields embedded in one call (mean pooling, 512 tokens,
    normalised), the top ``k`` chunks by cosine, de-duplicated by page, sorted by score."""

    def __init__(self, corpus: Path) -> None:
        from transformers import AutoModel, AutoTokenizer

        from workers.search.encoders import minilm_dir

        self.model = AutoModel.from_pretrained(str(minilm_dir()), local_files_only=True).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()), local_files_only=True)
        self.ids: list[str] = []
        rows = []
        for line in (corpus / "web.jsonl").read_text().splitlines():
            page = json.loads(line)
            words = page["text"].split()
            fields = [f"{page['page_name']} {page['page_snippet']}"]
            fields += [" ".join(words[i : i + 512]) for i in range(0, len(words), 512)]
            fields = fields[:50]
            rows.append(self.extract_features(fields))
            self.ids += [f"{page['page_url']}_chunk_{i}" for i in range(len(fields))]
        self.rows = np.concatenate(rows)

    def extract_features(self, texts: list[str]) -> np.ndarray:
        import torch

        inputs = self.tokenizer(
            texts, return_tensors="pt", padding=True, truncation=True, max_length=512
        )
        with torch.no_grad():
            hidden = self.model(**inputs).last_hidden_state
        mask = inputs["attention_mask"].unsqueeze(-1).expand(hidden.size()).float()
        features = torch.sum(hidden * mask, 1) / torch.clamp(mask.sum(1), min=1e-9)
        return (features / features.norm(dim=-1, keepdim=True)).numpy()

    def __call__(self, query: str, k: int) -> list[tuple[str, float]]:
        scores = self.rows @ self.extract_features([query])[0]
        top = sorted(range(len(self.ids)), key=lambda i: -scores[i])[:k]
        unique: dict[str, tuple[str, float]] = {}
        for i in top:
            unique.setdefault(self.ids[i].split("_chunk")[0], (self.ids[i], float(scores[i])))
        return sorted(unique.values(), key=lambda pair: pair[1], reverse=True)[:k]


def test_web_search_ranks_and_scores_as_the_official_pipeline(
    sample: Path, sample_engine: SearchEngine
) -> None:
    """Same corpus, same model (MiniLM offline): same chunk ids, same order, scores within 1e-5."""
    pages = [json.loads(line) for line in (sample / "corpus/web.jsonl").read_text().splitlines()]
    official_search = OfficialWebSearch(sample / "corpus")
    queries = [pages[0]["page_name"], f"{pages[3]['page_snippet']} price", "opening hours today"]
    for query in queries:
        for k in (1, 5, 10):
            ours = sample_engine.web_search(query, k=k, task=TASK)
            official = official_search(query, k)
            assert [r["index"] for r in ours] == [index for index, _ in official], (query, k)
            assert np.allclose([r["score"] for r in ours], [s for _, s in official], atol=1e-5)
