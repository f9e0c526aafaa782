"""Grading one CRAG-MM turn: truncate, missing, exact match, then the judge.

Both official missing-answer rules are offered (``MISSING_RULES``); the order of the checks and
the exact-match rule follow the official evaluators. Unlike them, a judge failure never counts
as a hallucination: the turn stays UNJUDGED (with the judge's reason) until judged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

from evaluator.benchmarks.crag_mm.records import GradedTurn, Prediction, Split, Verdict
from evaluator.benchmarks.crag_mm.truncation import Truncator
from evaluator.judges.base import Judge
from evaluator.judges.cache import JudgmentCache
from evaluator.judges.loop import audit_fields, judge_and_transcribe
from evaluator.judges.transcript import TranscriptWriter
from evaluator.records import EvaluatorError, JudgeRequest

# What a judge may decide (MISSING is decided before any judge call).
JUDGE_GRADES = frozenset({Verdict.CORRECT, Verdict.HALLUCINATED, Verdict.UNJUDGED})
_NOT_ALPHANUMERIC = re.compile(r"[^a-z0-9\s]")


def is_missing_kit_a(response: str) -> bool:
    """Challenge kit: the lower-cased answer contains "i don't know" (plain apostrophe only)."""
    return "i don't know" in response.lower()


def is_missing_kit_b(response: str) -> bool:
    """Post-challenge release: lower-case, keep only a-z, 0-9 and whitespace, then look for
    "i dont know" or "i do not know" (so curly apostrophes and punctuation don't matter)."""
    cleaned = _NOT_ALPHANUMERIC.sub("", response.lower())
    return "i dont know" in cleaned or "i do not know" in cleaned


MISSING_RULES: dict[str, Callable[[str], bool]] = {
    "kit-a": is_missing_kit_a,
    "kit-b": is_missing_kit_b,
}


def missing_rule(variant: str) -> Callable[[str], bool]:
    """The missing-answer rule called ``variant`` ("kit-a" or "kit-b")."""
    try:
        return MISSING_RULES[variant]
    except KeyError:
        known = ", ".join(MISSING_RULES)
        raise EvaluatorError(f"missing variant {variant!r}: expected one of {known}") from None


def is_exact_match(response: str, ground_truth: str) -> bool:
    """Stripped, lower-cased equality, as in both official evaluators."""
    return response.strip().lower() == ground_truth.strip().lower()


def turn_key(interaction_id: str) -> str:
    """A turn's judge call's stable key (``docs/evaluator.md``, Writing a transcript)."""
    return f"turn/{interaction_id}"


def never_asked(split: Split, keys: Collection[str]) -> set[str]:
    """The keys among ``keys`` that are no turn's of ``split``."""
    return set(keys) - {turn_key(turn.interaction_id) for _, _, turn in split.turns()}


def grade(
    split: Split,
    predictions: Mapping[str, Prediction],
    judge: Judge,
    cache: JudgmentCache | None,
    truncator: Truncator,
    missing_variant: str = "kit-b",
    progress: bool = True,
    transcript: TranscriptWriter | None = None,
) -> list[GradedTurn]:
    """Grade every turn of ``split`` in split order.

    A turn without a prediction gets an empty answer and is MISSING. A missing answer is
    MISSING even when it also equals the ground truth (``is_exact_match`` is kept as computed,
    so the metrics can reproduce the official code's counting); an exact match is CORRECT; the
    rest go to the judge through the cache, and its CORRECT / HALLUCINATED / UNJUDGED stands.
    Every row carries the judge's identity, so a run says which judge configuration made it.
    """
    is_missing = missing_rule(missing_variant)
    rows: list[dict[str, Any]] = []
    to_judge: list[int] = []
    requests: list[JudgeRequest] = []
    for conversation, turn_idx, turn in split.turns():
        prediction = predictions.get(turn.interaction_id)
        response = truncator.truncate(prediction.response) if prediction is not None else ""
        exact = is_exact_match(response, turn.ground_truth)
        miss = prediction is None or is_missing(response)
        if miss:
            verdict = Verdict.MISSING
        elif exact:
            verdict = Verdict.CORRECT
        else:
            verdict = Verdict.UNJUDGED
            to_judge.append(len(rows))
            key = turn_key(turn.interaction_id)
            requests.append(JudgeRequest(turn.query, turn.ground_truth, response, key))
        rows.append(
            {
                "session_id": conversation.session_id,
                "interaction_id": turn.interaction_id,
                "turn_idx": turn_idx,
                "is_ego": conversation.is_ego,
                "labels": dict(turn.labels),
                "query": turn.query,
                "ground_truth": turn.ground_truth,
                "agent_response": response,
                "is_exact_match": exact,
                "is_miss": miss,
                "verdict": verdict,
                "judge_id": judge.judge_id,
                "prompt_version": judge.prompt_version,
                "prompt_hash": judge.prompt_hash,
            }
        )

    judgments = judge_and_transcribe(judge, requests, cache, transcript, progress)
    for index, judgment in zip(to_judge, judgments, strict=True):
        if judgment.verdict not in JUDGE_GRADES:
            raise EvaluatorError(
                f"judge {judgment.judge_id} answered {judgment.verdict!r}, not a judge verdict"
            )
        rows[index].update(verdict=Verdict(judgment.verdict), **audit_fields(judgment))
    return [GradedTurn(**row) for row in rows]
