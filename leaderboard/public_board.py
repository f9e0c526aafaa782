"""What a challenge's public-test boards show while a phase runs, so that teams cannot fit
their agents to the public split's items (``docs/public-board.md``); declared by challenge.yaml's
``public_board`` section (``Challenge.freeze_days``, ``Challenge.ladder_threshold``).

- Freeze: in the last ``freeze_days`` days of a phase, the public-test boards rank only runs of
  submissions made before the cutoff (the phase's end less those days), and a team sees no
  public-test score, verdict or answer of its submissions made since (``withholds``, asked by
  ``permissions.can_see_score`` / ``can_see_answers``) until the phase ends. The freeze is kept
  in the board's statistics (``Rules.statistics``); a page finding it out of date
  (``stale``: the freeze began or ended since the board was ranked) ranks the board again
  (``board_cache.current``), which gives the split a new ``results_version``.
- Ladder (Blum and Hardt, 2015; ``evaluator.ladder``): each team's runs on a public test are
  walked in submission order and only its released score R is published: the board ranks teams
  by R (``RankedBoard.released``), its entries carry R and nothing else of their scores
  (``Entry.released_only``), and a run shows "published: R" (``published``), never its raw
  score: the raw score, slices, intervals, comparisons and per-item verdicts are the organisers'.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from evaluator import ladder
from leaderboard import ranking
from leaderboard.models import Challenge, EvaluationRun, RankedBoard, Split


@dataclass(frozen=True)
class Freeze:
    """A public board frozen ``since`` the cutoff ``until`` the phase's end."""

    since: datetime
    until: datetime

    def record(self) -> dict[str, str]:
        return {"since": self.since.isoformat(), "until": self.until.isoformat()}


@dataclass(frozen=True)
class Rules:
    """What applies to a split's board now: a freeze (None: none) and the Ladder's threshold
    (None: every score is published)."""

    freeze: Freeze | None = None
    threshold: float | None = None

    @property
    def before(self) -> datetime | None:
        """Only submissions made before this count on the board (None: every one)."""
        return self.freeze.since if self.freeze else None

    def statistics(self) -> dict[str, Any]:
        """What the board's statistics say of these rules (pages, the API and exports)."""
        found: dict[str, Any] = {}
        if self.freeze:
            found["frozen"] = self.freeze.record()
        if self.threshold is not None:
            found["ladder"] = {"threshold": self.threshold}
        return found


def freeze_of(challenge: Challenge, now: datetime | None = None) -> Freeze | None:
    """The freeze of ``challenge``'s public boards at ``now``: in the last ``freeze_days`` days
    of a phase; None outside them, or when the challenge never freezes."""
    if challenge.freeze_days is None:
        return None
    now = now or timezone.now()
    span = timedelta(days=challenge.freeze_days)
    for phase in challenge.phases.all():
        if phase.ends_at - span <= now < phase.ends_at:
            return Freeze(max(phase.ends_at - span, phase.starts_at), phase.ends_at)
    return None


def rules(split: Split, now: datetime | None = None) -> Rules:
    """What applies to ``split``'s board at ``now``: nothing off the public test."""
    if split.kind != Split.Kind.PUBLIC_TEST:
        return Rules()
    challenge = split.task.challenge
    threshold = challenge.ladder_threshold if ranking.laddered(split) else None
    return Rules(freeze_of(challenge, now), threshold)


def withholds(run: EvaluationRun, now: datetime | None = None, public: Rules | None = None) -> bool:
    """Whether a team (anyone but organisers) reads nothing raw of ``run``'s scores: a run of a
    submission made since a freeze's cutoff, or any run on a laddered public test (``public``:
    the rules of its split now, when the caller has them)."""
    public = public or rules(run.split, now)
    if public.threshold is not None:
        return True
    return public.before is not None and run.submission.created_at >= public.before


@dataclass(frozen=True)
class Published:
    """What a team reads of a run under the public board's rules: the score the Ladder
    published after it (None: none yet) and whether the run raised it; or, during a freeze,
    only when its score appears (``withheld_until``)."""

    released: float | None
    improved: bool
    withheld_until: datetime | None = None


def published(run: EvaluationRun, now: datetime | None = None) -> Published | None:
    """``run``'s published score on a public test under the Ladder or a freeze; None where its
    own score is shown as it is (``withholds`` is False) or it is not done."""
    if run.state != EvaluationRun.State.DONE or not withholds(run, now):
        return None
    public = rules(run.split, now)
    if public.before is not None and run.submission.created_at >= public.before:
        return Published(None, False, public.freeze.until if public.freeze else None)
    threshold = public.threshold
    assert threshold is not None  # withheld and not frozen: laddered
    rows = ranking.team_runs(run.split, run.setting, run.submission, public.before)
    steps = ladder.walk([score for _, score in rows], threshold, ranking.descending(run.task))
    for (run_id, _), step in zip(rows, steps, strict=True):
        if run_id == run.pk:
            return Published(step.released, step.improved)
    return Published(None, False)  # hidden or disqualified: off the board


@dataclass(frozen=True)
class Laddered:
    """A laddered board: its entries' runs (each team's run that released its score) in the
    board's order, their ranks by the released scores, the scores, the judges behind them."""

    runs: list[int]
    ranks: list[int | None]
    released: list[float | None]
    judges: list[str]


def laddered(split: Split, setting: str, public: Rules) -> Laddered:
    """``split``'s board in ``setting`` under the Ladder: each team's (each baseline's) runs
    walked in submission order, the team ranked by its released score; equal scores by the
    task's tie rule (``ranking.ranks``)."""
    assert public.threshold is not None
    task = split.task
    descending = ranking.descending(task)
    walks: dict[tuple[int, int], list[tuple[int, float | None, bool, str]]] = {}
    for run_id, team_id, submission_id, baseline, score, judge in ranking.walked_rows(
        split, setting, public.before
    ):
        group = (team_id, submission_id if baseline else 0)
        walks.setdefault(group, []).append((run_id, score, baseline, judge))
    lines: list[tuple[int, float | None, bool, str]] = []
    for rows in walks.values():
        steps = ladder.walk([row[1] for row in rows], public.threshold, descending)
        last = max((i for i, s in enumerate(steps) if s.improved), default=len(rows) - 1)
        run_id, _, baseline, judge = rows[last]
        lines.append((run_id, steps[last].released, baseline, judge))
    lines.sort(key=lambda line: line[0])  # the earlier run first among equal scores
    order = ranking.by_score([line[1] for line in lines], descending)
    lines = [lines[i] for i in order]
    shared = task.tie_rule == task.TieRule.SHARED
    return Laddered(
        runs=[line[0] for line in lines],
        ranks=ranking.ranks(((line[1], line[2]) for line in lines), shared),
        released=[line[1] for line in lines],
        judges=sorted({line[3] for line in lines if line[3]}),
    )


def stale(split: Split, now: datetime | None = None) -> bool:
    """Whether ``split``'s stored boards were ranked under another freeze than the one of
    ``now`` (it began or ended since): then they must be ranked again."""
    if split.kind != Split.Kind.PUBLIC_TEST or split.task.challenge.freeze_days is None:
        return False  # a challenge that stops freezing ranks its boards again as it is saved
    stored = RankedBoard.objects.filter(split=split).values_list("statistics", flat=True)[:1]
    if not stored:
        return False  # ranked at its first read
    freeze = freeze_of(split.task.challenge, now)
    frozen: object = stored[0].get("frozen")
    return frozen != (freeze.record() if freeze else None)
