"""The generated Visual-RAG sample: the split format, determinism, the released layout, and a
colour-retrieval agent that does well, though not perfectly, where a random ranking does not."""

from __future__ import annotations

import colorsys
import filecmp
import json
import random
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from evaluator.benchmarks.visual_rag.sample import (
    COLOUR_FEATURES,
    COLOURS,
    SPLITS,
    write_released,
    write_sample,
)
from evaluator.records import EvaluatorError

FIELDS = ["query_id", "question", "answers", "candidates", "species", "feature", "taxon"]
IMAGE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sample") / "out"
    write_sample(out, seed=0)
    return out


def queries(split_dir: Path, name: str = "queries.jsonl") -> list[dict]:
    lines = (split_dir / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_same_seed_same_bytes(sample: Path, tmp_path: Path) -> None:
    write_sample(tmp_path / "again", seed=0)
    assert tree(tmp_path / "again") == tree(sample)
    assert sorted(p.name for p in sample.iterdir()) == sorted(SPLITS)


def test_write_sample_refuses_a_directory_with_files(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(EvaluatorError, match="not an empty directory"):
        write_sample(tmp_path / "full")


def test_every_split_follows_the_format(sample: Path) -> None:
    species = set()
    for split in SPLITS:
        rows = queries(sample / split)
        assert 24 <= len(rows) <= 32
        assert len({row["query_id"] for row in rows}) == len(rows)
        files = {p.name for p in (sample / split / "images").iterdir()}
        used = set()
        for row in rows:
            assert list(row) == FIELDS
            for name in ("query_id", "question", "species", "feature", "taxon"):
                assert isinstance(row[name], str) and row[name].strip()
            assert row["species"] in row["question"]
            answers = row["answers"]
            assert isinstance(answers, list) and 1 <= len(answers) <= 3
            assert all(isinstance(a, str) and a.strip() for a in answers)
            assert len(set(answers)) == len(answers)
            marks = row["candidates"]
            assert all(IMAGE_ID.fullmatch(i) and UUID4.fullmatch(i) for i in marks)
            assert set(marks.values()) == {0, 1}
            assert all(type(mark) is int for mark in marks.values())
            assert 0.1 <= sum(marks.values()) / len(marks) <= 0.4
            assert 3 <= sum(marks.values()) <= 6
            used |= {f"{image}.png" for image in marks}
            if row["feature"] in COLOUR_FEATURES:
                assert answers[0] in COLOURS
        assert used == files
        for name in files:
            with Image.open(sample / split / "images" / name) as image:
                assert (image.format, image.mode, image.size) == ("PNG", "RGB", (128, 128))
        species |= {(row["species"], row["taxon"]) for row in rows}
        # every species in every split, one query per (species, feature)
        assert len({row["species"] for row in rows}) == 7
        assert len({(row["species"], row["feature"]) for row in rows}) == len(rows)
    assert len(species) == 7 and len({taxon for _, taxon in species}) == 3


def test_a_species_pool_is_shared_and_each_feature_has_its_own_clues(sample: Path) -> None:
    ids: dict[str, set[str]] = {}
    for split in SPLITS:
        pools: dict[str, list[dict]] = {}
        for row in queries(sample / split):
            pools.setdefault(row["species"], []).append(row)
        for rows in pools.values():
            assert len({tuple(row["candidates"]) for row in rows}) == 1  # same pool, same order
            clues = [frozenset(i for i, m in row["candidates"].items() if m) for row in rows]
            assert len(set(clues)) == len(clues)
            assert 3 <= len(rows) <= 4
        ids[split] = {i for row in queries(sample / split) for i in row["candidates"]}
    assert ids[SPLITS[0]].isdisjoint(ids[SPLITS[1]]) and ids[SPLITS[1]].isdisjoint(ids[SPLITS[2]])


def test_released_layout_round_trip(sample: Path, tmp_path: Path) -> None:
    source = sample / SPLITS[1]
    write_released(source, tmp_path / "released")
    rows, released = queries(source), queries(tmp_path / "released", "v1_anno.jsonl")
    assert len(released) == len(rows)
    for row, line in zip(rows, released, strict=True):
        assert list(line) == ["question", "answer", "images", "sn"]
        assert (line["question"], line["answer"], line["sn"]) == (
            row["question"],
            row["answers"],
            row["species"],
        )
        assert list(line["images"].items()) == list(row["candidates"].items())
    names = sorted(p.name for p in (source / "images").iterdir())
    assert sorted(p.name for p in (tmp_path / "released" / "images").iterdir()) == names
    assert not filecmp.cmpfiles(source / "images", tmp_path / "released" / "images", names)[1]
    with pytest.raises(EvaluatorError, match=r"no queries\.jsonl"):
        write_released(tmp_path / "released", tmp_path / "again")


# The colour agent: saturated pixels (HSV saturation and value at least 0.5 and 0.35), each
# named by the nearest COLOURS hue; a colour found in nearly every candidate is the species'
# body, not a feature, and is ignored.
NAMES = list(COLOURS)
HUES = np.array([colorsys.rgb_to_hsv(*(c / 255 for c in rgb))[0] * 255 for rgb in COLOURS.values()])


def colour_pixels(path: Path) -> np.ndarray:
    """How many saturated pixels of each COLOURS name the image has."""
    with Image.open(path) as image:
        hsv = np.asarray(image.convert("HSV")).reshape(-1, 3).astype(int)
    hue = hsv[(hsv[:, 1] >= 128) & (hsv[:, 2] >= 90), 0]
    distance = np.abs(hue[:, None] - HUES[None, :])
    nearest = np.minimum(distance, 256 - distance).argmin(axis=1)
    return np.bincount(nearest, minlength=len(NAMES))


def colour_agent(split_dir: Path, candidates: list[str]) -> tuple[list[str], str]:
    """Rank by saturated non-body colour; answer the colour most of the top three show."""
    counts = {i: colour_pixels(split_dir / "images" / f"{i}.png") for i in candidates}
    body = np.mean([counts[i] >= 20 for i in candidates], axis=0) >= 0.8
    for found in counts.values():
        found[body] = 0
    ranking = sorted(candidates, key=lambda i: -int(counts[i].sum()))
    votes: dict[str, float] = {}
    for weight, image in zip((1.5, 1.0, 1.0), ranking[:3], strict=False):
        if counts[image].sum():
            name = NAMES[int(counts[image].argmax())]
            votes[name] = votes.get(name, 0.0) + weight
    return ranking, max(votes, key=lambda name: votes[name]) if votes else ""


def test_a_colour_agent_beats_a_random_ranking(sample: Path) -> None:
    hit1, hit5, correct, random_hit1, random_hit5 = [], [], [], [], []
    for split in SPLITS:
        for row in queries(sample / split):
            if row["feature"] not in COLOUR_FEATURES:
                continue
            candidates = list(row["candidates"])
            clues = {i for i, mark in row["candidates"].items() if mark}
            ranking, answer = colour_agent(sample / split, candidates)
            hit1.append(ranking[0] in clues)
            hit5.append(bool(clues & set(ranking[:5])))
            correct.append(answer in row["answers"])
            for seed in range(10):
                shuffled = random.Random(seed).sample(candidates, len(candidates))
                random_hit1.append(shuffled[0] in clues)
                random_hit5.append(bool(clues & set(shuffled[:5])))
    assert len(hit5) == 21
    assert np.mean(hit5) >= 0.7 and np.mean(hit5) >= np.mean(random_hit5) + 0.2
    assert np.mean(hit1) >= np.mean(random_hit1) + 0.3
    assert np.mean(hit1) < 1  # distractors of the feature's colour mislead it now and then
    assert 0.6 <= np.mean(correct) < 1
