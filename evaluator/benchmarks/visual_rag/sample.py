"""Deterministic synthetic data in Podium's Visual-RAG split format, and the released layout.

``write_sample(out_dir, seed)`` writes ``OUT/<split>/`` (``queries.jsonl`` and
``images/<image id>.png``) for each of ``SPLITS``. Seven made-up species (butterflies, birds,
flowers) have four visual features each; every split draws a fresh pool of 24 photos per species
and asks one query per (species, feature): its candidates are the species' whole pool, its clues
the 3-6 photos where that feature is visible; the rest are hard negatives (the feature covered,
out of frame, on the wrong side, or too small to see). Colour features are the only saturated
colours a species shows (answers are ``COLOURS`` names), so an agent that ranks photos by their
saturated colour and names the dominant hue does well, though not perfectly: blossoms, berries
and beetles in some photos (a third of them in the feature's own colour) mislead it now and
then, more often in private-test, where more photos have them.
``write_released(split_dir, out_dir)`` rewrites a split in the paper's released layout.
"""

from __future__ import annotations

import json
import random
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from evaluator.benchmarks.visual_rag import sample_images as draw
from evaluator.benchmarks.visual_rag.sample_images import (
    ANTENNAE,
    BARS,
    BREAST,
    CENTRE,
    CREST,
    HINDWING,
    LEAVES,
    PETAL_COUNT,
    PETALS,
    SPOTS,
    TAIL,
    UNDERSIDE,
)
from evaluator.records import EvaluatorError
from evaluator.staging import staged_directory

SPLITS: tuple[str, ...] = ("validation", "public-test", "private-test")
COLOURS: dict[str, tuple[int, int, int]] = draw.COLOURS  # colour answers are these names
COLOUR_FEATURES: tuple[str, ...] = draw.COLOUR_FEATURES
POOL_POSES = {  # photos per pose in a species' pool of 24
    "butterfly": {"open": 14, "closed": 6, "far": 4},
    "bird": {"side": 10, "front": 5, "back": 5, "far": 4},
    "flower": {"face": 12, "side": 5, "bud": 3, "far": 4},
}
DISTRACTORS = {"validation": 0.35, "public-test": 0.35, "private-test": 0.55}  # share of photos


@dataclass(frozen=True)
class Feature:
    questions: tuple[str, ...]  # templates; {name} is the species
    clues: tuple[int, int]  # fewest and most clue photos in a pool
    parent: str | None = None  # visible only in photos where this feature is visible too


FEATURES: dict[str, Feature] = {
    HINDWING: Feature(
        ("What colour are the hindwings of the {name}?",
         "What is the colour of the {name}'s hindwings?"), (3, 6)),
    SPOTS: Feature(
        ("How many white spots are on each forewing of the {name}?",
         "How many pale spots does the {name} have on each forewing?"), (3, 6)),
    UNDERSIDE: Feature(
        ("What pattern is on the underside of the {name}'s wings?",
         "What markings does the {name} show on the underside of its wings?"), (3, 5)),
    ANTENNAE: Feature(
        ("What do the tips of the {name}'s antennae look like?",
         "What shape are the antenna tips of the {name}?"), (3, 6)),
    BREAST: Feature(
        ("What colour is the breast of the {name}?",
         "What is the colour of the {name}'s breast feathers?"), (3, 6)),
    CREST: Feature(
        ("What shape is the crest of the {name}?",
         "What does the crest on the head of the {name} look like?"), (3, 6)),
    BARS: Feature(
        ("How many pale bars cross each wing of the {name}?",
         "How many wing bars does the {name} have?"), (3, 6)),
    TAIL: Feature(
        ("What shape is the tail of the {name}?",
         "What does the tail of the {name} look like?"), (3, 6)),
    PETALS: Feature(
        ("What colour are the petals of the {name}?",
         "What colour are the {name}'s flowers?"), (5, 6)),
    PETAL_COUNT: Feature(
        ("How many petals does the {name} have?",
         "How many petals are on each flower of the {name}?"), (3, 4), PETALS),
    CENTRE: Feature(
        ("What pattern is at the centre of the {name}'s flower?",
         "What does the middle of the {name}'s flower look like?"), (3, 4), PETALS),
    LEAVES: Feature(
        ("What shape are the leaves of the {name}?",
         "How would you describe the leaf shape of the {name}?"), (3, 6)),
}  # fmt: skip
TAXON_FEATURES = {
    "butterfly": (HINDWING, SPOTS, UNDERSIDE, ANTENNAE),
    "bird": (BREAST, CREST, BARS, TAIL),
    "flower": (PETALS, PETAL_COUNT, CENTRE, LEAVES),
}


@dataclass(frozen=True)
class Species:
    name: str
    answers: dict[str, tuple[str, ...]]  # feature: annotator answers, the drawn value first
    look: draw.Look


def _species(name: str, taxon: str, answers: dict[str, tuple[str, ...]],
             body: draw.Color, trim: draw.Color, pale: draw.Color) -> Species:  # fmt: skip
    values = {feature: alternatives[0] for feature, alternatives in answers.items()}
    return Species(name, answers, draw.Look(taxon, values, body, trim, pale))


SPECIES: tuple[Species, ...] = (
    _species("Ember Wingtail", "butterfly", {
        HINDWING: ("orange", "bright orange", "orange with dark veins"),
        SPOTS: ("two", "2", "two white spots"),
        UNDERSIDE: ("eyespots", "eye spots", "a row of eyespots"),
        ANTENNAE: ("clubbed", "club-shaped", "knobbed tips"),
    }, (60, 48, 40), (150, 132, 108), (222, 214, 196)),
    _species("Tidewater Skipper", "butterfly", {
        HINDWING: ("blue", "deep blue", "blue with dark veins"),
        SPOTS: ("three", "3", "three white spots"),
        UNDERSIDE: ("stripes", "dark stripes", "striped"),
        ANTENNAE: ("hooked", "hook-shaped", "curved hooks"),
    }, (50, 50, 56), (120, 118, 112), (210, 206, 196)),
    _species("Dusk Lacewing", "butterfly", {
        HINDWING: ("violet", "purple", "violet with dark veins"),
        SPOTS: ("four", "4", "four white spots"),
        UNDERSIDE: ("marbled", "mottled", "marbled with brown blotches"),
        ANTENNAE: ("thread-like", "thin without clubs", "plain and thin"),
    }, (58, 44, 44), (110, 92, 86), (200, 196, 186)),
    _species("Marsh Piper", "bird", {
        BREAST: ("red", "bright red", "scarlet"),
        CREST: ("pointed", "a single pointed crest", "spiky"),
        BARS: ("two", "2", "two pale bars"),
        TAIL: ("forked", "a forked tail", "split into two points"),
    }, (120, 110, 96), (78, 70, 62), (60, 56, 52)),
    _species("Hollow Reed Warbler", "bird", {
        BREAST: ("yellow", "bright yellow", "lemon yellow"),
        CREST: ("fan-shaped", "a fan of spikes", "fanned"),
        BARS: ("one", "1", "a single pale bar"),
        TAIL: ("rounded", "a rounded fan", "round"),
    }, (146, 138, 116), (98, 92, 80), (214, 206, 184)),
    _species("Glass Lily", "flower", {
        PETALS: ("pink", "bright pink", "magenta"),
        PETAL_COUNT: ("six", "6", "six petals"),
        CENTRE: ("ringed", "a dark ring", "a ring around a pale middle"),
        LEAVES: ("heart-shaped", "heart shaped", "cordate"),
    }, (84, 112, 72), (110, 130, 90), (228, 214, 170)),
    _species("Salt Starwort", "flower", {
        PETALS: ("turquoise", "blue-green", "bright turquoise"),
        PETAL_COUNT: ("five", "5", "five petals"),
        CENTRE: ("dotted", "dark dots", "a ring of dots"),
        LEAVES: ("needle-like", "needle shaped", "thin and needle-like"),
    }, (96, 118, 88), (120, 136, 100), (232, 226, 200)),
)  # fmt: skip


@dataclass(frozen=True)
class Pool:
    images: dict[str, bytes]  # image id: PNG, in candidate order
    clues: dict[str, frozenset[str]]  # feature: the ids of the photos showing it


def _clue_sets(rng: random.Random, taxon: str, poses: list[str]) -> dict[str, frozenset[int]]:
    """Per feature, the photos (indices) that show it: distinct sets, each within its bounds."""
    for _ in range(200):
        chosen: dict[str, frozenset[int]] = {}
        for feature in TAXON_FEATURES[taxon]:
            spec = FEATURES[feature]
            eligible = [
                index
                for index, pose in enumerate(poses)
                if feature in draw.POSES[taxon][pose]
                and (spec.parent is None or index in chosen[spec.parent])
            ]
            count = rng.randint(*spec.clues)
            if len(eligible) < count:
                break
            chosen[feature] = frozenset(rng.sample(eligible, count))
        else:
            if len(set(chosen.values())) == len(chosen):
                return chosen
    raise RuntimeError(f"no clue sets for a {taxon} pool")  # pragma: no cover


def make_pool(rng: random.Random, species: Species, distractors: float) -> Pool:
    """A species' pool of 24 photos in a shuffled order, and the clues of each feature."""
    look = species.look
    counts = dict(POOL_POSES[look.taxon])
    first = next(iter(counts))
    far = rng.randint(3, 5)
    counts[first] += counts["far"] - far
    counts["far"] = far
    poses = [pose for pose, count in counts.items() for _ in range(count)]
    chosen = _clue_sets(rng, look.taxon, poses)
    colour = next(look.values[f] for f in TAXON_FEATURES[look.taxon] if f in COLOUR_FEATURES)
    others = [value for name, value in COLOURS.items() if name != colour]
    # a third of the distractors have the feature's own colour: they mislead ranking, not answers
    palette = [COLOURS[colour]] * (len(others) // 2) + others
    photos = []
    for index, pose in enumerate(poses):
        visible = frozenset(feature for feature, shown in chosen.items() if index in shown)
        extra = rng.choice(palette) if rng.random() < distractors else None
        image_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        photos.append((image_id, draw.png(draw.photo(rng, look, pose, visible, extra)), index))
    rng.shuffle(photos)
    clues = {
        f: frozenset(i for i, _, index in photos if index in shown) for f, shown in chosen.items()
    }
    return Pool({image_id: data for image_id, data, _ in photos}, clues)


def write_split(out: Path, split: str, seed: int) -> None:
    """One split: a fresh pool per species and one query per (species, feature)."""
    (out / "images").mkdir(parents=True)
    rng = random.Random(f"{seed}:visual-rag:{split}")
    queries = []
    for species in SPECIES:
        pool_rng = random.Random(f"{seed}:visual-rag:{split}:{species.name}")
        pool = make_pool(pool_rng, species, DISTRACTORS[split])
        for image_id, data in pool.images.items():
            (out / "images" / f"{image_id}.png").write_bytes(data)
        for feature in TAXON_FEATURES[species.look.taxon]:
            alternatives = species.answers[feature]
            extra = rng.sample(alternatives[1:], rng.randint(0, len(alternatives) - 1))
            candidates = {image: int(image in pool.clues[feature]) for image in pool.images}
            question = rng.choice(FEATURES[feature].questions).format(name=species.name)
            queries.append((question, [alternatives[0], *extra], candidates, species, feature))
    rng.shuffle(queries)
    lines = []
    for number, (question, answers, candidates, species, feature) in enumerate(queries):
        record = {
            "query_id": f"vr-{split}-{number:03d}",
            "question": question,
            "answers": answers,
            "candidates": candidates,
            "species": species.name,
            "feature": feature,
            "taxon": species.look.taxon,
        }
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    (out / "queries.jsonl").write_text("".join(lines), encoding="utf-8")


def write_sample(out_dir: str | Path, seed: int = 0) -> None:
    """Write OUT/<split>/ for each split in Podium's Visual-RAG split format."""
    with staged_directory(out_dir) as staging:
        for split in SPLITS:
            write_split(staging / split, split, seed)


def write_released(split_dir: str | Path, out_dir: str | Path) -> None:
    """Rewrite one Podium-format split in the released layout (v1_anno.jsonl beside
    images/<guid>.<ext>)."""
    source = Path(split_dir)
    file = source / "queries.jsonl"
    if not file.is_file():
        raise EvaluatorError(f"{source}: no queries.jsonl")
    with staged_directory(out_dir) as staging:
        (staging / "images").mkdir()
        files = {entry.stem: entry for entry in (source / "images").iterdir() if entry.is_file()}
        lines = []
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            for image in record["candidates"]:
                if image not in files:
                    raise EvaluatorError(f"{file}:{number}: no image file for {image!r}")
                target = staging / "images" / files[image].name
                if not target.exists():
                    shutil.copyfile(files[image], target)
            released = {
                "question": record["question"],
                "answer": record["answers"],
                "images": record["candidates"],
                "sn": record["species"],
            }
            lines.append(json.dumps(released, ensure_ascii=False) + "\n")
        (staging / "v1_anno.jsonl").write_text("".join(lines), encoding="utf-8")
