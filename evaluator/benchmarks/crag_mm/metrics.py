"""CRAG-MM scores: counts, rates, truthfulness, early stop, slices and intervals.

Counting variants (``counting=``), all computed from each turn's flags:

- ``"paper"`` (the headline): a turn is correct, missing or hallucinated by its Podium
  ``verdict``. Counts and rates are taken on the raw turns.
- ``"kit-a"`` (the challenge starter kit): a turn is correct when ``is_exact_match`` or the
  verdict is CORRECT, and missing when ``is_miss``, independently, so an exact-match answer
  that says "i don't know" is both; hallucination = turns - correct - miss. Early stop is
  applied *before* counting (turns after the stop count as missing, not correct, not exact).
- ``"kit-b"`` (the post-challenge release): kit A's flags, counted on the raw turns; early
  stop only enters the conversation score.

Early stop: within a conversation (turns in ``turn_idx`` order), at the first position
``i >= 1`` where turns ``i-1`` and ``i`` are both not correct, every turn after ``i`` becomes
missing. It is decided on the *whole* conversation; a slice then takes the conversation's
turns that belong to it. A conversation is "stopped early" when at least one turn comes after
its stop. The conversation score is mean(correct) - mean(hallucinated) over the conversation's
turns in the block, after early stop.

Single- or multi-turn: a run is multi-turn when any of its conversations has more than one
turn; that decides every block of the run. A block's ``truthfulness`` is
``truthfulness_turn`` in a single-turn run, and the mean of its conversations' scores in a
multi-turn run. ``truthfulness_turn`` = (2 correct + miss) / turns - 1, and 0 when the block
has one turn or none, as the official code.

Per block (``all``, ``ego``, each slice value): ``early_stop_rate`` = share of its
conversations stopped early; ``avg_successful_turns`` = correct turns after early stop /
conversations; ``conversation_score`` = mean conversation score (the kits' multi-turn score,
in single-turn runs too); ``truthfulness_ci95`` = seeded percentile bootstrap over the block's
conversations (:mod:`evaluator.stats`) of the conversation score (multi-turn) or the turn score
2 correct + miss - 1 (single-turn).

Incomplete runs: when any turn of the run is UNJUDGED, ``complete`` is False, counts are given
on the raw turns (early stop needs every verdict), unjudged turns are counted apart and never
as hallucinated, and every rate, truthfulness and interval is None. An empty block (no ego
turns) has zero counts and None rates.

Slices: every label key of any turn (a turn without that key falls under ``(unlabelled)``),
plus ``is_ego`` (``"true"``/``"false"``) and ``turn`` (the turn index); the values of each
dimension partition the run's turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluator.benchmarks.crag_mm.records import GradedTurn, Verdict
from evaluator.records import EvaluatorError
from evaluator.stats import DEFAULT_N_BOOT, bootstrap_mean_ci

COUNTINGS: tuple[str, ...] = ("paper", "kit-a", "kit-b")
EGO_SLICE = "is_ego"
TURN_SLICE = "turn"
UNLABELLED = "(unlabelled)"
# A block's keys beyond its counts: None when the run is incomplete or the block is empty.
RATE_KEYS: tuple[str, ...] = (
    "accuracy",
    "exact_match",
    "missing",
    "hallucination_rate",
    "truthfulness_turn",
    "truthfulness",
    "conversation_score",
    "early_stop_rate",
    "avg_successful_turns",
    "truthfulness_ci95",
)

# The keys of the official kits' score dictionary, with the Podium block key each reads.
OFFICIAL_KEYS: dict[str, str] = {
    "total": "turns",
    "correct_exact": "correct_exact",
    "correct": "correct",
    "miss": "miss",
    "hallucination": "hallucination",
    "exact_match": "exact_match",
    "accuracy": "accuracy",
    "missing": "missing",
    "hallucination_rate": "hallucination_rate",
    "truthfulness_score": "truthfulness_turn",
    "mean_multi_turn_conversation_score": "conversation_score",
}


@dataclass(frozen=True)
class CountedTurns:
    """One run's turns under one counting, sorted by session id, then turn index."""

    counting: str
    session_ids: tuple[str, ...]  # conversation index -> session id (sorted)
    conversation: np.ndarray  # per turn: conversation index
    turn_idx: np.ndarray
    interaction_ids: tuple[str, ...]
    is_ego: np.ndarray
    labels: tuple[dict[str, str], ...]
    correct: np.ndarray  # flags counted for the turn-level rates
    correct_exact: np.ndarray
    miss: np.ndarray
    unjudged: np.ndarray
    stopped_correct: np.ndarray  # flags after early stop (conversation score)
    stopped_hallucinated: np.ndarray
    stopped_early: np.ndarray  # per conversation
    multi_turn: bool

    @property
    def complete(self) -> bool:
        return not bool(self.unjudged.any())

    def conversation_scores(self, mask: np.ndarray) -> np.ndarray:
        """Per conversation with turns in ``mask``: mean(correct) - mean(hallucinated)."""
        size = len(self.session_ids)
        index = self.conversation[mask]
        turns = np.bincount(index, minlength=size)
        correct = np.bincount(index, weights=self.stopped_correct[mask], minlength=size)
        wrong = np.bincount(index, weights=self.stopped_hallucinated[mask], minlength=size)
        present = turns > 0
        return correct[present] / turns[present] - wrong[present] / turns[present]

    def units(self, mask: np.ndarray) -> np.ndarray:
        """Truthfulness units of the turns in ``mask``, one per conversation."""
        if self.multi_turn:
            return self.conversation_scores(mask)
        scores: np.ndarray = (2 * self.correct[mask] + self.miss[mask] - 1).astype(np.float64)
        return scores

    def truthfulness(self, mask: np.ndarray) -> float:
        """The headline truthfulness of the turns in ``mask`` (a complete, non-empty block)."""
        if self.multi_turn:
            return float(np.mean(self.conversation_scores(mask)))
        correct, miss = int(self.correct[mask].sum()), int(self.miss[mask].sum())
        return truthfulness_turn(correct, miss, int(mask.sum()))


def truthfulness_turn(correct: int, miss: int, turns: int) -> float:
    """(2 correct + miss) / turns - 1, and 0 for one turn or none, as the official code."""
    return ((2 * correct + miss) / turns) - 1 if turns > 1 else 0.0


def _validate(graded: Sequence[GradedTurn]) -> None:
    if not graded:
        raise EvaluatorError("no graded turns to score")
    seen: dict[tuple[str, str | int], int] = {}
    ego: dict[str, bool] = {}
    for position, turn in enumerate(graded):
        if not isinstance(turn, GradedTurn):
            raise EvaluatorError(
                f"graded turn #{position}: expected a GradedTurn, got {type(turn).__name__}"
            )
        where = f"graded turn #{position} ({turn.session_id}/{turn.interaction_id})"
        for name in ("session_id", "interaction_id"):
            if not isinstance(getattr(turn, name), str) or not getattr(turn, name):
                raise EvaluatorError(f"{where}: field {name!r} must be a non-empty string")
        if not isinstance(turn.verdict, Verdict):
            raise EvaluatorError(f"{where}: field 'verdict' is not a Verdict: {turn.verdict!r}")
        if not isinstance(turn.turn_idx, int) or turn.turn_idx < 0:
            raise EvaluatorError(f"{where}: field 'turn_idx' must be an int >= 0")
        if turn.is_miss != (turn.verdict is Verdict.MISSING):
            raise EvaluatorError(
                f"{where}: is_miss={turn.is_miss} but verdict={turn.verdict.value}; missing "
                "detection runs first, so the verdict is MISSING exactly when is_miss"
            )
        if turn.is_exact_match and not turn.is_miss and turn.verdict is not Verdict.CORRECT:
            raise EvaluatorError(
                f"{where}: is_exact_match=True but verdict={turn.verdict.value}; an exact "
                "match that is not missing is CORRECT"
            )
        for key in ((turn.session_id, turn.interaction_id), (turn.session_id, turn.turn_idx)):
            if key in seen:
                raise EvaluatorError(f"{where}: duplicate of graded turn #{seen[key]} ({key})")
            seen[key] = position
        if ego.setdefault(turn.session_id, turn.is_ego) != turn.is_ego:
            raise EvaluatorError(f"{where}: is_ego differs between turns of one conversation")
        for name, value in turn.labels.items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise EvaluatorError(f"{where}: label {name!r}={value!r} is not a string pair")
            if name in (EGO_SLICE, TURN_SLICE):
                raise EvaluatorError(f"{where}: label {name!r} clashes with a built-in slice")


def _early_stop(correct: np.ndarray, conversation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each turn's position in its conversation, and each conversation's stop position.

    Turns are sorted by conversation, then turn index. A conversation that never stops gets
    a stop position past its last turn.
    """
    starts = np.flatnonzero(np.r_[True, np.diff(conversation) != 0])
    lengths = np.diff(np.r_[starts, conversation.size])
    position = np.arange(conversation.size) - np.repeat(starts, lengths)
    wrong = ~correct
    pair = wrong & np.r_[False, wrong[:-1]] & (position > 0)
    hits = np.flatnonzero(pair)
    stop = lengths.copy()
    stopping, first = np.unique(conversation[hits], return_index=True)
    stop[stopping] = position[hits[first]]
    return position, stop


def count_turns(graded: Sequence[GradedTurn], counting: str = "paper") -> CountedTurns:
    """Validate graded turns and derive each turn's counted flags under ``counting``."""
    if counting not in COUNTINGS:
        raise EvaluatorError(f"unknown counting {counting!r}; choose one of {', '.join(COUNTINGS)}")
    _validate(graded)
    session_ids = tuple(sorted({t.session_id for t in graded}))
    index_of = {sid: i for i, sid in enumerate(session_ids)}
    ordered = sorted(graded, key=lambda t: (index_of[t.session_id], t.turn_idx))
    conversation = np.array([index_of[t.session_id] for t in ordered], dtype=np.int64)
    verdict = np.array([t.verdict.value for t in ordered])
    exact = np.array([t.is_exact_match for t in ordered], dtype=bool)
    miss = np.array([t.is_miss for t in ordered], dtype=bool)
    judged_correct = verdict == Verdict.CORRECT.value
    correct = judged_correct if counting == "paper" else exact | judged_correct
    correct_exact = exact & judged_correct if counting == "paper" else exact
    unjudged = verdict == Verdict.UNJUDGED.value

    position, stop = _early_stop(correct, conversation)
    dropped = position > stop[conversation]
    stopped_correct = correct & ~dropped
    stopped_miss = miss | dropped
    turns_per_conv = np.bincount(conversation)
    if counting == "kit-a" and not unjudged.any():
        correct, correct_exact, miss = stopped_correct, correct_exact & ~dropped, stopped_miss
    return CountedTurns(
        counting=counting,
        session_ids=session_ids,
        conversation=conversation,
        turn_idx=np.array([t.turn_idx for t in ordered], dtype=np.int64),
        interaction_ids=tuple(t.interaction_id for t in ordered),
        is_ego=np.array([t.is_ego for t in ordered], dtype=bool),
        labels=tuple(t.labels for t in ordered),
        correct=correct,
        correct_exact=correct_exact,
        miss=miss,
        unjudged=unjudged,
        stopped_correct=stopped_correct,
        stopped_hallucinated=~stopped_correct & ~stopped_miss,
        stopped_early=stop < turns_per_conv - 1,
        multi_turn=bool(turns_per_conv.max() > 1),
    )


def score_block(counted: CountedTurns, mask: np.ndarray, seed: int, n_boot: int) -> dict[str, Any]:
    """Counts, rates, truthfulness and interval for the turns selected by ``mask``."""
    turns = int(mask.sum())
    in_block = np.bincount(counted.conversation[mask], minlength=len(counted.session_ids)) > 0
    correct = int(counted.correct[mask].sum())
    miss = int(counted.miss[mask].sum())
    unjudged = int(counted.unjudged[mask].sum())
    block: dict[str, Any] = {
        "turns": turns,
        "conversations": int(in_block.sum()),
        "correct": correct,
        "correct_exact": int(counted.correct_exact[mask].sum()),
        "miss": miss,
        "hallucination": turns - correct - miss - unjudged,
        "unjudged": unjudged,
    }
    if turns == 0 or not counted.complete:
        return block | dict.fromkeys(RATE_KEYS)
    truthfulness = counted.truthfulness(mask)
    units = counted.units(mask)
    # Fewer than two units carry no spread: the interval is the point itself.
    ci95 = bootstrap_mean_ci(units, seed, n_boot) if units.size > 1 else (truthfulness,) * 2
    return block | {
        "accuracy": correct / turns,
        "exact_match": block["correct_exact"] / turns,
        "missing": miss / turns,
        "hallucination_rate": block["hallucination"] / turns,
        "truthfulness_turn": truthfulness_turn(correct, miss, turns),
        "truthfulness": truthfulness,
        "conversation_score": float(np.mean(counted.conversation_scores(mask))),
        "early_stop_rate": float(counted.stopped_early[in_block].mean()),
        "avg_successful_turns": int(counted.stopped_correct[mask].sum()) / block["conversations"],
        "truthfulness_ci95": list(ci95),
    }


def check_resampling(seed: int, n_boot: int) -> None:
    """The bootstrap settings: a seed >= 0 and at least one resample."""
    if not isinstance(seed, int) or seed < 0:
        raise EvaluatorError(f"seed must be an int >= 0, got {seed!r}")
    if not isinstance(n_boot, int) or n_boot < 1:
        raise EvaluatorError(f"n_boot must be an int >= 1, got {n_boot!r}")


def slice_values(counted: CountedTurns) -> dict[str, np.ndarray]:
    """Per slice dimension, each turn's value (a string), in the order of ``counted``."""
    names = sorted({key for labels in counted.labels for key in labels})
    dimensions = {
        name: np.array([labels.get(name, UNLABELLED) for labels in counted.labels])
        for name in names
    }
    dimensions[EGO_SLICE] = np.where(counted.is_ego, "true", "false")
    dimensions[TURN_SLICE] = counted.turn_idx.astype(str)
    return dimensions


def score_turns(
    graded: Sequence[GradedTurn],
    counting: str = "paper",
    seed: int = 0,
    n_boot: int = DEFAULT_N_BOOT,
) -> dict[str, Any]:
    """Score a run: ``all`` turns, ``ego`` turns and every slice value (see the module doc)."""
    check_resampling(seed, n_boot)
    counted = count_turns(graded, counting)
    everything = np.ones(counted.conversation.size, dtype=bool)
    slices: dict[str, dict[str, dict[str, Any]]] = {}
    for name, values in slice_values(counted).items():
        distinct = list(np.unique(values))
        if name == TURN_SLICE:
            distinct.sort(key=int)
        slices[name] = {
            str(value): score_block(counted, values == value, seed, n_boot) for value in distinct
        }
    return {
        "counting": counting,
        "multi_turn": counted.multi_turn,
        "complete": counted.complete,
        "unjudged": int(counted.unjudged.sum()),
        "all": score_block(counted, everything, seed, n_boot),
        "ego": score_block(counted, counted.is_ego, seed, n_boot),
        "slices": slices,
    }


def official_scores(block: dict[str, Any]) -> dict[str, float]:
    """A block in the official kits' ``scores_dictionary`` keys and float values."""
    if any(block[key] is None for key in OFFICIAL_KEYS.values()):
        raise EvaluatorError("the official score dictionary needs a complete, non-empty block")
    return {key: float(block[source]) for key, source in OFFICIAL_KEYS.items()}
