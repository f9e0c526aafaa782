"""The running stage: the agent answers the run's items; each answer is stored on arrival.

A re-delivered or re-queued run resumes: the answers already stored are passed to the runner
as ``answered`` and never asked again. The sink (``leaderboard.pipeline.answers``) stores them
while the agent answers the next batch and writes progress (heartbeats from the stage task's
thread cover start-up and long batches); when the run was taken away meanwhile (re-queued,
cancelled) the sink stops the run.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connections

from evaluator.records import EvaluatorError
from leaderboard.models import EvaluationRun, Submission, Task
from leaderboard.models.challenge import RUN_LIMITS
from leaderboard.pipeline.answers import AnswerSink
from leaderboard.pipeline.build import (
    docker_client,
    engine_client,
    engine_is_fake,
    fake_submission_image,
    submission_image,
)
from leaderboard.pipeline.bundles import corpus_dir, split_dir
from leaderboard.pipeline.judge import benchmark_for_run
from leaderboard.pipeline.node import site
from leaderboard.pipeline.ownership import beat_if_mine, hand_over, worker_id
from workers.agent_container import AgentContainer, StartContainer
from workers.fake_engine import FakeContainer
from workers.faults import PodiumFault
from workers.images import AgentImage, ImageError
from workers.limits import ErrorPolicy, Limits, TimeoutPolicy
from workers.model_store import ModelStoreError, stored
from workers.outcomes import RunReport
from workers.runner import run_agent
from workers.runtimes import check as agent_runtime
from workers.sandbox import SandboxPolicy, owner_labels

if TYPE_CHECKING:  # faiss: imported only when searching
    from workers.search.process import SearchProcess

State = EvaluationRun.State
AGENT_TEXT_SHOWN = 200  # characters of the agent's own words in a public split's failure reason
OPERATOR_DETAIL_CHARS = 200_000  # beyond this, the operator detail leaves out the item list
TIMEOUT_POLICIES: dict[str, TimeoutPolicy] = {
    Task.TimeoutPolicy.MISSING: "missing",
    Task.TimeoutPolicy.FAIL_RUN: "fail",
}
ERROR_POLICIES: dict[str, ErrorPolicy] = {
    Task.ErrorPolicy.CONTINUE: "continue",
    Task.ErrorPolicy.ABORT: "abort",
}


def agent_policy(submission: Submission, task: Task) -> SandboxPolicy:
    """The sandbox of ``submission``'s agent on this worker: its models, this worker's GPUs
    (``PODIUM_AGENT_GPUS``; none on a CPU worker), the task's runtime (else, with GPUs,
    ``PODIUM_GPU_RUNTIME``; else Podium's default: ``workers.runtimes``), and labels naming who
    runs it (the node's janitor reads them: ``leaderboard/pipeline/node.py``)."""
    gpus = settings.PODIUM_AGENT_GPUS or None
    runtime = task.agent_runtime or (settings.PODIUM_GPU_RUNTIME if gpus else "")
    return SandboxPolicy(
        models=model_folders(submission),
        gpus=gpus,
        runtime=agent_runtime(runtime) if runtime else None,
        labels=owner_labels(site(), settings.PODIUM_NODE_ID, worker_id()),
    )


def limits_for(task: Task) -> Limits:
    """The runner's limits of ``task``'s runs: its ``RUN_LIMITS`` as they are, its policies in
    the runner's words."""
    return Limits(
        **{name: getattr(task, name) for name in RUN_LIMITS},
        timeout_policy=TIMEOUT_POLICIES[task.timeout_policy],
        error_policy=ERROR_POLICIES[task.error_policy],
    )


def model_folders(submission: Submission) -> tuple[Path, ...]:
    """This node's model store folders of the models ``submission`` declared; one missing is
    the organiser's to register here (``manage.py register_model``), not the team's fault."""
    try:
        return tuple(
            stored(settings.PODIUM_MODEL_STORE, model["hub_id"], model["revision"])
            for model in submission.declared_models
        )
    except ModelStoreError as exc:
        raise PodiumFault(f"submission #{submission.pk}: {exc}") from None


_search_processes: dict[str, SearchProcess] = {}
_search_lock = threading.Lock()


def search_process(task: Task) -> SearchProcess | None:
    """The search process over the challenge's corpus (``workers.search.process``; for a
    benchmark that searches items' candidates, one with no corpus), kept per worker process and
    started again if it stopped; None when the task enables no search (or its benchmark has
    none)."""
    benchmark = task.declared()
    if not (task.image_search_enabled or task.web_search_enabled) or not benchmark.searches:
        return None
    directory = corpus_dir(task.challenge) if benchmark.search_corpus else None
    if directory is None and benchmark.search_corpus:
        raise PodiumFault(
            f"task {task}: search is enabled but challenge {task.challenge.slug!r} has no "
            "search corpus stored (leaderboard.pipeline.bundles.store_corpus)"
        )
    from workers.search.engine import SearchEngine  # faiss: only when searching
    from workers.search.process import SearchProcess

    key = directory.name if directory is not None else ""
    with _search_lock:
        process = _search_processes.get(key)
        if process is None or not process.alive:
            if process is not None:
                process.close()
            engine = SearchEngine(directory)
            process = _search_processes[key] = SearchProcess(
                engine.spec, settings.PODIUM_SEARCH_LIMITS
            )
        return process


def log_sink(run: EvaluationRun) -> Callable[[str], None]:
    """Where the agent's output goes while it runs (from the runner's thread): the run's
    ``agent_log``, while the run is still this worker's; that thread's database connection is
    closed after each write."""

    def store(text: str) -> None:
        try:
            EvaluationRun.objects.filter(
                pk=run.pk, state=State.RUNNING, worker_id=worker_id()
            ).update(agent_log=text)
        finally:
            connections.close_all()

    return store


def team_reason(report: RunReport, *, public: bool) -> str:
    """The failure reason a team reads: Podium's words; on a public split, what the agent said
    behind it too, quoted, capped and marked as the agent's. On a private split the agent's
    words never reach the team (they could carry the split's queries): organisers see them in
    the operator detail."""
    reason = report.failure_reason or "the run failed"
    said = report.agent_text
    if not said:
        return reason
    if not public:
        return f"{reason} (what the agent sent is not shown for a private split)"
    excerpt = json.dumps(said[:AGENT_TEXT_SHOWN], ensure_ascii=True)
    more = (
        f", first {AGENT_TEXT_SHOWN} of {len(said)} characters"
        if len(said) > AGENT_TEXT_SHOWN
        else ""
    )
    return f"{reason}; the agent sent (quoted{more}): {excerpt}"


def operator_detail(report: RunReport) -> str:
    """What organisers read about a failed run, as JSON: the reason and everything the agent
    said behind it first (``agent_text``, capped at the source), then the rest of the report
    but the agent's output (kept apart, in ``agent_log``). The per-item list, last, is left out
    when the detail would pass ``OPERATOR_DETAIL_CHARS`` (the items' answers are stored anyway);
    the detail is never cut, so the agent's text is always there in full."""
    data = report.to_dict()
    del data["agent_log"]
    detail = {"failure_reason": data.pop("failure_reason"), "agent_text": data.pop("agent_text")}
    text = json.dumps(detail | data)  # ASCII: whatever the agent sent, PostgreSQL stores it
    if len(text) <= OPERATOR_DETAIL_CHARS:
        return text
    data["items_left_out"] = len(data.pop("items"))
    return json.dumps(detail | data)


@contextmanager
def agent_engine(
    submission: Submission, policy: SandboxPolicy
) -> Iterator[tuple[AgentImage, StartContainer, SandboxPolicy]]:
    """The submission's image on this node's engine, how its agent is started there and its
    sandbox with the runtime chosen on that engine (``SandboxPolicy.settled``: ``RuntimeMissing``
    when the engine lacks the one named); with ``PODIUM_AGENT_ENGINE=fake`` (benches only:
    ``workers.fake_engine``), no engine at all."""
    if engine_is_fake():
        yield fake_submission_image(submission), FakeContainer, policy
        return
    with engine_client() as client:
        try:
            image = submission_image(submission, client)
        except ImageError as exc:
            raise PodiumFault(
                f"the submission's image is gone and cannot be reloaded: {exc}"
            ) from exc
        settled = policy.settled(client)  # before anything starts
        yield image, functools.partial(AgentContainer, client), settled


def run_stage(run: EvaluationRun) -> None:
    """Stage ``running``: answer every item not answered yet, then hand over to judging."""
    task = run.task
    benchmark = benchmark_for_run(run)
    data = benchmark.load_split(split_dir(run.split))
    answered = dict(run.answers.values_list("item_key", "response"))
    try:
        plan = benchmark.agent_plan(data, task.task_id, answered)
    except (EvaluatorError, ValueError) as exc:
        raise PodiumFault(f"task {task}: {exc}") from exc
    EvaluationRun.objects.filter(pk=run.pk).update(
        items_total=len(plan.keys()), items_done=len(answered)
    )
    search = search_process(task)
    sink = AnswerSink(run, len(answered))
    try:
        policy = agent_policy(run.submission, task)
        with agent_engine(run.submission, policy) as (image, start_container, policy):
            EvaluationRun.objects.filter(pk=run.pk).update(runtime=policy.runtime or "")
            report = run_agent(
                image,
                plan,
                task.task_id,
                limits_for(task),
                sink,
                search=search,
                answered=answered,
                policy=policy,
                on_output=log_sink(run),
                start_container=start_container,
            )
    finally:
        sink.close()  # the last batch's answers stored before anything reads them
    beat_if_mine(run, run.answers.count())
    run.agent_log = report.agent_log
    EvaluationRun.objects.filter(pk=run.pk).update(agent_log=report.agent_log)
    if report.status != "completed":
        if not engine_is_fake():  # an engine that went away is retried, not the team's failure
            docker_client().close()
        run.move_to(
            State.FAILED,
            failure_reason=team_reason(report, public=not run.split.is_private),
            operator_detail=operator_detail(report),
        )
        return
    hand_over(run, State.JUDGING)
