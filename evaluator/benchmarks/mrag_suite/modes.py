"""MRAG-Suite's retrieval modes, each a separate evaluation, and the agent's answer.

What an item retrieves in each mode (``depth``: most passages and most images, a task setting,
default 5 + 5; the authors' released driver used 2 + 2):

- ``GO`` (gold only): the item's gold images and passages;
- ``GPD`` (gold plus distractors): the gold, then distractors up to the depth, the list
  shuffled (seeded by the item id) so the gold's place says nothing;
- ``DO`` (distractors only): distractors up to the depth.

Counting (``COUNTINGS``, a task setting): ``ragchecker`` (the default, as RAGChecker counts a
retrieved context list) retrieves the same content twice (a distractor equal to a gold passage)
twice, each a slot of the depth and an item of the diagnosis; **Podium**'s ``distinct``
retrieves it once (and checks each (claim, text) pair once: ``checks.py``). The agent
answers ``{"short_answer": str, "long_answer": str}``; ``read_answer`` names what is wrong
with any other reply, in Podium's words.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from typing import Any

from evaluator.benchmarks.mrag_suite.items import Evidence, Modality, MragItem
from evaluator.records import EvaluatorError

MODES = ("GO", "GPD", "DO")
DEFAULT_DEPTH = (5, 5)  # passages, images
COUNTINGS = ("ragchecker", "distinct")  # the first is the default
MAX_SHORT_ANSWER_CHARS = 1_000
MAX_LONG_ANSWER_CHARS = 16_000  # a longer answer never reaches the claim extractor
FIELDS = ("short_answer", "long_answer")
_LIMITS = (("short_answer", MAX_SHORT_ANSWER_CHARS), ("long_answer", MAX_LONG_ANSWER_CHARS))

SETTINGS_SCHEMA: dict[str, Any] = {  # a task's settings (JSON Schema)
    "type": "object",
    "properties": {
        "modes": {"type": "array", "items": {"enum": list(MODES)}, "minItems": 1,
                  "uniqueItems": True, "default": list(MODES), "title": "Retrieval modes",
                  "description": "one run per mode: GO (gold only), GPD (gold plus "
                  "distractors), DO (distractors only)"},
        "passages": {"type": "integer", "minimum": 0, "maximum": 50,
                     "default": DEFAULT_DEPTH[0], "title": "Passages retrieved"},
        "images": {"type": "integer", "minimum": 0, "maximum": 50,
                   "default": DEFAULT_DEPTH[1], "title": "Images retrieved"},
        "counting": {"enum": list(COUNTINGS), "default": COUNTINGS[0], "title": "Counting",
                     "description": "ragchecker: an item retrieved twice and a claim "
                     "extracted twice count twice, as RAGChecker counts; distinct "
                     "(Podium's): the same content retrieved once, each (claim, text) "
                     "pair checked once"},
    },
    "additionalProperties": False,
}  # fmt: skip


@dataclass(frozen=True)
class MragAnswer:
    item_id: str
    mode: str
    short_answer: str
    long_answer: str


def check_mode(mode: str, where: str = "mode") -> str:
    if mode not in MODES:
        raise EvaluatorError(f"{where}: {mode!r} is not a retrieval mode ({', '.join(MODES)})")
    return mode


def check_counting(counting: str) -> str:
    if counting not in COUNTINGS:
        raise EvaluatorError(f"counting {counting!r}: expected one of {', '.join(COUNTINGS)}")
    return counting


def modes_argument(text: str) -> tuple[str, ...]:
    """``--modes``' value: modes separated by commas."""
    try:
        return tuple(check_mode(name.strip()) for name in text.split(",") if name.strip())
    except EvaluatorError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def answer_key(mode: str, item_id: str) -> str:
    """The key of an answer (and of its run's stored reply): ``<mode>/<item_id>``."""
    return f"{mode}/{item_id}"


def retrieved(
    item: MragItem,
    mode: str,
    depth: tuple[int, int] = DEFAULT_DEPTH,
    counting: str = COUNTINGS[0],
) -> list[Evidence]:
    """What ``item`` retrieves in ``mode``: passages, then images, each list at most its
    depth (see the module doc)."""
    check_mode(mode)
    distinct = check_counting(counting) == "distinct"
    passages, images = depth
    found: list[Evidence] = []
    for modality, most in (("text", passages), ("image", images)):
        found += _one_modality(item, mode, modality, most, distinct)  # type: ignore[arg-type]
    return found


def _one_modality(
    item: MragItem, mode: str, modality: Modality, most: int, distinct: bool
) -> list[Evidence]:
    gold = item.pool(modality, gold=True) if mode != "DO" else []
    pool = item.pool(modality, gold=False) if mode != "GO" else []
    chosen: list[Evidence] = []
    seen: set[str] = set()
    for entry in (*gold, *pool):
        content = entry.file if modality == "image" else entry.content
        if not (distinct and content in seen) and len(chosen) < most:
            seen.add(content)
            chosen.append(entry)
    if mode == "GPD":
        random.Random(f"{item.item_id}:{modality}").shuffle(chosen)
    return chosen


def read_answer(item_id: str, mode: str, reply: Any) -> tuple[MragAnswer, str | None]:
    """The answer an agent's reply makes, and what is wrong with it (then the answer is empty:
    an abstention)."""
    problem = _problem(reply)
    if problem is not None:
        return MragAnswer(item_id, mode, "", ""), problem
    return MragAnswer(item_id, mode, reply["short_answer"], reply["long_answer"]), None


def _problem(reply: Any) -> str | None:
    if not isinstance(reply, dict):
        return "the response is not an object {short_answer, long_answer}"
    unknown = sorted(set(reply) - set(FIELDS))
    if unknown:
        return f"the response has {len(unknown)} field(s) other than short_answer and long_answer"
    for name, most in _LIMITS:
        value = reply.get(name)
        if not isinstance(value, str):
            return f"the response's {name} is missing or not a string"
        if len(value) > most:
            return f"the response's {name} is longer than {most} characters"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"the response's {name} is not valid UTF-8 text (a lone surrogate)"
    return None


def stored_answer(answer: MragAnswer) -> str:
    """An answer as the server stores it (``read_stored`` reads it back)."""
    reply = {"short_answer": answer.short_answer, "long_answer": answer.long_answer}
    return json.dumps(reply, ensure_ascii=False)


def read_stored(item_id: str, mode: str, text: str) -> MragAnswer:
    """A stored reply as an answer; text that is no valid reply is an empty answer."""
    try:
        reply = json.loads(text)
    except ValueError:
        reply = None
    return read_answer(item_id, mode, reply)[0]
