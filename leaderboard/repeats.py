"""Repeated runs of a split's final entries (issue 37, item 4): what a board stores beside each
repeated entry, and how a repeat is named on pages and in the API. The organisers' action that
makes them is ``leaderboard.repeat_entries``.

A repeat is a run like any other (its page, cancel, re-run, re-judge) with ``trial`` 1 to
k - 1, but ranks on no board: boards take trial 0 only (``ranking.narrow_board_rows``). When
the split's results change (a repeat entering ``done`` does), ``beside`` gives each entry of a
board its repeated runs' statistics (``evaluator.repeats``) for ``RankedBoard.repeated``: the
mean of the k scores, its interval with the variance between runs, the scores' standard
deviation and pass^k, once all k runs are done and have units; until then how many are done.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db.models import OuterRef, Subquery

from evaluator.repeats import DEFAULT_REPEAT_BOOT, repeat_statistics
from evaluator.seam import Metric
from evaluator.stats import CONFIDENCE
from leaderboard.models import EvaluationRun, Headline, RunUnits, Split
from leaderboard.models.units import UNIT_DTYPE

DONE = EvaluationRun.State.DONE


def original_run() -> Subquery:
    """For a run of a queryset: the id of the run it repeats (its submission's trial 0 on the
    same split and setting), or None for trial 0 itself."""
    return Subquery(
        EvaluationRun.objects.filter(
            submission=OuterRef("submission"),
            split=OuterRef("split"),
            setting=OuterRef("setting"),
            trial=0,
        )
        .exclude(trial=OuterRef("trial"))
        .values("pk")[:1]
    )


def original_of(run: EvaluationRun) -> int | None:
    """The id of the run ``run`` repeats (read where a queryset did not annotate it as
    ``repeat_of``: ``original_run``); None for a submission's own run."""
    if not run.trial:
        return None
    found = getattr(run, "repeat_of", None)
    if found is None:
        found = (
            EvaluationRun.objects.filter(
                submission_id=run.submission_id, split_id=run.split_id, setting=run.setting, trial=0
            )
            .values_list("pk", flat=True)
            .first()
        )
    return found


def label(run: EvaluationRun) -> str:
    """How pages name a repeat ("repeat 2 of 3 of run #7"); "" for a submission's own run."""
    if not run.trial:
        return ""
    original = original_of(run)
    of = f" of run #{original}" if original else ""
    return f"repeat {run.trial + 1} of {max(run.task.final_repeats, run.trial + 1)}{of}"


Repeated = dict[str, Any]  # an entry's ``RankedBoard.repeated``: {"runs", "done", ...}


def _trials(split: Split, setting: str, runs: list[int]) -> dict[int, list[tuple[int, str]]]:
    """Per entry run: its runs, itself first, with their states."""
    entry_of = dict(EvaluationRun.objects.filter(pk__in=runs).values_list("submission_id", "pk"))
    trials: dict[int, list[tuple[int, str]]] = {run: [(run, DONE)] for run in runs}
    found = EvaluationRun.objects.filter(
        split=split, setting=setting, trial__gt=0, submission_id__in=entry_of
    ).order_by("trial")
    for submission_id, run, state in found.values_list("submission_id", "pk", "state"):
        trials[entry_of[submission_id]].append((run, state))
    return trials


def runs_of(split: Split, setting: str, run: int) -> list[tuple[int, str, float | None]]:
    """An entry's runs (``run``, its trial 0, first), each with its state and primary score
    (None until scored): what its page lists under "Repeated runs"."""
    ids = [r for r, _ in _trials(split, setting, [run])[run]]
    states = dict(EvaluationRun.objects.filter(pk__in=ids).values_list("pk", "state"))
    scores = dict(Headline.objects.filter(run_id__in=ids).values_list("run_id", "primary"))
    return [(r, states[r], scores.get(r)) for r in ids]


def beside(split: Split, setting: str, runs: list[int]) -> tuple[list[Repeated | None], Repeated]:
    """Per entry of the board (``runs``, its trial-0 runs in the board's order): its repeated
    runs' statistics, or how many of them are done, or None where it was not repeated; and how
    they were computed (empty when no entry was repeated)."""
    found: list[Repeated | None] = [None] * len(runs)
    if not runs or not EvaluationRun.objects.filter(split=split, trial__gt=0).exists():
        return found, {}
    trials = _trials(split, setting, runs)
    measured = []
    for position, run in enumerate(runs):
        if len(trials[run]) > 1:
            done = sum(state == DONE for _, state in trials[run])
            found[position] = {"runs": len(trials[run]), "done": done}
            if done == len(trials[run]):
                measured.append(position)
    if not measured:
        return found, {}
    benchmark = split.task.scoring()
    if split.task.primary_metric != benchmark.primary:
        return found, {"unavailable": f"units are kept for {benchmark.primary} only"}
    wanted = [r for position in measured for r, _ in trials[runs[position]]]
    units = dict(
        RunUnits.objects.filter(run_id__in=wanted, metric=benchmark.primary).values_list(
            "run_id", "values"
        )
    )
    scores = dict(Headline.objects.filter(run_id__in=wanted).values_list("run_id", "primary"))
    scored, values = [], []
    for position in measured:
        ids = [r for r, _ in trials[runs[position]]]
        if any(r not in units or scores.get(r) is None for r in ids):
            continue  # scored before units were kept, or an incomplete result
        # float32 as stored (exact for the units' values): ``repeat_statistics`` reads one
        # entry at a time in float64
        arrays = [np.frombuffer(bytes(units[r]), dtype=UNIT_DTYPE) for r in ids]
        if len({len(a) for a in arrays}) == 1:
            scored.append((position, [float(scores[r] or 0.0) for r in ids]))
            values.append(np.vstack(arrays))
    stats = repeat_statistics(
        [given for _, given in scored], values, passing=benchmark.passing_unit
    )
    for (position, _), entry in zip(scored, stats, strict=True):
        found[position] = {
            "runs": entry.runs, "done": entry.runs, "units": entry.units, "mean": entry.mean,
            "low": entry.low, "high": entry.high, "sd": entry.between_sd, "pass_k": entry.pass_k,
        }  # fmt: skip
    about = {
        "confidence": CONFIDENCE,
        "n_boot": DEFAULT_REPEAT_BOOT,
        "passing_unit": benchmark.passing_unit,
        "metric": benchmark.primary,
    }
    return found, about


def shown(repeated: dict[str, Any] | None, primary: Metric) -> str:
    """An entry's repeated runs as its board line says them ("mean of 3 runs 41.0 [37.0,
    45.0], between runs sd 2.0, pass^3 0.33"); "" when it was not repeated."""
    if not repeated:
        return ""
    runs = repeated["runs"]
    if "mean" not in repeated:
        return f"{repeated['done']} of {runs} runs done"
    text = (
        f"mean of {runs} runs {primary.shown(repeated['mean'])} "
        f"[{primary.shown(repeated['low'])}, {primary.shown(repeated['high'])}], "
        f"between runs sd {primary.shown(repeated['sd'])}"
    )
    if repeated["pass_k"] is not None:
        text += f", pass^{runs} {repeated['pass_k']:.2f}"
    return text


def note(about: dict[str, Any]) -> str:
    """What a board says of its repeated entries' statistics (``beside``'s ``about``)."""
    if "unavailable" in about:
        return f"No statistics of repeated runs: {about['unavailable']}."
    passing = about["passing_unit"]
    passed = (
        f"; pass^k: the share of {about['metric']} units that reach {passing:g} in all k runs"
        if passing is not None
        else ""
    )
    return (
        f"Beside an entry run k times: the mean of its k scores with its "
        f"{about['confidence'] * 100:g} % interval ({about['n_boot']:,} bootstrap resamples of "
        "the units' means across the runs: the variance between runs included), the standard "
        f"deviation of the k scores{passed}."
    )
