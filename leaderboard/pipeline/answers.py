"""The running stage's sink: each batch's answers stored while the agent answers the next batch.

The runner hands a batch's results to ``AnswerSink`` the moment they arrive; the sink stores
them (one idempotent INSERT, once per run and item key) on a thread of its own and returns at
once, so the runner sends the next batch without waiting for the database (about 1.5 ms a
batch against a local PostgreSQL: ``docs/benchmarks.md``, "Agent runtime overhead"). One write
is in flight at most: the next batch's results wait for it, and its error (a database gone for
longer than ``PODIUM_DB_RETRY_S``, the run taken away) is raised there, in the runner's thread,
as if the write had been made in place. A worker that dies can leave two batches answered and
not stored (the one being written and the one answered meanwhile), asked again on resume;
nothing stored is ever asked again. ``close`` stores what is left and ends the thread.
"""

from __future__ import annotations

import concurrent.futures
import time

from django.db import connections

from leaderboard.models import EvaluationRun, ItemAnswer
from leaderboard.pipeline.ownership import RunLost, beat_if_mine, while_database_returns
from workers.outcomes import ItemResult

PROGRESS_EVERY_S = 0.5  # progress (and a heartbeat) at most this often from the sink


class AnswerSink:
    """Stores each batch's results behind the runner's back (one write in flight); progress
    every ``PROGRESS_EVERY_S``, and the run stops when it is no longer ours."""

    def __init__(self, run: EvaluationRun, done: int) -> None:
        self.run = run
        self.done = done
        self.last_beat = 0.0
        self._writer = concurrent.futures.ThreadPoolExecutor(1, f"podium-answers-{run.pk}")
        self._writing: concurrent.futures.Future[None] | None = None

    def __call__(self, results: list[ItemResult]) -> None:
        self.wait()
        self._writing = self._writer.submit(self._store, results)

    def wait(self) -> None:
        """Until the write in flight is done; its error raised (once)."""
        writing, self._writing = self._writing, None
        if writing is not None:
            writing.result()

    def close(self) -> None:
        """The last write done (its error raised) and the thread's connection closed."""
        try:
            self.wait()
        finally:
            self._writer.submit(connections.close_all).result()
            self._writer.shutdown()

    def _store(self, results: list[ItemResult]) -> None:
        # The answers are kept while the database restarts (asking the agent again would ask
        # these turns twice); the insert is idempotent, so trying it again is safe.
        retrying = while_database_returns()
        self.done += retrying(self._insert, results)
        now = time.monotonic()
        if now - self.last_beat >= PROGRESS_EVERY_S:
            if not retrying(beat_if_mine, self.run, self.done):  # re-queued or cancelled
                raise RunLost(f"run #{self.run.pk} is no longer this worker's")
            self.last_beat = now

    def _insert(self, results: list[ItemResult]) -> int:
        created = ItemAnswer.objects.bulk_create(
            [
                ItemAnswer(
                    run=self.run,
                    group=result.group,
                    item_key=result.key,
                    position=result.position,
                    response=result.response,
                    outcome=result.outcome,
                    problem=result.problem or "",
                    latency_s=result.latency_s,
                )
                for result in results
            ],
            ignore_conflicts=True,
        )
        return len(created)
