"""Deterministic synthetic data in the CRAG-MM format: splits for the three tasks and a corpus.

``write_sample(out_dir)`` writes ``corpus/`` (the search corpus: ``images.jsonl``, ``web.jsonl``,
``images/``) and ``<task>/<split>/`` split directories. Made-up entities across eight CRAG-MM
domains each have a drawn look, 3-4 attributes that image search returns, and 2 facts found only
in web pages. Questions name the attribute they ask about, so a simple RAG agent can answer
when retrieval finds the entity and fails when the photo is too degraded for retrieval.
Two domains appear only in private-test, as in the original challenge.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from agentkit.protocol import TASKS
from evaluator.benchmarks.crag_mm import sample_images as draw
from evaluator.benchmarks.crag_mm.records import Conversation, Turn
from evaluator.benchmarks.crag_mm.split import write_split
from evaluator.staging import staged_directory

SPLITS = ("validation", "public-test", "private-test")
CONVERSATIONS = {TASKS[0]: 30, TASKS[1]: 30, TASKS[2]: 12}
IMAGE_QUALITIES = ("normal", "normal", "rotated", "truncated", "occluded", "low light", "blurred")
POPULARITY = ("head", "torso", "tail")
CURRENT_YEAR = 2025
SITE = "https://www.podium-sample.example"
IMAGE_SITE = "https://images.podium-sample.example"

PEOPLE = ["Ada Morrow", "Ravi Kell", "Lena Ostrova", "Tomas Reyes", "Mei Tanaka", "Jonah Pike"]
PLACES = ["Norvale", "Port Essa", "Kirrin", "Dalmouth", "Lowen", "Saint Ivo"]
COLORS = ["crimson", "teal", "amber", "violet", "olive", "navy", "coral", "ivory"]
MATERIALS = ["bamboo", "recycled steel", "linen", "walnut", "ceramic", "felt"]
COMPANIES = ["Arvo", "Quillon", "Brightwell", "Soren & Co", "Mastline", "Keto Works"]


class Domain(NamedTuple):
    noun: str  # how questions name the thing ("What is the color of this vehicle?")
    endings: list[str]  # the last word of entity names
    image_keys: dict[str, list[str]]  # attributes image search returns, with their values
    web_keys: dict[str, list[str]]  # facts found only in web pages


DOMAINS: dict[str, Domain] = {
    "vehicle": Domain(
        "vehicle",
        ["Strider", "Comet", "Ranger"],
        {"brand": COMPANIES, "color": COLORS, "origin": PLACES},
        {"designer": PEOPLE, "top speed": ["140 km/h", "185 km/h", "210 km/h", "95 km/h"]},
    ),
    "food": Domain(
        "dish",
        ["Tart", "Stew", "Bun"],
        {"origin": PLACES, "main ingredient": ["lentils", "quince", "rye", "squid", "kale"]},
        {"inventor": PEOPLE, "calories": ["320 kcal", "540 kcal", "760 kcal", "410 kcal"]},
    ),
    "plants and gardening": Domain(
        "plant",
        ["Fern", "Lily", "Vine"],
        {
            "flower color": COLORS,
            "native region": PLACES,
            "family": ["Rosaceae", "Liliaceae", "Asteraceae"],
        },
        {"discoverer": PEOPLE, "height": ["40 cm", "1.2 m", "3 m", "75 cm"]},
    ),
    "shopping": Domain(
        "product",
        ["Kettle", "Lamp", "Backpack"],
        {"brand": COMPANIES, "material": MATERIALS, "color": COLORS},
        {
            "price": ["$24", "$89", "$149", "$310"],
            "stock status": ["in stock", "sold out", "back-ordered"],
        },
    ),
    "book": Domain(
        "book",
        ["Chronicle", "Atlas", "Voyage"],
        {
            "author": PEOPLE,
            "publisher": COMPANIES,
            "genre": ["mystery", "travel", "poetry", "history"],
        },
        {"page count": ["212 pages", "388 pages", "530 pages"], "setting": PLACES},
    ),
    "animal": Domain(
        "animal",
        ["Finch", "Gecko", "Otter"],
        {"habitat": ["wetlands", "desert", "alpine meadows", "kelp forests"], "color": COLORS},
        {"lifespan": ["4 years", "12 years", "25 years"], "discoverer": PEOPLE},
    ),
    "style and fashion": Domain(
        "garment",
        ["Jacket", "Sneaker", "Scarf"],
        {"designer": PEOPLE, "material": MATERIALS, "color": COLORS},
        {"price": ["$60", "$145", "$420"], "fashion house": COMPANIES},
    ),
    "sports and games": Domain(
        "game",
        ["Dice", "Board", "Cards"],
        {
            "inventor": PEOPLE,
            "origin": PLACES,
            "players": ["2 players", "4 players", "2 to 6 players"],
        },
        {"record holder": PEOPLE, "governing body": COMPANIES},
    ),
}
PRIVATE_ONLY = ("style and fashion", "sports and games")
DYNAMISM = {
    "price": "fast-changing",
    "stock status": "real-time",
    "record holder": "slow-changing",
    "fashion house": "slow-changing",
}
SYLLABLES = ["ka", "vel", "dor", "mi", "ran", "zo", "lun", "te", "bri", "os", "fa", "qui"]
FILLER = [
    "Enthusiasts often compare it with similar items from other makers.",
    "Reviews mention that it is easy to recognise at a glance.",
    "The community around it shares photos and stories online.",
    "Several guides describe how to take care of it over the years.",
    "Its look has changed little since it first appeared.",
]


@dataclass(frozen=True)
class Entity:
    name: str
    domain: str
    popularity: str
    attributes: dict[str, str]  # what image search returns
    web_facts: dict[str, str]  # found only in web pages
    design: draw.Design

    @property
    def noun(self) -> str:
        return DOMAINS[self.domain].noun

    @property
    def slug(self) -> str:
        return self.name.lower().replace(" ", "-")


def make_entities(rng: random.Random) -> tuple[list[Entity], list[Entity]]:
    """Three entities per domain, and hard negatives: lookalikes that no question is about."""
    used: set[str] = set()
    targets = []
    for position, (domain, spec) in enumerate(DOMAINS.items()):
        for offset, ending in enumerate(spec.endings):
            number = position * len(spec.endings) + offset
            look = draw.make_design(rng, (number * 0.618) % 1.0)
            targets.append(_entity(rng, domain, ending, POPULARITY[number % 3], look, used))
    negatives = [
        _entity(
            rng,
            t.domain,
            rng.choice(DOMAINS[t.domain].endings),
            "tail",
            draw.similar_design(rng, t.design),
            used,
        )
        for t in targets[::2]
    ]
    return targets, negatives


def _entity(
    rng: random.Random, domain: str, ending: str, popularity: str, look: draw.Design, used: set[str]
) -> Entity:
    spec = DOMAINS[domain]
    name = ""
    while not name or name in used:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 3))))
        name = f"{word.capitalize()} {ending}"
    used.add(name)
    attributes = {key: rng.choice(values) for key, values in spec.image_keys.items()}
    attributes["year"] = str(rng.randint(1950, 2022))
    facts = {key: rng.choice(values) for key, values in spec.web_keys.items()}
    return Entity(name, domain, popularity, attributes, facts, look)


def write_corpus(rng: random.Random, out: Path, entities: list[Entity]) -> None:
    """The search corpus: 1-3 views of each entity, scenes of no entity, 2-3 web pages each."""
    (out / "images").mkdir(parents=True)
    rows, pages = [], []
    for entity in entities:
        for view in range(3 if entity.popularity == "head" else 2):
            file = f"images/{entity.slug}-{view}.jpg"
            (out / file).write_bytes(draw.jpeg(draw.corpus_view(rng, entity.design, view), 80))
            found = {"entity_name": entity.name, "entity_attributes": entity.attributes}
            rows.append({"image": file, "url": f"{IMAGE_SITE}/{file}", "entities": [found]})
        pages.extend(_web_pages(rng, entity))
    for index in range(6):
        file = f"images/scene-{index}.jpg"
        (out / file).write_bytes(draw.jpeg(draw.distractor_view(rng), 80))
        rows.append({"image": file, "url": f"{IMAGE_SITE}/{file}", "entities": []})
    for name, records in (("images.jsonl", rows), ("web.jsonl", pages)):
        lines = (json.dumps(record, ensure_ascii=False) + "\n" for record in records)
        (out / name).write_text("".join(lines), encoding="utf-8")


def _web_pages(rng: random.Random, entity: Entity) -> list[dict[str, str]]:
    """An overview page (image attributes), a facts page (web-only facts), a history page."""
    facts = list(entity.web_facts.items())
    overview = list(entity.attributes.items())
    contents = {"overview": overview, "facts": facts + rng.sample(overview, 2)}
    if entity.popularity == "head":
        contents["history"] = [("year", entity.attributes["year"]), *facts]
    pages = []
    for title, items in contents.items():
        sentences = [_fact_sentence(rng, entity, key, value) for key, value in items]
        sentences += rng.sample(FILLER, 2)
        rng.shuffle(sentences)
        intro = f"The {entity.name} is a {entity.noun} in the {entity.domain} category."
        text = " ".join([intro, *sentences])
        domain_slug = entity.domain.replace(" ", "-")
        pages.append(
            {
                "page_url": f"{SITE}/{domain_slug}/{entity.slug}/{title}",
                "page_name": f"{entity.name} - {title}",
                # The snippet summarises the page's facts, so web search can answer from it.
                "page_snippet": " ".join([intro, *(s for s in sentences if s not in FILLER)]),
                "text": text,
            }
        )
    return pages


def _fact_sentence(rng: random.Random, entity: Entity, key: str, value: str) -> str:
    if key == "year":
        return f"The {entity.name} was first released in {value}."
    template = rng.choice(
        [
            "The {key} of the {name} is {value}.",
            "Records list {value} as the {key} of the {name}.",
            "For the {name}, the {key} is {value}.",
        ]
    )
    return template.format(key=key, name=entity.name, value=value)


@dataclass(frozen=True)
class Question:
    query: str
    answer: str
    category: str
    dynamism: str


def questions(
    rng: random.Random, entity: Entity, peers: list[Entity], web: bool, subject: str
) -> list[Question]:
    """Every question the sample asks about ``entity``; ``web`` adds those needing web search."""
    noun = entity.noun
    keys = [key for key in entity.attributes if key != "year"]
    asked = [Question(f"What {noun} is this?", entity.name, "simple-recognition", "static")]
    for key in keys:
        value = entity.attributes[key]
        answer = f"The {key} is {value}." if rng.random() < 0.3 else value
        asked.append(
            Question(
                f"What is the {key} of {subject}?",
                answer,
                "simple-knowledge",
                DYNAMISM.get(key, "static"),
            )
        )
    age = CURRENT_YEAR - int(entity.attributes["year"])
    asked.append(
        Question(
            f"How many years before {CURRENT_YEAR} did {subject} first appear?",
            f"{age} years",
            "reasoning",
            "static",
        )
    )
    first, second = rng.sample(keys, 2)
    pair = f"{entity.attributes[first]} and {entity.attributes[second]}"
    asked.append(
        Question(f"What are the {first} and {second} of {subject}?", pair, "aggregation", "static")
    )
    if web:
        for key, value in entity.web_facts.items():
            asked.append(
                Question(
                    f"What is the {key} of {subject}?",
                    value,
                    "multi-hop",
                    DYNAMISM.get(key, "static"),
                )
            )
        year = int(entity.attributes["year"])
        for other in [p for p in peers if int(p.attributes["year"]) != year][:1]:
            earlier = "yes" if year < int(other.attributes["year"]) else "no"
            query = f"Did {subject} first appear before the {other.name}?"
            asked.append(Question(query, earlier, "comparison", "static"))
    return asked


def conversation(
    rng: random.Random, task: str, session_id: str, entity: Entity, peers: list[Entity]
) -> tuple[Conversation, bytes]:
    """One conversation about ``entity``: single-turn for Tasks 1-2, 2-6 turns for Task 3."""
    ego = rng.random() < 0.75
    quality = rng.choice(IMAGE_QUALITIES) if ego else "normal"
    photo = draw.ego_photo(rng, entity.design, quality) if ego else draw.web_photo(entity.design)
    web = task != TASKS[0]
    subject = f"this {entity.noun}"
    if task == TASKS[2]:
        opening = rng.choice(questions(rng, entity, peers, web, subject)[:2])
        later = questions(rng, entity, peers, web, "it")[1:]
        rest = [q for q in later if q.query != opening.query.replace(subject, "it")]
        chosen = [opening, *rng.sample(rest, min(len(rest), rng.randint(1, 5)))]
    else:
        chosen = [rng.choice(questions(rng, entity, peers, web, subject))]
    turns = []
    for index, question in enumerate(chosen):
        labels = {
            "domain": entity.domain,
            "query_category": question.category,
            "dynamism": question.dynamism,
            "image_quality": quality,
            "entity_popularity": entity.popularity,
        }
        if task == TASKS[2]:
            labels["depends_on_history"] = "yes" if index else "no"
        turns.append(Turn(f"{session_id}-{index}", question.query, question.answer, labels))
    image_url = None if ego else f"{IMAGE_SITE}/photos/{session_id}.jpg"
    record = Conversation(session_id, f"images/{session_id}.jpg", image_url, tuple(turns))
    return record, draw.jpeg(photo)


def write_sample(out_dir: str | Path, seed: int = 0) -> None:
    """Write the whole sample (corpus and the 9 split directories) into an empty ``out_dir``."""
    with staged_directory(out_dir) as staging:
        _write_all(staging, seed)


def _write_all(out: Path, seed: int) -> None:
    targets, negatives = make_entities(random.Random(f"{seed}:entities"))
    write_corpus(random.Random(f"{seed}:corpus"), out / "corpus", targets + negatives)
    for task in TASKS:
        prefix = "".join(word[0] for word in task.split("-"))
        for split in SPLITS:
            rng = random.Random(f"{seed}:{task}:{split}")
            pool = [e for e in targets if split == SPLITS[2] or e.domain not in PRIVATE_ONLY]
            drafts = []
            for number in range(CONVERSATIONS[task]):
                entity = rng.choice(pool)
                peers = [e for e in targets if e.domain == entity.domain and e is not entity]
                session_id = f"{prefix}-{split}-{number:03d}"
                drafts.append(conversation(rng, task, session_id, entity, peers))
            write_split(drafts, out / task / split)
