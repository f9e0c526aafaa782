"""The scoring stage: slice scores and paired comparisons, computed once and stored.

The graded turns are rebuilt from the stored answers and verdicts (plus the split's labels and
ground truth), so every number on a page traces back to those rows. Each finished run is
compared with the other current entries of its split; pages only read the stored results.
"""

from __future__ import annotations

import logging

from django.db import transaction

from evaluator.protocols.crag_mm.compare import compare_runs
from evaluator.protocols.crag_mm.metrics import score_turns
from evaluator.records import EvaluatorError, GradedTurn, Verdict
from evaluator.records import Split as SplitData
from leaderboard.models import EvaluationRun, TurnAnswer
from leaderboard.ranking import entries
from leaderboard.scores import store_comparison, store_scores
from workers.faults import PodiumFault
from workers.pipeline.bundles import split_data
from workers.pipeline.run import truncator

logger = logging.getLogger("podium.pipeline")
State = EvaluationRun.State


def graded_turns(run: EvaluationRun, data: SplitData) -> list[GradedTurn]:
    """The run's graded turns, in split order, from its answer and verdict rows."""
    rows = {
        answer.interaction_id: answer
        for answer in TurnAnswer.objects.filter(run=run).select_related("verdict")
    }
    graded = []
    cut = truncator().truncate
    for conversation, turn_idx, turn in data.turns():
        answer = rows.get(turn.interaction_id)
        verdict = getattr(answer, "verdict", None) if answer is not None else None
        if verdict is None:
            raise PodiumFault(f"run #{run.pk}: turn {turn.interaction_id} has no verdict")
        answered = answer.outcome == TurnAnswer.Outcome.ANSWERED
        graded.append(
            GradedTurn(
                session_id=conversation.session_id,
                interaction_id=turn.interaction_id,
                turn_idx=turn_idx,
                is_ego=conversation.is_ego,
                labels=dict(turn.labels),
                query=turn.query,
                ground_truth=turn.ground_truth,
                agent_response=cut(answer.response) if answered else "",
                is_exact_match=verdict.is_exact_match,
                is_miss=verdict.is_miss,
                verdict=Verdict(verdict.verdict),
                judge_id=verdict.judge_id,
                prompt_version=verdict.prompt_version,
                prompt_hash=verdict.prompt_hash,
            )
        )
    return graded


def aggregate_stage(run: EvaluationRun) -> None:
    """Stage ``scoring``: store slice scores and comparisons, then the run is done."""
    counting = run.task.counting
    data = split_data(run.split)
    graded = graded_turns(run, data)
    scores = score_turns(graded, counting=counting)
    other_ids = [entry.run_id for entry in entries(run.split) if entry.run_id != run.pk]
    others = EvaluationRun.objects.filter(pk__in=other_ids).order_by("pk")
    comparisons = []
    for other in others:
        try:
            comparisons.append((other, compare_runs(graded, graded_turns(other, data), counting)))
        except (EvaluatorError, PodiumFault) as exc:
            logger.warning("run #%s vs run #%s: no comparison: %s", run.pk, other.pk, exc)
    with transaction.atomic():
        store_scores(run, scores)
        for other, result in comparisons:
            store_comparison(run, other, result)
        run.move_to(State.DONE)
