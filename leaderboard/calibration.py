"""The judge's scores calibrated by people's labels: beside each entry of a board, the
prediction-powered estimate of its score from the split's latest finished judge audit
(``evaluator.calibrated.corrected_score``; the method and its assumptions:
``docs/board-statistics.md``).

The audit's labelled items (those whose labellers agree) give, per verdict the judge gave, the
mean correction people made (their verdict's value minus the judge's, ``Grading.
verdict_value``) and its spread. An entry's calibrated score is its judge's score plus those
corrections weighed by the shares of its own items the judge gave each verdict (kept with its
units, ``RunUnits.verdicts``); its variance adds the corrections' to its score's. Only entries
judged by the audited judge are calibrated. Computed with the ranking when results change, and
when an audit finishes (``audit_results.finish`` changes the split's results).

A board the calibrated scores rank gets its rank intervals and groups from them
(``rectified``: each entry's shares of the judge's verdicts and the labels' corrections,
resampled, for ``evaluator.board_stats``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluator.board_stats import DEFAULT_RANK_BOOT, Rectified
from evaluator.calibrated import corrected_score, stratum_corrections
from evaluator.stats import CONFIDENCE
from leaderboard.audit_labels import CONTESTED, labelled_items
from leaderboard.models import Headline, JudgeAudit, RunUnits, Split

# a 95 % interval is 2 x 1.96 standard errors wide
_Z = 1.959963984540054


@dataclass(frozen=True)
class Rectifier:
    """A finished audit's labelled items as values: the judge's verdict (the stratum), its
    value and the people's."""

    audit_id: int
    judge_id: str
    verdicts: list[str]
    judge: list[float]
    people: list[float]
    slices: list[dict[str, str]]  # each labelled item's slice values, by dimension

    def within(self, dimension: str, value: str) -> Rectifier | None:
        """The labelled items of one slice value (None: the audit labelled none there)."""
        kept = [i for i, found in enumerate(self.slices) if found.get(dimension) == value]
        if not kept:
            return None
        return Rectifier(
            self.audit_id,
            self.judge_id,
            [self.verdicts[i] for i in kept],
            [self.judge[i] for i in kept],
            [self.people[i] for i in kept],
            [self.slices[i] for i in kept],
        )


def rectifier(split: Split) -> Rectifier | None:
    """The latest finished audit of ``split`` as a rectifier; None without one, or when the
    benchmark's primary metric has no per-verdict values, or no label has one."""
    audit = (
        JudgeAudit.objects.filter(split=split, finished_at__isnull=False)
        .order_by("-finished_at", "-pk")
        .first()
    )
    if audit is None:
        return None
    benchmark = split.task.declared()
    verdicts, judge, people, slices = [], [], [], []
    for labelled in labelled_items(audit):
        if labelled.people in (None, CONTESTED):
            continue
        said = benchmark.verdict_value(labelled.item.judge_verdict)
        truth = benchmark.verdict_value(str(labelled.people))
        if said is None or truth is None:
            continue
        verdicts.append(labelled.item.judge_verdict)
        judge.append(said)
        people.append(truth)
        slices.append({str(k): str(v) for k, v in (labelled.item.slices or {}).items()})
    if not people:
        return None
    return Rectifier(audit.pk, audit.judge_id, verdicts, judge, people, slices)


def estimate(
    found: Rectifier,
    score: float,
    interval: tuple[float | None, float | None],
    verdicts: Mapping[str, int],
) -> list[float] | None:
    """``[value, low, high]``: a judge's ``score`` (with its 95 % ``interval``) over items
    the judge gave these ``verdicts`` (counts), corrected by ``found``'s labels; None without
    a verdict."""
    total = sum(verdicts.values())
    if not total:
        return None
    shares: dict[Hashable, float] = {verdict: n / total for verdict, n in verdicts.items()}
    shares |= {verdict: 0.0 for verdict in found.verdicts if verdict not in shares}
    low, high = interval
    error = (high - low) / (2 * _Z) if low is not None and high is not None else 0.0
    fixed = corrected_score(
        score, error, found.judge, found.people, found.verdicts, shares, CONFIDENCE
    )
    return [fixed.value, *fixed.ci]


def calibrated(
    runs: Sequence[int],
    judges: Sequence[str],
    scores: Sequence[float | None],
    found: Rectifier | None,
) -> tuple[list[list[float] | None], dict[str, Any]]:
    """Each entry's calibrated score as ``[value, low, high]`` (None: not calibrated), in the
    board's order, and what the board says of it (empty without a finished audit, ``found``:
    the split's ``rectifier``)."""
    if found is None:
        return [None] * len(runs), {}
    wanted = [
        run for run, judge, score in zip(runs, judges, scores, strict=True)
        if judge == found.judge_id and score is not None
    ]  # fmt: skip
    counts = dict(RunUnits.objects.filter(run_id__in=wanted).values_list("run_id", "verdicts"))
    intervals = {
        run: (low, high)
        for run, low, high in Headline.objects.filter(run_id__in=wanted).values_list(
            "run_id", "primary_ci_low", "primary_ci_high"
        )
    }
    result: list[list[float] | None] = []
    for run, score in zip(runs, scores, strict=True):
        if score is None or run not in wanted:
            result.append(None)
            continue
        interval = intervals.get(run, (None, None))
        result.append(estimate(found, score, interval, counts.get(run) or {}))
    about = {"audit": found.audit_id, "judge_id": found.judge_id, "labels": len(found.people)}
    return result, about


def rectified(
    found: Rectifier,
    runs: Sequence[int],
    calibrated: Sequence[bool],
    n_boot: int = DEFAULT_RANK_BOOT,
) -> Rectified:
    """The board's entries (``runs``, in its order) as a board ranked by their calibrated scores
    sees them: each calibrated one's shares of the judge's verdicts on its items (a row of zeros
    for the others) and ``found``'s corrections per verdict, resampled ``n_boot`` times."""
    keys = sorted(set(found.verdicts))
    wanted = [run for run, yes in zip(runs, calibrated, strict=True) if yes]
    counts = dict(RunUnits.objects.filter(run_id__in=wanted).values_list("run_id", "verdicts"))
    shares = np.zeros((len(runs), len(keys)))
    for row, run in enumerate(runs):
        mine = counts.get(run) or {} if calibrated[row] else {}
        total = sum(mine.values())
        if total:
            shares[row] = [mine.get(key, 0) / total for key in keys]
    corrections = stratum_corrections(found.judge, found.people, found.verdicts, keys, n_boot)
    return Rectified(shares, corrections)
