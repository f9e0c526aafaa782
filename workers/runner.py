"""Run one agent image on one run's items: sandboxed, in the benchmark's order, under limits.

What the items are, their order, their requests and how a reply is stored comes from the
benchmark's plan (``evaluator.seam.agent_plan.AgentPlan``: CRAG-MM's turns in the official
order with their histories, Visual-RAG's queries of one setting). ``run_agent`` starts the
container, waits for ``/ready``, then sends the plan's batches with a deadline of
``per_item_s`` x the agent's batch size (its ``get_batch_size()`` as clipped, the official
rule: a short last batch gets the same time as a full one). Every batch's results go to
``sink`` the moment they arrive (one call per batch, so a sink can store them in one write),
so an interrupted run resumes from ``answered`` without asking anything twice. Defined outcomes:

- a batch past its deadline: its items are recorded as ``timeout`` (empty response, scored
  missing), or the run fails when ``timeout_policy`` is "fail";
- ``max_consecutive_timeouts`` timed-out batches in a row, or a crash: a fresh container, and
  the run resumes at the first unanswered item; more than ``max_restarts`` restarts fail the run;
- the agent raised (HTTP 5xx from ``/batch``): the items are recorded as ``error``, or the run
  fails when ``error_policy`` is "abort" (as the official evaluation);
- a reply that breaks the benchmark's schema for one item: that item is ``invalid`` (no answer),
  the rest of the batch and the run go on;
- the image directory full (only while the agent holds batches unanswered, after a time-out):
  a fresh container;
- out of memory, load failure, readiness time-out, protocol errors, total wall time: the run
  fails with a reason the participant can read (never a query or answer from the split).

Images go to the agent as files (``workers/image_volume.py``): while the agent answers one
batch (from halfway through the time the batch before took), a thread of this process reads
the next batch's images and writes them to a directory of the container's image volume that
the agent cannot open yet; sending that batch first opens it to the agent (and closes the one
before). The container is always removed at the end.
Ground truth never leaves this process.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

import docker

from evaluator.seam.agent_plan import AgentPlan, BatchRefused, Reply, RequestContext
from workers.agent_client import (
    AgentTimeout,
    AgentUnavailable,
    ProtocolError,
    Readiness,
    batch_responses,
    encode_batch,
    reply_text,
)
from workers.agent_container import (
    AgentBox,
    AgentContainer,
    AgentCrashed,
    ContainerState,
    StartContainer,
    keep_output_tail,
)
from workers.image_volume import ImageDirFull, ImageFile, Stager, read_image
from workers.images import AgentImage, local_image
from workers.limits import Limits
from workers.outcomes import ItemOutcome, ItemResult, Outcome, RunFailed, RunReport
from workers.output_watch import OutputWatch
from workers.sandbox import SandboxPolicy

if TYPE_CHECKING:  # faiss and encoders: imported by whoever starts a search process
    from workers.search.process import SearchProcess

Sink = Callable[[list[ItemResult]], None]  # one batch's results, in the batch's order
BUSY_STATUSES = (409, 503)  # the agent is still on an earlier (timed-out) batch
BUSY_RETRY_S = 0.02
PROTOCOL_STATUSES = (400, 404, 405, 411, 413)  # the agent does not speak the protocol
READ_CACHE_IMAGES = 512  # images kept read (a CRAG-MM batch has 16; a candidate pool, hundreds)


class _Restart(Exception):
    """The container must be replaced; the message says why (for the crash-loop reason)."""


class _Run:
    def __init__(
        self,
        start_container: StartContainer,
        image: AgentImage,
        plan: AgentPlan[Any],
        task: str,
        limits: Limits,
        sink: Sink,
        *,
        search: SearchProcess | None,
        answered: Mapping[str, str],
        policy: SandboxPolicy,
        on_output: Callable[[str], None] | None = None,
    ) -> None:
        self.start_container = start_container
        self.on_output = on_output
        self.image = image
        self.plan = plan
        self.task = task
        self.limits = limits
        self.sink = sink
        self.search = search
        self.policy = policy
        self.run_id = uuid.uuid4().hex[:12]
        known = set(plan.keys())
        self.answered = {k: v for k, v in answered.items() if k in known}
        self.started = time.monotonic()
        self.report = RunReport(
            status="failed",
            failure_reason=None,
            image=image.ref,
            image_digest=image.digest,
            task=task,
            runtime=policy.runtime or "",
            resumed_items=len(self.answered),
        )
        self.batches: Any = None
        self.pending: list[Any] | None = None  # a batch to send (again) after a restart
        self.upcoming: list[Any] | None = None  # the batch after the one being sent
        self.stager = Stager(self._image_files)
        self.batch_number = 0
        self.last_latency_s = 0.0  # of the last batch the agent answered
        # Recently read images, for the later turns of their conversations, a candidate pool
        # shared by the next queries (and a restart's fresh image volume).
        self.read_image = functools.lru_cache(maxsize=READ_CACHE_IMAGES)(read_image)
        self.image_dir_bytes = plan.volume_bytes(limits.max_batch_size)

    # -- the run ---------------------------------------------------------------------------

    def execute(self) -> RunReport:
        with _earlier_objects_frozen():
            return self._execute()

    def _execute(self) -> RunReport:
        try:
            self._embed_candidates()
            while True:
                try:
                    self._attempt()
                    self.report.status = "completed"
                    break
                except _Restart as why:
                    self.report.restarts += 1
                    if self.report.restarts > self.limits.max_restarts:
                        raise RunFailed(
                            f"crash loop: the agent needed a restart {self.report.restarts} "
                            f"times, more than the {self.limits.max_restarts} allowed (last: {why})"
                        ) from None
        except RunFailed as failure:
            self.report.failure_reason = str(failure)
            self.report.agent_text = failure.agent_text
        finally:
            self.stager.close()
            self.report.total_s = time.monotonic() - self.started
        return self.report

    def _embed_candidates(self) -> None:
        """Have the search process embed every image the run's items may search among, before
        the agent starts: no search then waits for it (from its disk cache after a first run)."""
        if self.search is None:
            return
        files = {
            str(path)
            for batch in self.plan.batches(1, self.answered)
            for ref in batch
            for _, path in self.plan.candidates(ref)
        }
        if files:
            self.search.embed_candidates(sorted(files))

    def _attempt(self) -> None:
        box = self.start_container(
            self.image.image_id,
            self.task,
            self.policy,
            image_dir_bytes=self.image_dir_bytes,
            search=self.search,
            run_id=self.run_id,
        )
        try:
            self._attempt_in(box)
        finally:  # the container is gone now; its output was kept on the way out
            self.report.agent_log = keep_output_tail(self.report.agent_log, box.output)

    def _attempt_in(self, box: AgentBox) -> None:
        started = time.monotonic()
        with box, self._watch(box):
            try:
                self._batches_in(box, started)
            finally:  # the stager must be done with this container's image volume before it goes
                self.stager.settle()

    def _watch(self, box: AgentBox) -> contextlib.AbstractContextManager[Any]:
        """The output so far (earlier containers' and this one's), shared while it runs."""
        on_output = self.on_output
        if on_output is None:
            return contextlib.nullcontext()
        return OutputWatch(
            box, lambda live: on_output(keep_output_tail(self.report.agent_log, live))
        )

    def _batches_in(self, box: AgentBox, started: float) -> None:
        if self.batches is None:  # the first batch's images are read while the agent loads
            first = next(self.plan.batches(self.limits.max_batch_size, self.answered), [])
            self.stager.read_ahead(first)
        readiness = self._wait_ready(box, started)
        if self.batches is None:
            self.report.batch_size = self.limits.batch_size(readiness.batch_size)
            self.report.kit = readiness.kit
            self.batches = self.plan.batches(self.report.batch_size, self.answered)
        consecutive_timeouts = 0
        while True:
            batch = self.pending or self._next_batch()
            if batch is None:
                return
            self.pending = batch
            if consecutive_timeouts >= self.limits.max_consecutive_timeouts:
                # Only now, with a batch still to send, is a fresh container worth it.
                raise _Restart(f"{consecutive_timeouts} batches in a row timed out")
            outcome = self._send(box, batch, readiness.kit)
            self.pending = None
            consecutive_timeouts = consecutive_timeouts + 1 if outcome == "timeout" else 0

    def _wait_ready(self, box: AgentBox, started: float) -> Readiness:
        """``started``: when this container's creation began (start-up counts from there)."""
        deadline = started + self.limits.readiness_s
        total = self._total_deadline()
        try:
            readiness = box.wait_ready(min(deadline, total) if total else deadline)
        except AgentCrashed as crash:
            self._crashed(box, crash.state)
        except TimeoutError:
            if total and time.monotonic() >= total:
                raise RunFailed(self._wall_reason()) from None
            raise RunFailed(
                f"the agent was not ready within {self.limits.readiness_s:.0f} s"
            ) from None
        except ProtocolError as exc:
            raise RunFailed(f"protocol error: {exc}", exc.agent_text) from None
        if self.report.start_to_ready_s is None:
            self.report.start_to_ready_s = time.monotonic() - started
        return readiness

    def _send(self, box: AgentBox, batch: list[Any], kit: str | None) -> Outcome:
        """One batch call; records its items and says how it went."""
        assert box.agent is not None
        deadline_s = self.limits.batch_deadline_s(self.report.batch_size or len(batch))
        total = self._total_deadline()
        if total and total - time.monotonic() < deadline_s:
            deadline_s = total - time.monotonic()
            if deadline_s <= 0:
                raise RunFailed(self._wall_reason())
        assert box.images is not None
        try:
            image_paths = self.stager.show(box.images, batch)
        except ImageDirFull as full:
            raise _Restart(str(full)) from None
        self.batch_number += 1
        if box.search_handle is not None:
            box.search_handle.allow(
                self.limits.searches_per_item * len(batch),
                {
                    self.plan.key(ref): [(image, str(path)) for image, path in candidates]
                    for ref in batch
                    if (candidates := self.plan.candidates(ref))
                },
            )
        fields = self.plan.requests(batch, image_paths, self._context(kit))
        body = encode_batch(str(self.batch_number), deadline_s, fields)
        # The next batch's images are staged while the agent works: not while this request is
        # built and written (the two would compete for the GIL), and not while the agent reads
        # this batch's images (for the CPU), so halfway through the time the last batch took.
        stage_next = None
        if self.upcoming is not None:
            stage_next = functools.partial(
                self.stager.stage_ahead, box.images, self.upcoming, self.last_latency_s / 2
            )
        started = time.monotonic()
        try:
            reply = box.agent.batch(body, deadline_s, stage_next)
            # 409/503: still busy with a batch that timed out; retry within this deadline.
            while reply.status in BUSY_STATUSES:
                time.sleep(BUSY_RETRY_S)
                reply = box.agent.batch(body, started + deadline_s - time.monotonic())
        except AgentTimeout:
            self._check_search(box)
            if total and time.monotonic() >= total:
                raise RunFailed(self._wall_reason()) from None
            if self.limits.timeout_policy == "fail":
                raise RunFailed(
                    f"a batch of {len(batch)} items took longer than its {deadline_s:.1f} s "
                    "deadline (this task fails a run on any time-out)"
                ) from None
            self._record(batch, [Reply("")] * len(batch), "timeout", time.monotonic() - started)
            return "timeout"
        except AgentUnavailable:
            self._crashed(box, box.settled_state())
        except ProtocolError as exc:
            raise RunFailed(f"protocol error: {exc}", exc.agent_text) from None
        latency = self.last_latency_s = time.monotonic() - started
        self._check_search(box)
        if reply.status in PROTOCOL_STATUSES:
            reason = f"protocol error: /batch answered HTTP {reply.status}"
            raise RunFailed(reason, reply_text(reply.body))
        box.images.answered()  # agentkit read this batch: it let go of the ones before
        if reply.status != 200:
            if self.limits.error_policy == "abort":
                raise RunFailed(
                    f"the agent failed on a batch (HTTP {reply.status}); this task ends a run "
                    "on the agent's first error, as the official evaluation",
                    reply_text(reply.body),
                )
            self._record(batch, [Reply("")] * len(batch), "error", latency)
            return "error"
        try:
            responses = batch_responses(reply.body, len(batch), str(self.batch_number))
            replies = self.plan.read_replies(batch, responses, self.limits.answer_cap_bytes)
        except ProtocolError as exc:
            raise RunFailed(f"protocol error: {exc}", exc.agent_text) from None
        except BatchRefused as exc:
            raise RunFailed(f"protocol error: {exc}", reply_text(reply.body)) from None
        self._record(batch, replies, "answered", latency)
        return "answered"

    # -- pieces ----------------------------------------------------------------------------

    @staticmethod
    def _check_search(box: AgentBox) -> None:
        """A search process that stopped during the batch failed its searches on Podium's
        side: ``SearchUnavailable`` (from its control pipe, closed the moment it dies) before
        the batch is recorded, so that the batch is asked again."""
        if box.search_handle is not None:
            box.search_handle.process.call({"op": "ping"})

    def _next_batch(self) -> list[Any] | None:
        """The next batch in order. The one after it is known already (the order never depends
        on answers, only the histories do): ``_send`` has its images staged while the agent
        works."""
        batch = self.upcoming if self.upcoming is not None else next(self.batches, None)
        self.upcoming = next(self.batches, None) if batch is not None else None
        return batch

    def _image_files(self, ref: Any) -> list[ImageFile]:
        return [self.read_image(path) for path in self.plan.image_files(ref)]

    def _context(self, kit: str | None) -> RequestContext:
        search, task = self.search, self.task
        if search is None:
            return RequestContext(kit)
        return RequestContext(
            kit, lambda query, image: search.rag_context(query, str(image) if image else None, task)
        )

    def _record(
        self, batch: list[Any], replies: list[Reply], outcome: Outcome, latency: float
    ) -> None:
        results = []
        for ref, reply in zip(batch, replies, strict=True):
            group, position = self.plan.place(ref)
            kept: Outcome = "invalid" if outcome == "answered" and reply.problem else outcome
            results.append(
                ItemResult(
                    self.plan.key(ref), group, position, reply.text, kept, latency, reply.problem
                )
            )
        self.sink(results)
        for ref, result in zip(batch, results, strict=True):
            self.plan.remember(ref, result.response)
            self.report.items.append(ItemOutcome(result.key, result.outcome, latency))

    def _crashed(self, box: AgentBox, state: ContainerState) -> NoReturn:
        reason = box.crash_reason(state)
        if state.oom_killed:
            raise RunFailed(reason)
        raise _Restart(reason)

    def _total_deadline(self) -> float | None:
        total = self.limits.total_wall_s
        return self.started + total if total else None

    def _wall_reason(self) -> str:
        return f"the run exceeded its total wall time of {self.limits.total_wall_s:.0f} s"


@contextlib.contextmanager
def _earlier_objects_frozen() -> Iterator[None]:
    """The process's objects from before the run out of the garbage collector's reach while
    it runs (``gc.freeze``), then back (unless something had frozen objects before): a full
    collection of a worker's heap (Django, the Docker client, the benchmarks: 180,000 objects
    and more) takes about 0.1 s, set off now and then by the objects a batch makes, and it
    would fall between two batches, while the agent waits. The run's own objects are
    collected as usual."""
    frozen_before = gc.get_freeze_count() > 0
    gc.freeze()
    try:
        yield
    finally:
        if not frozen_before:
            gc.unfreeze()


def run_agent(
    image: AgentImage | str,
    plan: AgentPlan[Any],
    task: str,
    limits: Limits,
    sink: Sink,
    *,
    search: SearchProcess | None = None,
    answered: Mapping[str, str] | None = None,
    policy: SandboxPolicy | None = None,
    client: docker.DockerClient | None = None,
    on_output: Callable[[str], None] | None = None,
    start_container: StartContainer | None = None,
) -> RunReport:
    """Run ``image`` on ``plan``'s items for ``task`` (the agent's ``PODIUM_TASK``); each
    batch's results go to ``sink`` at once.

    ``search``: a ``workers.search.process.SearchProcess`` to serve search.sock (and to compute
    kit B's rag_context), or None. ``answered``: item key -> stored reply of items answered by
    an earlier run (the plan was given them too, for its histories). ``on_output``: called
    from a thread every few seconds while an agent container runs with the output so far
    (``workers.output_watch``), capped as ``RunReport.agent_log`` is. ``start_container``:
    how each start of the agent is made (the control plane's bench passes
    ``workers.fake_engine.FakeContainer``); by default a container on ``client``'s engine.
    ``policy``: the sandbox; where there is a ``client``, its runtime is chosen on that engine
    first (``SandboxPolicy.settled``: ``RuntimeMissing``, and nothing started, when the engine
    lacks the one named; a caller passing ``start_container`` alone settles it itself); the
    report says which ran.
    """
    if start_container is None or isinstance(image, str):
        client = client or docker.from_env()
        start_container = start_container or functools.partial(AgentContainer, client)
        if isinstance(image, str):
            image = local_image(image, client)
    policy = policy or SandboxPolicy()
    run = _Run(
        start_container,
        image,
        plan,
        task,
        limits,
        sink,
        search=search,
        answered=answered or {},
        policy=policy.settled(client) if client is not None else policy,
        on_output=on_output,
    )
    return run.execute()
