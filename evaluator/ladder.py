"""The Ladder (Blum and Hardt, 2015, "The Ladder: A Reliable Leaderboard for Machine Learning
Competitions"): a public board that publishes a team's score only when it beats the team's
best published score by more than a threshold, rounded to that threshold.

Walking a team's runs in submission order, the released score R starts empty; a run's score
s replaces R with s rounded to a multiple of the threshold eta when s > R + eta (lower is
better: s < R - eta), else R stays. A team thus learns at most one bit a run about the public
split's items, and nothing from scores that move by less than eta, which bounds how far it can
fit its agent to them (``docs/public-board.md``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# rounding R to a multiple of eta leaves binary noise (0.1 * 3 = 0.30000000000000004): cut it
_DIGITS = 12


@dataclass(frozen=True)
class Step:
    """One run's place on its team's ladder: the released score after it (None: nothing
    released yet) and whether the run released it."""

    released: float | None
    improved: bool


def rounded(score: float, threshold: float) -> float:
    """``score`` rounded to the nearest multiple of ``threshold``."""
    return round(round(score / threshold) * threshold, _DIGITS)


def beats(score: float, released: float | None, threshold: float, higher_is_better: bool) -> bool:
    """Whether ``score`` beats the released score by more than ``threshold`` (any score
    beats none)."""
    if released is None:
        return True
    if higher_is_better:
        return score > released + threshold
    return score < released - threshold


def walk(
    scores: Iterable[float | None], threshold: float, higher_is_better: bool = True
) -> list[Step]:
    """Each of a team's runs' step, the runs in submission order (a score of None, an
    incomplete result, releases nothing)."""
    if not threshold > 0:
        raise ValueError(f"the Ladder's threshold must be positive, not {threshold!r}")
    released: float | None = None
    steps = []
    for score in scores:
        improved = score is not None and beats(score, released, threshold, higher_is_better)
        if improved and score is not None:
            released = rounded(score, threshold)
        steps.append(Step(released, improved))
    return steps
