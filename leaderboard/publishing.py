"""Publishing a challenge: new challenges start as drafts (seen by their organisers only), and
one is published only when its checklist finds nothing wrong:

- it has a task, and every task has a split;
- a task that lets agents search has a search corpus stored;
- a private test split has a reveal time, not before the challenge's last phase ends;
- a task judged by a model: its endpoint answers and serves that model;
- what the task's protocol asks (``Protocol.publish_problems``: M2RAG, a vision judge).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError

from evaluator.judges.openai_judge import OpenAIJudge
from evaluator.protocols import protocol_class
from evaluator.records import EvaluatorError
from leaderboard.models import Challenge, Split, Task
from workers.faults import PodiumFault
from workers.pipeline.bundles import corpus_sha256
from workers.pipeline.judge import task_judge

JUDGE_PROBE_S = 5.0


def publish_problems(challenge: Challenge, has_corpus: bool | None = None) -> list[str]:
    """What stops ``challenge`` from being published, in the organiser's terms; [] when none.
    ``has_corpus``: whether it has a search corpus (None: whether one is stored)."""
    problems: list[str] = []
    tasks = list(challenge.tasks.prefetch_related("splits"))
    if not tasks:
        problems.append("the challenge has no task")
    phase_end = max((p.ends_at for p in challenge.phases.all()), default=None)
    if has_corpus is None:
        has_corpus = corpus_sha256(challenge) is not None
    for task in tasks:
        where = f"task {task.task_id}"
        splits = list(task.splits.all())
        if not splits:
            problems.append(f"{where} has no split: import one")
        searches = [
            name
            for name, on in (("image", task.image_search_enabled), ("web", task.web_search_enabled))
            if on
        ]
        if searches and task.declared().search_corpus and not has_corpus:
            problems.append(
                f"{where} lets agents search ({' and '.join(searches)}) but the challenge has no "
                "search corpus: import one (its admin page, or manage.py import_corpus) or turn "
                "search off"
            )
        for split in splits:
            problems += _split_problems(split, phase_end)
        if problem := _judge_problem(task):
            problems.append(f"{where}: {problem}")
        problems += [f"{where}: {problem}" for problem in _protocol_problems(task)]
    return problems


def _protocol_problems(task: Task) -> list[str]:
    """What the task's protocol, with the task's settings, says stops publishing."""
    try:
        protocol = protocol_class(task.protocol).from_settings(task.settings or {})
    except EvaluatorError as exc:
        return [str(exc)]
    return protocol.publish_problems(task.judge_kind != Task.JudgeKind.RULES)


def _split_problems(split: Split, phase_end) -> list[str]:
    if not split.is_private:
        return []
    where = f"split {split.task.task_id}/{split.kind}"
    if split.reveal_at is None:
        return [f"{where} is a private test without a reveal time: set when results appear"]
    if phase_end is not None and split.reveal_at < phase_end:
        return [
            f"{where} is revealed at {split.reveal_at:%Y-%m-%d %H:%M} UTC, before the last "
            f"phase ends ({phase_end:%Y-%m-%d %H:%M} UTC)"
        ]
    return []


def _judge_problem(task: Task) -> str | None:
    if task.judge_kind == Task.JudgeKind.RULES:
        return None
    try:
        judge = task_judge(task)
    except (PodiumFault, EvaluatorError) as exc:
        return str(exc)
    return judge.probe(JUDGE_PROBE_S) if isinstance(judge, OpenAIJudge) else None


def publish(challenge: Challenge) -> None:
    """Publish ``challenge``, or raise ``ValidationError`` listing what stops it."""
    if problems := publish_problems(challenge):
        raise ValidationError(problems)
    Challenge.objects.filter(pk=challenge.pk).update(is_published=True)
    challenge.is_published = True
