"""The judging stage: stored answers graded by the task's benchmark and judge, through the cache.

Ground truth is read here (and in aggregation) from the split bundle, never by the agent.
Items the judge could not decide (its endpoint down) get no verdict row; the stage reports how
many remain and is run again later, judging only what the cache does not know yet.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import IO

import redis
from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction

from evaluator.benchmarks import benchmark_class
from evaluator.judges import make_judge
from evaluator.judges.base import Judge
from evaluator.judges.rubric import UNJUDGED
from evaluator.judges.transcript import TRANSCRIPT, TranscriptWriter
from evaluator.records import EvaluatorError, Judgment
from evaluator.seam import SomeBenchmark
from evaluator.seam.benchmark import Benchmark, ItemT, PredictionT, SplitT
from leaderboard.judge_choice import RULES, JudgeSpec, judge_spec
from leaderboard.judgment_cache import DjangoJudgmentCache
from leaderboard.models import EvaluationRun, ItemAnswer, ItemVerdict, Task
from leaderboard.pipeline.bundles import split_dir
from leaderboard.pipeline.thumbnails import store_placed_images, store_thumbnails
from podium.monitoring_events import JUDGE_ERRORS, JUDGE_LATENCY, record_many
from workers.faults import PodiumFault
from workers.judge_slots import judge_slots

VERDICT_FIELDS = (
    "verdict",
    "detail",
    "judge_id",
    "prompt_version",
    "prompt_hash",
)


def task_judge(task: Task) -> Judge:
    """The judge a task names: the rules judge, or its OpenAI-compatible endpoint and model."""
    return make_spec_judge(JudgeSpec.of_task(task), task)


def make_spec_judge(spec: JudgeSpec, task: Task, concurrency: int | None = None) -> Judge:
    """The judge ``spec`` names (a task's, or one chosen for a run) on the task's rubric;
    ``concurrency``: the endpoint slots this process holds (``judge_slots``)."""
    rubric = benchmark_class(task.benchmark).rubric
    if spec.kind == RULES:
        return make_judge("rules", rubric)
    return endpoint_judge(task, spec.endpoint, spec.model, spec.revision, concurrency)


def vision_judge(task: Task, concurrency: int | None = None) -> Judge | None:
    """The judge of the task's prompts carrying images: its vision endpoint's model (None when
    the task names no vision endpoint)."""
    if not task.vision_judge_endpoint:
        return None
    return endpoint_judge(task, task.vision_judge_endpoint, concurrency=concurrency)


def endpoint_judge(
    task: Task, name: str, model: str = "", revision: str = "", concurrency: int | None = None
) -> Judge:
    """An OpenAI-compatible judge on the task's rubric at the endpoint called ``name``
    (``PODIUM_JUDGE_ENDPOINTS``): ``model``, else the endpoint's; its key from the variable
    the entry names; ``concurrency``, else the endpoint's limit."""
    endpoint = settings.PODIUM_JUDGE_ENDPOINTS.get(name)
    if endpoint is None:
        raise PodiumFault(f"task {task}: judge endpoint {name!r} is not configured")
    key_env = endpoint.get("api_key_env")
    return make_judge(
        "openai",
        benchmark_class(task.benchmark).rubric,
        base_url=endpoint["base_url"],
        model=model or endpoint.get("model"),
        api_key=os.environ.get(key_env) if key_env else None,
        revision=revision or None,
        concurrency=concurrency or endpoint_limit(name),
    )


def endpoint_limit(name: str) -> int:
    """Requests in flight to endpoint ``name`` from every judge process together."""
    endpoint = settings.PODIUM_JUDGE_ENDPOINTS.get(name) or {}
    return int(endpoint.get("concurrency") or settings.PODIUM_JUDGE_CONCURRENCY)


@contextmanager
def endpoint_slots(names: list[str]) -> Iterator[dict[str, int]]:
    """The slots of each endpoint in ``names`` this process may use while it judges, by name
    (none for the rules judge, which calls no endpoint): every judge process shares each
    endpoint's limit (``workers.judge_slots``). Leased in the names' order, the same in every
    process, so two runs each waiting on the other's endpoint cannot deadlock."""
    if not names:
        yield {}
        return
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        with ExitStack() as stack:
            yield {
                name: stack.enter_context(
                    judge_slots(
                        name, endpoint_limit(name), client, namespace=settings.PODIUM_REDIS_PREFIX
                    )
                )
                for name in sorted(set(names))
            }
    finally:
        client.close()


def judge_for_run(task: Task, spec: JudgeSpec, slots: dict[str, int]) -> Judge:
    """The judge that grades a run of ``task`` with ``spec``, within ``slots``: for a benchmark
    whose prompts carry images, routed with the task's vision judge (``Benchmark.vision_routed``;
    an endpoint serving both shares its slots between them)."""
    text = make_spec_judge(spec, task, slots.get(spec.endpoint))
    vision_name = task.vision_judge_endpoint
    if spec.kind == RULES or not task.declared().image_prompts:
        return text
    if not vision_name:  # a model that sees no image would judge the images
        raise PodiumFault(
            f"task {task}: its judge prompts carry images; it names no vision judge endpoint "
            "(a model that sees them) to judge them with a model"
        )
    if vision_name != spec.endpoint:
        vision = vision_judge(task, slots[vision_name])
    elif spec.model in ("", settings.PODIUM_JUDGE_ENDPOINTS[vision_name].get("model")):
        vision = text  # one endpoint and model for both: one judge, all the slots
    else:  # one endpoint serving two models: its slots shared (each judge at least one)
        taken = slots[vision_name]
        text = make_spec_judge(spec, task, max(1, taken - taken // 2))
        vision = vision_judge(task, max(1, taken // 2))
    assert vision is not None  # the task names its endpoint
    return task.declared().vision_routed(text, vision)


def judged_endpoints(task: Task, spec: JudgeSpec) -> list[str]:
    """The endpoints judging a run of ``task`` with ``spec`` calls."""
    if spec.kind == RULES:
        return []
    vision = task.vision_judge_endpoint if task.declared().image_prompts else ""
    return [spec.endpoint, vision] if vision else [spec.endpoint]


def _store_transcript(run: EvaluationRun, transcript: IO[str]) -> None:
    """The run's judge calls (all of them: cached ones are written as first answered), kept in
    storage in place of an earlier pass's."""
    transcript.seek(0)
    old = run.transcript.name if run.transcript else ""
    run.transcript.save(
        f"run-{run.pk}-{TRANSCRIPT}", ContentFile(transcript.read().encode("utf-8")), save=False
    )
    EvaluationRun.objects.filter(pk=run.pk).update(transcript=run.transcript.name)
    if old and old != run.transcript.name:
        run.transcript.storage.delete(old)


def task_benchmark(task: Task) -> SomeBenchmark:
    """The task's benchmark with its settings; settings it refuses are Podium's fault (the
    admin checks them when they are saved)."""
    try:
        return task.scoring()
    except EvaluatorError as exc:
        raise PodiumFault(f"task {task}: {exc}") from exc


def benchmark_for_run(run: EvaluationRun) -> SomeBenchmark:
    """The benchmark that plans, grades and scores ``run``: its task's, for its setting."""
    try:
        return task_benchmark(run.task).for_setting(run.setting)
    except EvaluatorError as exc:
        raise PodiumFault(f"run #{run.pk}: {exc}") from exc


def judge_stage(run: EvaluationRun) -> int:
    """Grade the run's answers and store the decided verdicts; returns how many are unjudged."""
    task = run.task
    benchmark = benchmark_for_run(run)
    root = split_dir(run.split)
    data = benchmark.load_split(root)
    answers = {answer.item_key: answer for answer in run.answers.all()}
    store_thumbnails(run.split, root, benchmark, data, list(answers.values()))
    unanswered = [key for key in benchmark.split_keys(data) if key not in answers]
    if unanswered:
        raise PodiumFault(
            f"run #{run.pk} reached judging with {len(unanswered)} item(s) without an answer "
            f"row, e.g. {unanswered[0]}"
        )
    predictions = stored_predictions(benchmark, data, answers)
    spec = judge_spec(run)
    with tempfile.TemporaryFile("w+", encoding="utf-8") as transcript:
        graded, judge, _ = grade_answers(spec, task, benchmark, data, predictions, transcript)
        _store_transcript(run, transcript)
    decided = [item for item in graded if benchmark.item_grade(item) != UNJUDGED]
    store_placed_images(run.split, root, benchmark, data, decided, answers)
    with transaction.atomic():
        ItemVerdict.objects.bulk_create(
            [verdict_row(benchmark, answers[benchmark.item_key(item)], item) for item in decided],
            update_conflicts=True,
            unique_fields=["answer"],
            update_fields=list(VERDICT_FIELDS),
            batch_size=1000,
        )
        unjudged = len(graded) - len(decided)
        EvaluationRun.objects.filter(pk=run.pk).update(
            judge_id=judge.judge_id, prompt_version=judge.prompt_version, unjudged_items=unjudged
        )
    return unjudged


def stored_predictions(
    benchmark: Benchmark[SplitT, PredictionT, ItemT], data: SplitT, answers: dict[str, ItemAnswer]
) -> dict[str, PredictionT]:
    """The predictions of the answered items among ``answers`` (by item key), as the benchmark
    reads them back; the other items are graded as unanswered."""
    return {
        key: benchmark.stored_prediction(data, key, answer.response)
        for key, answer in answers.items()
        if answer.outcome == ItemAnswer.Outcome.ANSWERED
    }


def grade_answers(
    spec: JudgeSpec,
    task: Task,
    benchmark: Benchmark[SplitT, PredictionT, ItemT],
    data: SplitT,
    predictions: dict[str, PredictionT],
    transcript: IO[str] | None = None,
) -> tuple[list[ItemT], Judge, int]:
    """Grade ``predictions`` on the split ``data`` with the judge ``spec`` names, through the
    judgment cache (only what it lacks is judged), holding this process's share of the
    endpoints' slots (``judged_endpoints``); every call goes to ``transcript`` when one is
    given. Returns the graded items, the judge (its id and prompt version) and how many model
    calls were made."""
    calls: list[tuple[float, Judgment]] = []
    with endpoint_slots(judged_endpoints(task, spec)) as slots:
        judge = judge_for_run(task, spec, slots)
        judge.on_call = lambda seconds, judgment: calls.append((seconds, judgment))
        try:
            graded = benchmark.grade(
                data,
                predictions,
                judge,
                DjangoJudgmentCache(),
                progress=False,
                transcript=TranscriptWriter(transcript) if transcript is not None else None,
            )
        finally:
            asyncio.run(judge.aclose())
            record_judge_calls(spec.endpoint or spec.kind, calls)
    return graded, judge, len(calls)


def record_judge_calls(judge: str, calls: list[tuple[float, Judgment]]) -> None:
    """Each call's latency, and the calls left undecided as errors, for ``/metrics``."""
    labels = {"judge": judge}
    events = [(JUDGE_LATENCY, seconds, labels) for seconds, _ in calls]
    events += [(JUDGE_ERRORS, 1.0, labels) for _, j in calls if j.verdict == UNJUDGED]
    record_many(events)


def verdict_row(
    benchmark: Benchmark[SplitT, PredictionT, ItemT], answer: ItemAnswer, item: ItemT
) -> ItemVerdict:
    """The stored verdict of a graded item: its grade and the benchmark's row as detail (the
    audit fields come from the row, which every benchmark's table carries)."""
    row = benchmark.to_row(item)
    return ItemVerdict(
        answer=answer,
        verdict=benchmark.item_grade(item),
        detail=row,
        judge_id=row["judge_id"],
        prompt_version=row["prompt_version"],
        prompt_hash=row["prompt_hash"],
    )
