"""The generated sample: valid splits for every task, real degradations, determinism."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageStat

from agentkit.protocol import TASKS
from evaluator.benchmarks.crag_mm.loading import load_split
from evaluator.benchmarks.crag_mm.records import Split
from evaluator.benchmarks.crag_mm.sample import DOMAINS, PRIVATE_ONLY, SPLITS, write_sample
from evaluator.records import EvaluatorError

OFFICIAL = {
    "domain": {"animal", "other", "shopping", "book", "general object recognition", "local",
               "vehicle", "plants and gardening", "style and fashion", "food",
               "text understanding", "sports and games", "math and science"},
    "query_category": {"reasoning", "simple-knowledge", "comparison", "simple-recognition",
                       "multi-hop", "aggregation"},
    "dynamism": {"fast-changing", "static", "slow-changing", "real-time"},
    "image_quality": {"rotated", "truncated", "occluded", "low light", "blurred", "normal"},
}  # fmt: skip


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sample") / "out"
    write_sample(out, seed=0)
    return out


@pytest.fixture(scope="module")
def splits(sample: Path) -> dict[tuple[str, str], Split]:
    return {(task, name): load_split(sample / task / name) for task in TASKS for name in SPLITS}


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_every_split_loads_with_the_official_label_names(splits: dict) -> None:
    for (task, _), split in splits.items():
        assert len(split.conversations) == (12 if task == "multi-turn-qa" else 30)
        for _, _, turn in split.turns():
            for name, names in OFFICIAL.items():
                assert turn.labels[name] in names
            assert turn.labels["entity_popularity"] in {"head", "torso", "tail"}
    every = Counter(t.labels["image_quality"] for s in splits.values() for _, _, t in s.turns())
    assert set(every) == OFFICIAL["image_quality"]
    categories = {t.labels["query_category"] for s in splits.values() for _, _, t in s.turns()}
    assert categories == OFFICIAL["query_category"]


def test_turn_counts_per_task(splits: dict) -> None:
    for (task, _), split in splits.items():
        counts = {len(c.turns) for c in split.conversations}
        if task == "multi-turn-qa":
            assert counts <= set(range(2, 7)) and len(counts) > 1
            later = [t for c in split.conversations for t in c.turns[1:]]
            assert {t.labels["depends_on_history"] for t in later} == {"yes"}
        else:
            assert counts == {1}


def test_two_domains_appear_only_in_private_test(splits: dict) -> None:
    for (task, name), split in splits.items():
        domains = {t.labels["domain"] for _, _, t in split.turns()}
        if name == "private-test" and task != "multi-turn-qa":
            assert set(PRIVATE_ONLY) & domains
        if name != "private-test":
            assert not set(PRIVATE_ONLY) & domains


def test_pictures_egocentric_or_web_and_degraded_as_labelled(splits: dict) -> None:
    brightness = {}
    for split in splits.values():
        for conversation in split.conversations:
            with Image.open(split.image_path(conversation)) as image:
                quality = conversation.turns[0].labels["image_quality"]
                if conversation.is_ego:
                    assert image.size == (960, 1280)
                else:
                    assert conversation.image_url.startswith("https://")
                    assert quality == "normal"
                sharpness = np.abs(np.diff(np.asarray(image.convert("L"), dtype=float))).mean()
                level = ImageStat.Stat(image.convert("L")).mean[0]
                brightness.setdefault(quality, []).append((level, sharpness))
    dark = max(level for level, _ in brightness["low light"])
    assert dark < min(level for level, _ in brightness["normal"])
    blurry = max(sharp for _, sharp in brightness["blurred"])
    assert blurry < np.median([sharp for _, sharp in brightness["normal"]])


def test_web_only_facts_are_in_web_pages_and_not_in_image_search(sample: Path, splits) -> None:
    pages = " ".join(page["text"] for page in jsonl(sample / "corpus" / "web.jsonl"))
    names = {row["entities"][0]["entity_name"]: row["entities"][0]["entity_attributes"]
             for row in jsonl(sample / "corpus" / "images.jsonl") if row["entities"]}  # fmt: skip
    multi_hop = [
        t for (task, _), s in splits.items() if task != TASKS[0] for _, _, t in s.turns()
        if t.labels["query_category"] == "multi-hop"
    ]  # fmt: skip
    assert len(multi_hop) > 5
    for turn in multi_hop:
        asked = re.fullmatch(r"What is the (.+) of (this \w+|it)\?", turn.query)
        domain_keys = set(DOMAINS[turn.labels["domain"]].image_keys) | {"year"}
        assert asked and asked[1] not in domain_keys
        assert all(asked[1] not in attributes for attributes in names.values()
                   if set(attributes) == domain_keys)  # fmt: skip
        assert turn.ground_truth in pages
    task1 = {t.labels["query_category"] for n, s in splits.items() if n[0] == TASKS[0]
             for _, _, t in s.turns()}  # fmt: skip
    assert not task1 & {"multi-hop", "comparison"}


def test_corpus_rows_point_at_real_images(sample: Path) -> None:
    rows = jsonl(sample / "corpus" / "images.jsonl")
    named = [row for row in rows if row["entities"]]
    assert len({row["entities"][0]["entity_name"] for row in named}) >= 24
    assert any(not row["entities"] for row in rows)
    for row in rows:
        with Image.open(sample / "corpus" / row["image"]) as image:
            assert image.size == (256, 256)
    for page in jsonl(sample / "corpus" / "web.jsonl"):
        assert set(page) == {"page_url", "page_name", "page_snippet", "text"}
        assert page["page_url"].startswith("https://")
        # The snippet summarises the page: every sentence of it stands in the page text.
        sentences = [s.strip() for s in page["page_snippet"].split(". ") if s.strip()]
        assert len(sentences) >= 2 and all(s.rstrip(".") in page["text"] for s in sentences)


def thumbnail(path: Path) -> np.ndarray:
    pixels = np.asarray(Image.open(path).convert("RGB").resize((12, 12)), dtype=float).ravel()
    pixels -= pixels.mean()
    return pixels / (np.linalg.norm(pixels) + 1e-9)


def test_a_naive_image_search_agent_succeeds_sometimes(sample: Path, splits: dict) -> None:
    """Nearest thumbnail in the corpus, then read the asked attribute: right only sometimes."""
    rows = jsonl(sample / "corpus" / "images.jsonl")
    index = np.stack([thumbnail(sample / "corpus" / row["image"]) for row in rows])
    outcomes = []
    for (task, _), split in splits.items():
        for conversation in split.conversations if task != "multi-turn-qa" else []:
            turn = conversation.turns[0]
            asked = re.fullmatch(r"What is the (.+) of this \w+\?", turn.query)
            if turn.labels["query_category"] not in {"simple-recognition", "simple-knowledge"}:
                continue
            found = rows[int(np.argmax(index @ thumbnail(split.image_path(conversation))))]
            entity = found["entities"][0] if found["entities"] else {"entity_attributes": {}}
            answer = (
                entity["entity_attributes"].get(asked[1]) if asked else entity.get("entity_name")
            )
            outcomes.append(bool(answer) and answer in turn.ground_truth)
    assert len(outcomes) > 30
    assert 0.1 < sum(outcomes) / len(outcomes) < 0.9


def test_same_seed_same_bytes_other_seed_other_data(sample: Path, tmp_path: Path) -> None:
    write_sample(tmp_path / "again", seed=0)
    files = sorted(p.relative_to(sample) for p in sample.rglob("*") if p.is_file())
    assert files == sorted(
        p.relative_to(tmp_path / "again") for p in (tmp_path / "again").rglob("*") if p.is_file()
    )
    for name in files:
        assert (sample / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name
    assert sum(p.stat().st_size for p in sample.rglob("*") if p.is_file()) < 15_000_000
    write_sample(tmp_path / "other", seed=1)
    corpus = "corpus/web.jsonl"
    assert (tmp_path / "other" / corpus).read_bytes() != (sample / corpus).read_bytes()


def test_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep")
    with pytest.raises(EvaluatorError, match="not an empty directory"):
        write_sample(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]
