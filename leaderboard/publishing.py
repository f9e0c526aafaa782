"""Publishing a challenge: new challenges start as drafts (seen by their organisers only), and
one is published only when its checklist finds nothing wrong:

- it has a task, and every task has a split;
- a task that lets agents search has a search corpus stored;
- a private test split has a reveal time, not before the challenge's last phase ends;
- a task judged by a model: its endpoint answers and serves that model; when some of its
  prompts carry images (``Benchmark.image_prompts``: M2RAG), its vision judge endpoint too.
"""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError

from evaluator.judges.openai_judge import OpenAIJudge
from evaluator.records import EvaluatorError
from leaderboard.models import Challenge, Split, Task, current_splits
from leaderboard.pipeline.bundles import corpus_sha256
from leaderboard.pipeline.judge import task_judge, vision_judge
from workers.faults import PodiumFault

JUDGE_PROBE_S = 5.0


def publish_problems(challenge: Challenge, has_corpus: bool | None = None) -> list[str]:
    """What stops ``challenge`` from being published, in the organiser's terms; [] when none.
    ``has_corpus``: whether it has a search corpus (None: whether one is stored)."""
    problems: list[str] = []
    tasks = list(challenge.tasks.prefetch_related(current_splits()))
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
        try:
            task.scoring()
        except EvaluatorError as exc:
            problems.append(f"{where}: {exc}")
        problems += [f"{where}: {problem}" for problem in _judge_problems(task)]
    return problems


def _split_problems(split: Split, phase_end: datetime | None) -> list[str]:
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


def _judge_problems(task: Task) -> list[str]:
    """The task's judge (and vision judge) endpoints: configured, answering, serving the
    model; none for the rules judge, which calls no endpoint."""
    if task.judge_kind == Task.JudgeKind.RULES:
        return []
    problems = []
    try:
        judge = task_judge(task)
    except (PodiumFault, EvaluatorError) as exc:
        problems.append(str(exc))
    else:
        if isinstance(judge, OpenAIJudge) and (problem := judge.probe(JUDGE_PROBE_S)):
            problems.append(problem)
    if task.declared().image_prompts:
        problems += _vision_problems(task)
    return problems


def _vision_problems(task: Task) -> list[str]:
    if not task.vision_judge_endpoint:
        return [
            f"{task.declared().title} judges placed images with a model that sees them: choose "
            "the task's vision judge endpoint (a name in PODIUM_JUDGE_ENDPOINTS whose model "
            "sees images, e.g. a vision-language model served by vLLM)"
        ]
    if problem := task.vision_endpoint_problem():
        return [f"the vision judge: {problem}"]
    try:
        vision = vision_judge(task)
    except (PodiumFault, EvaluatorError) as exc:
        return [f"the vision judge: {exc}"]
    problem = vision.probe(JUDGE_PROBE_S) if isinstance(vision, OpenAIJudge) else None
    return [f"the vision judge: {problem}"] if problem else []


def publish(challenge: Challenge) -> None:
    """Publish ``challenge``, or raise ``ValidationError`` listing what stops it."""
    if problems := publish_problems(challenge):
        raise ValidationError(problems)
    Challenge.objects.filter(pk=challenge.pk).update(is_published=True)
    challenge.is_published = True
