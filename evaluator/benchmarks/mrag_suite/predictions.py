"""MRAG-Suite predictions: ``predictions.jsonl``, one answer per (mode, item)::

    {"item_id": str, "mode": "GO" | "GPD" | "DO", "short_answer": str, "long_answer": str}

An answer that breaks the agent's answer format, an unknown item or mode, or one answered
twice is an error naming the line; a file that is not UTF-8 too. Items left unanswered are
warned about and graded as empty answers.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

from evaluator.benchmarks.mrag_suite.items import MragSplit
from evaluator.benchmarks.mrag_suite.modes import MragAnswer, answer_key, check_mode, read_answer
from evaluator.jsonl import json_objects
from evaluator.records import EvaluatorError


def load_predictions(
    path: str | Path, split: MragSplit, modes: Sequence[str] | None
) -> tuple[dict[str, MragAnswer], list[str]]:
    answers: dict[str, MragAnswer] = {}
    for where, record in json_objects(Path(path)):
        item_id, mode = record.get("item_id"), record.get("mode")
        if not isinstance(item_id, str) or item_id not in {i.item_id for i in split.items}:
            raise EvaluatorError(
                f"{where}: field 'item_id': {item_id!r} is not an item of the split"
            )
        mode = check_mode(mode if isinstance(mode, str) else repr(mode), f"{where}: field 'mode'")
        reply = {k: v for k, v in record.items() if k not in ("item_id", "mode")}
        answer, problem = read_answer(item_id, mode, reply)
        if problem is not None:
            raise EvaluatorError(f"{where}: {problem}")
        key = answer_key(mode, item_id)
        if key in answers:
            raise EvaluatorError(f"{where}: item {item_id!r} answered twice in mode {mode}")
        answers[key] = answer
    asked = modes or sorted({answer.mode for answer in answers.values()})
    missing = [answer_key(m, i.item_id) for m in asked for i in split.items]
    missing = [key for key in missing if key not in answers]
    warnings = [f"{len(missing)} answer(s) missing, graded as empty: {', '.join(missing[:5])}"]
    return answers, warnings if missing else []


def sample_answers(split: MragSplit, modes: Sequence[str], seed: int = 0) -> list[MragAnswer]:
    """Made-up answers: grounded and right, wrong from a distractor, or "I don't know"."""
    rng = random.Random(seed)
    found = []
    for mode in modes:
        for item in split.items:
            kind = rng.choice(["right", "right", "wrong", "idk"])
            passages = [
                e.content for e in (*item.evidence, *item.distractors) if e.modality == "text"
            ]
            if kind == "right":
                found.append(MragAnswer(item.item_id, mode, item.short_answer, item.long_answer))
            elif kind == "wrong":
                found.append(MragAnswer(item.item_id, mode, "forty two", rng.choice(passages)))
            else:
                found.append(MragAnswer(item.item_id, mode, "", ""))
    return found


def write_predictions(answers: Sequence[MragAnswer], path: str | Path) -> None:
    lines = [
        json.dumps({"item_id": a.item_id, "mode": a.mode, "short_answer": a.short_answer,
                    "long_answer": a.long_answer}, ensure_ascii=False)
        for a in answers
    ]  # fmt: skip
    Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
