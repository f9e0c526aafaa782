"""Run one agent image against one split: sandboxed, in the official turn order, under limits.

``run_agent`` starts the container, waits for ``/ready``, then sends batches (one turn per
conversation, turn N+1 only after turn N) with a deadline of ``per_turn_s`` x batch size. Every
batch's turn results go to ``sink`` the moment they arrive (one call per batch, so a sink can
store them in one write), so an interrupted run resumes from ``answered`` without asking
anything twice. Defined outcomes:

- a batch past its deadline: its turns are recorded as ``timeout`` (empty response, scored
  missing), or the run fails when ``timeout_policy`` is "fail";
- ``max_consecutive_timeouts`` timed-out batches in a row, or a crash: a fresh container, and
  the run resumes at the first unanswered turn; more than ``max_restarts`` restarts fail the run;
- the agent raised (HTTP 5xx from ``/batch``): the turns are recorded as ``error``;
- the image directory full (only if the agent keeps removed images open): a fresh container;
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

import functools
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

import docker

from agentkit.protocol import TASKS
from evaluator.protocols.crag_mm.records import Split
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
    AgentContainer,
    AgentCrashed,
    ContainerState,
    keep_output_tail,
)
from workers.batches import TurnRef, turn_batches, turn_request
from workers.image_volume import ImageDirFull, ImageFile, Stager, read_image, volume_bytes
from workers.images import AgentImage, local_image
from workers.limits import Limits
from workers.outcomes import (
    Outcome,
    RunFailed,
    RunReport,
    TurnOutcome,
    TurnResult,
    clean_answer,
)
from workers.sandbox import SandboxPolicy

if TYPE_CHECKING:  # faiss and encoders: imported by whoever starts a search process
    from workers.search.process import SearchProcess

Sink = Callable[[list[TurnResult]], None]  # one batch's results, in the batch's order
BUSY_STATUSES = (409, 503)  # the agent is still on an earlier (timed-out) batch
BUSY_RETRY_S = 0.02
PROTOCOL_STATUSES = (400, 404, 405, 411, 413)  # the agent does not speak the protocol


class _Restart(Exception):
    """The container must be replaced; the message says why (for the crash-loop reason)."""


class _Run:
    def __init__(
        self,
        client: docker.DockerClient,
        image: AgentImage,
        split: Split,
        task: str,
        limits: Limits,
        sink: Sink,
        *,
        search: SearchProcess | None,
        answered: Mapping[str, str],
        truncate: Callable[[str], str],
        policy: SandboxPolicy,
    ) -> None:
        self.client = client
        self.image = image
        self.split = split
        self.task = task
        self.limits = limits
        self.sink = sink
        self.search = search
        self.truncate = truncate
        self.policy = policy
        self.run_id = uuid.uuid4().hex[:12]
        known = {t.interaction_id for _, _, t in split.turns()}
        self.answered = {k: v for k, v in answered.items() if k in known}
        self.history_answers = {k: truncate(v) for k, v in self.answered.items()}
        self.started = time.monotonic()
        self.report = RunReport(
            status="failed",
            failure_reason=None,
            image=image.ref,
            image_digest=image.digest,
            task=task,
            resumed_turns=len(self.answered),
        )
        self.batches: Any = None
        self.pending: list[TurnRef] | None = None  # a batch to send (again) after a restart
        self.upcoming: list[TurnRef] | None = None  # the batch after the one being sent
        self.stager = Stager(self._image_file)
        self.batch_number = 0
        self.last_latency_s = 0.0  # of the last batch the agent answered
        # Recently read images, for the later turns of their conversations (and a restart's
        # fresh image volume): about three batches' worth.
        self.read_image = functools.lru_cache(maxsize=48)(read_image)
        self.image_dir_bytes = volume_bytes(
            filter(None, map(split.image_path, split.conversations)), limits.max_batch_size
        )

    # -- the run ---------------------------------------------------------------------------

    def execute(self) -> RunReport:
        try:
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

    def _attempt(self) -> None:
        box = AgentContainer(
            self.client,
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

    def _attempt_in(self, box: AgentContainer) -> None:
        started = time.monotonic()
        with box:
            try:
                self._batches_in(box, started)
            finally:  # the stager must be done with this container's image volume before it goes
                self.stager.settle()

    def _batches_in(self, box: AgentContainer, started: float) -> None:
        readiness = self._wait_ready(box, started)
        if self.batches is None:
            self.report.batch_size = self.limits.batch_size(readiness.batch_size)
            self.report.kit = readiness.kit
            self.batches = turn_batches(
                self.split.conversations, self.report.batch_size, self.answered
            )
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

    def _wait_ready(self, box: AgentContainer, started: float) -> Readiness:
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

    def _send(self, box: AgentContainer, batch: list[TurnRef], kit: str) -> Outcome:
        """One batch call; records its turns and says how it went."""
        assert box.agent is not None
        deadline_s = self.limits.batch_deadline_s(len(batch))
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
            box.search_handle.allow(self.limits.searches_per_turn * len(batch))
        turns = [
            self._turn_request(r, kit, path) for r, path in zip(batch, image_paths, strict=True)
        ]
        body = encode_batch(str(self.batch_number), deadline_s, turns)
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
                    f"a batch of {len(batch)} turns took longer than its {deadline_s:.1f} s "
                    "deadline (this task fails a run on any time-out)"
                ) from None
            self._record(batch, [""] * len(batch), "timeout", time.monotonic() - started)
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
        if reply.status != 200:
            self._record(batch, [""] * len(batch), "error", latency)
            return "error"
        try:
            responses = batch_responses(reply.body, len(batch), str(self.batch_number))
        except ProtocolError as exc:
            raise RunFailed(f"protocol error: {exc}", exc.agent_text) from None
        cap = self.limits.answer_cap_bytes
        self._record(batch, [clean_answer(r, cap) for r in responses], "answered", latency)
        return "answered"

    # -- pieces ----------------------------------------------------------------------------

    @staticmethod
    def _check_search(box: AgentContainer) -> None:
        """A search process that stopped during the batch failed its searches on Podium's
        side: ``SearchUnavailable`` (from its control pipe, closed the moment it dies) before
        the batch is recorded, so that the batch is asked again."""
        if box.search_handle is not None:
            box.search_handle.process.call({"op": "ping"})

    def _next_batch(self) -> list[TurnRef] | None:
        """The next batch in order. The one after it is known already (the order never depends
        on answers, only the histories do): ``_send`` has its images staged while the agent
        works."""
        batch = self.upcoming if self.upcoming is not None else next(self.batches, None)
        self.upcoming = next(self.batches, None) if batch is not None else None
        return batch

    def _image_file(self, ref: TurnRef) -> ImageFile | None:
        image_path = self.split.image_path(ref.conversation)
        return self.read_image(image_path) if image_path else None

    def _turn_request(self, ref: TurnRef, kit: str, image_path: str | None) -> dict:
        if kit != "B":
            return turn_request(ref, self.history_answers, image_path=image_path)
        rag_context = None
        if self.search is not None:
            path = self.split.image_path(ref.conversation)
            rag_context = self.search.rag_context(
                ref.turn.query, str(path) if path else None, self.task
            )
        domain = ref.turn.labels.get("domain")
        return turn_request(
            ref, self.history_answers, image_path=image_path, rag_context=rag_context, domain=domain
        )

    def _record(
        self, batch: list[TurnRef], responses: list[str], outcome: Outcome, latency: float
    ) -> None:
        results = [
            TurnResult(ref.session_id, ref.interaction_id, ref.turn_idx, text, outcome, latency)
            for ref, text in zip(batch, responses, strict=True)
        ]
        self.sink(results)
        for result in results:
            self.history_answers[result.interaction_id] = self.truncate(result.response)
            self.report.turns.append(TurnOutcome(result.interaction_id, outcome, latency))

    def _crashed(self, box: AgentContainer, state: ContainerState) -> NoReturn:
        reason = box.crash_reason(state)
        if state.oom_killed:
            raise RunFailed(reason)
        raise _Restart(reason)

    def _total_deadline(self) -> float | None:
        total = self.limits.total_wall_s
        return self.started + total if total else None

    def _wall_reason(self) -> str:
        return f"the run exceeded its total wall time of {self.limits.total_wall_s:.0f} s"


def run_agent(
    image: AgentImage | str,
    split: Split,
    task: str,
    limits: Limits,
    sink: Sink,
    *,
    search: SearchProcess | None = None,
    answered: Mapping[str, str] | None = None,
    truncator: Any = None,
    policy: SandboxPolicy | None = None,
    client: docker.DockerClient | None = None,
) -> RunReport:
    """Run ``image`` on ``split`` for ``task``; each batch's results go to ``sink`` at once.

    ``search``: a ``workers.search.process.SearchProcess`` to serve search.sock (and to compute
    kit B's rag_context), or None. ``answered``: interaction_id -> response of turns answered by an
    earlier run. ``truncator``: the evaluator's 75-token truncator (loaded when None) used for
    the answers the agent sees in its histories.
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    client = client or docker.from_env()
    if isinstance(image, str):
        image = local_image(image, client)
    if truncator is None:
        from evaluator.protocols.crag_mm.truncation import load_truncator

        truncator = load_truncator()
    run = _Run(
        client,
        image,
        split,
        task,
        limits,
        sink,
        search=search,
        answered=answered or {},
        truncate=truncator.truncate,
        policy=policy or SandboxPolicy(),
    )
    return run.execute()
