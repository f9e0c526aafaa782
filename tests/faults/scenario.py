"""One fault, end to end: runs submitted to a real Celery worker (with beat) on private
services, one service made unreachable mid-run and brought back, then what was stored checked.

    python -m tests.faults.scenario FAULT [--outage-s S] [--runs N] [--backoff-s B ...]

``FAULT`` is ``none`` (the baseline), ``redis`` (restarted empty while a run is handed over to
its next stage), ``postgres`` (stopped and started mid-run), ``s3`` (the object store
unreachable) or ``judge`` (the judge endpoint down). Every service is private to the scenario
(``tests/faults/services.py``): a PostgreSQL cluster, a Redis server, SeaweedFS's S3 server
(``tests/seaweedfs.py``: the outage kills it, its data kept), the stand-in judge. The agent is
``tests/e2e/agents/counter``, which records in each answer how many turns its process had been
asked, so a turn asked twice shows.

Prints one JSON object (the figures ``bench/faults.py`` tabulates and ``tests/faults``
asserts): runs submitted and done, turns lost, answers stored twice, turns asked twice, wrong
or missing verdicts, quota charged, files missing from storage, time to recover.

No wait has a deadline by the clock: each gives up only when nothing moved (no state, answer
or verdict stored, no line in the worker's log) for ``stall_s`` (the longest pause Podium
itself takes in this scenario, plus ``--quiet-s`` for one silent step on this machine), so a
loaded machine takes longer without failing. Each move is said on stderr, one line, which is
what ``tests/faults/process.py`` watches; it runs the scenario as a process group of its own
and ends the group (every private server with it) when the scenario falls silent. A SIGTERM,
or the death of the process that started it, unwinds the scenario (its servers stopped, its
files removed) and kills its process group ``GRACE_S`` later if that has not finished.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from tests.fake_openai import FAKE_JUDGE, endpoints_setting
from tests.faults.services import Judge, Postgres, Redis, Service
from tests.seaweedfs import SeaweedFS

FAULTS = ("none", "redis", "postgres", "s3", "judge")
BUCKET = "podium-faults"
# The worker's log lines that show it met each fault (a line with all of the words), one per
# occurrence: proof the fault was met, not dodged.
EVIDENCE = {
    "redis": ("unclaimed since",),  # the reaper re-sent a stage task lost with Redis's data
    "postgres": ("database unreachable",),  # an insert or beat kept while the database was down
    "s3": ("EndpointConnectionError", "; retrying in"),  # a stage retried: storage unreachable
    "judge": ("unjudged", "; again in"),  # a judging pass retried while the judge was down
}
GRACE_S = 60  # from a SIGTERM to the process group killed: the worker's stop (20 s) and more
SAY_EVERY_S = 5  # a move only in the worker's log is said at most this often
PR_SET_PDEATHSIG = 1  # prctl(2): a signal for this process when its parent dies


def _environment(args: argparse.Namespace, services: dict[str, Any], var: Path) -> dict[str, str]:
    return {
        "DATABASE_URL": services["postgres"].url("podium"),
        "REDIS_URL": services["redis"].url,
        "PODIUM_VAR_DIR": str(var),
        **services["s3"].env(BUCKET),
        "PODIUM_S3_MAX_ATTEMPTS": "2",
        "PODIUM_S3_CONNECT_TIMEOUT_S": "2",
        "PODIUM_JUDGE_ENDPOINTS": endpoints_setting(services["judge"].url),
        "PODIUM_JUDGE_MAX_RETRIES": "0",
        "PODIUM_JUDGE_ATTEMPT_TIMEOUT_S": "2",
        "PODIUM_JUDGE_TOTAL_TIMEOUT_S": "3",
        "PODIUM_REAPER_INTERVAL_S": str(args.reaper_s),
        "PODIUM_UNCLAIMED_RESEND_S": str(args.resend_s),
        "PODIUM_RETRY_BACKOFF_S": str(args.backoff_s),
        "PODIUM_RETRY_BACKOFF_MAX_S": str(args.backoff_max_s),
    }


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fault", choices=FAULTS)
    parser.add_argument("--outage-s", type=float, default=5.0, help="how long it stays down")
    parser.add_argument("--runs", type=int, default=1, help="submissions, one run each")
    parser.add_argument("--resend-s", type=int, default=2, help="PODIUM_UNCLAIMED_RESEND_S")
    parser.add_argument("--reaper-s", type=int, default=1, help="PODIUM_REAPER_INTERVAL_S")
    parser.add_argument("--backoff-s", type=int, default=1, help="PODIUM_RETRY_BACKOFF_S")
    parser.add_argument("--backoff-max-s", type=int, default=2)
    parser.add_argument(
        "--quiet-s", type=float, default=60, help="the longest one step may log nothing here"
    )
    parser.add_argument(
        "--hang", action="store_true", help="start everything, then wait saying nothing"
    )  # what tests/faults' clean-up test ends
    return parser.parse_args(argv)


def stall_s(args: argparse.Namespace) -> float:
    """How long a wait goes on with nothing moving before the scenario gives up: the outage,
    then Podium's longest pause before it tries again (the longest back-off, or a lost stage
    task re-sent by the reaper), plus one silent step on this machine (a build, a start)."""
    podium = max(args.backoff_max_s, args.resend_s + 2 * args.reaper_s)
    return args.outage_s + podium + args.quiet_s


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(sys.argv[1:] if argv is None else argv)
    _end_with_parent()
    services: dict[str, Any] = {"postgres": Postgres(), "redis": Redis(), "s3": SeaweedFS()}
    services["judge"] = Judge()
    try:
        for service in services.values():
            service.start()
            say(f"{service.name} started")
        services["postgres"].create_database("podium")
        services["s3"].create_bucket(BUCKET)
        with tempfile.TemporaryDirectory(prefix="podium-faults-") as tmp:
            os.environ.update(_environment(args, services, Path(tmp) / "var"))
            return _scenario(args, services, Path(tmp))
    finally:
        for service in services.values():
            service.close()


def say(what: str) -> None:
    """One line of progress on stderr (what ``tests/faults/process.py`` watches)."""
    sys.stderr.write(f"[scenario {time.strftime('%H:%M:%S')}] {what}\n")
    sys.stderr.flush()


def _end_with_parent() -> None:
    """A SIGTERM, or the death of the process that started this one, unwinds the scenario;
    if that takes over ``GRACE_S``, its whole process group is killed."""

    def terminated(signum: int, frame: FrameType | None) -> None:
        timer = threading.Timer(GRACE_S, os.killpg, (0, signal.SIGKILL))
        timer.daemon = True
        timer.start()
        signal.signal(signal.SIGTERM, lambda *_: None)  # once is enough (not SIG_IGN: inherited)
        raise SystemExit(f"ended by signal {signum}")

    signal.signal(signal.SIGTERM, terminated)
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:  # the parent died before the line above
        os.kill(os.getpid(), signal.SIGTERM)


def _scenario(args: argparse.Namespace, services: dict[str, Any], tmp: Path) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from leaderboard.models import EvaluationRun
    from tests.e2e.harness import Pipeline

    call_command("migrate", verbosity=1, stdout=sys.stderr)  # a line per migration: progress
    submissions, split = _submit(args.runs, tmp)
    pipeline = Pipeline(tmp)
    started = time.monotonic()
    pipeline.start_worker("worker", beat=True, **_worker_env())
    watch = Watch(pipeline, submissions, stall_s(args))
    try:
        if args.hang:
            watch.until("the worker ready", lambda: " ready." in pipeline.log("worker"))
            say("hanging")
            while True:
                time.sleep(3600)
        outage = _inject(args, services, watch)
        active = EvaluationRun.objects.filter(submission__in=submissions).exclude(
            state__in=EvaluationRun.TERMINAL_STATES
        )
        watch.until("the runs finished", lambda: not active.exists())
        total_s = time.monotonic() - started
    finally:
        pipeline.stop()
    report = _facts(submissions, split, pipeline.log("worker"), args.fault)
    if report["failures"]:
        sys.stderr.write(pipeline.log("worker")[-20000:])
    return {"fault": args.fault, **outage, "total_s": round(total_s, 1), **report}


def _worker_env() -> dict[str, str]:
    """The harness's worker environment, on this scenario's services instead of the tests'."""
    names = ("REDIS_URL", "PODIUM_RETRY_BACKOFF_S", "PODIUM_RETRY_BACKOFF_MAX_S")
    return {name: os.environ[name] for name in names}


def _submit(runs: int, tmp: Path) -> tuple[list[Any], Any]:
    from django.contrib.auth.models import User

    from leaderboard.models import Challenge, Membership, Team
    from leaderboard.splits import import_split_dir
    from tests.e2e.harness import REPO, make_task, submit_agent, write_split

    user = User.objects.create_user("faults", password="pw-secret-123")
    team = Team.objects.create(name="Faults")
    Membership.objects.create(team=team, user=user)
    challenge = Challenge.objects.create(name="Faults", slug="faults", is_published=True)
    task = make_task(challenge, "multi-turn-qa", **FAKE_JUDGE)
    split = import_split_dir(task, "validation", write_split(tmp / "split", 8, 3))
    counter = REPO / "tests/e2e/agents/counter"
    return [
        submit_agent(team, user, challenge, counter, f"counter-{i}") for i in range(runs)
    ], split


def _inject(
    args: argparse.Namespace, services: dict[str, Service], watch: Watch
) -> dict[str, float | None]:
    """Stop the fault's service once the first run is answering and start it again after the
    outage: PostgreSQL ``outage_s`` later; the others ``outage_s`` after the first run reached
    judging (a stage that needs them; for Redis, handed over while the broker is away).
    Returns how long it was down and the seconds from its return until the first run moved
    on (a state, an answer or a verdict more)."""
    from django.db import connection

    from leaderboard.models import EvaluationRun, ItemAnswer

    first = watch.submissions[0]
    answers = ItemAnswer.objects.filter(run__submission=first)
    watch.until("4 answers of the first run", lambda: answers.count() >= 4)
    if args.fault == "none":
        return {"down_s": None, "recovered_s": None}
    service = services[args.fault]
    down_at = time.monotonic()
    service.stop()
    say(f"{service.name} stopped")
    held_from = down_at
    if args.fault != "postgres":
        judging = EvaluationRun.objects.filter(submission=first, state=EvaluationRun.State.JUDGING)
        watch.until("the judging stage", judging.exists)
        held_from = time.monotonic()
    time.sleep(max(0.0, held_from + args.outage_s - time.monotonic()))
    # where the run stood before it could move again: read before the service starts (read
    # after, a run that moved on, or finished, during the start-up would leave nothing to wait
    # for); PostgreSQL's, unreadable while it is down, once it answers (nothing is stored
    # before it does)
    before = None if args.fault == "postgres" else _progress([first])
    service.start()
    back_at = time.monotonic()
    say(f"{service.name} started again")
    connection.close()
    if before is None:
        before = _progress([first])
    watch.until("the first run moving again", lambda: _progress([first]) != before)
    return {
        "down_s": round(back_at - down_at, 1),
        "recovered_s": round(time.monotonic() - back_at, 1),
    }


def _progress(submissions: list[Any]) -> tuple[Any, ...]:
    """Where the runs stand: their states, answers and verdicts stored."""
    from leaderboard.models import EvaluationRun, ItemAnswer, ItemVerdict

    runs = EvaluationRun.objects.filter(submission__in=submissions)
    return (
        sorted(runs.values_list("state", flat=True)),
        ItemAnswer.objects.filter(run__in=runs).count(),
        ItemVerdict.objects.filter(answer__run__in=runs).count(),
    )


class Watch:
    """Waits that give up only when nothing moves: no state, answer or verdict stored and no
    line in the worker's log for ``stall_s`` (but the beat's own: the reaper's pass every
    second is no move). Each move is said (``say``)."""

    def __init__(self, pipeline: Any, submissions: list[Any], stall_s: float) -> None:
        self.pipeline, self.submissions, self.stall_s = pipeline, submissions, stall_s

    def _moved(self) -> tuple[Any, ...]:
        from django.db import DatabaseError, close_old_connections

        log = _working_lines(self.pipeline.log("worker"))
        try:
            return (log, *_progress(self.submissions))
        except DatabaseError:  # PostgreSQL is the fault: only the log tells
            close_old_connections()
            return (log,)

    def until(self, what: str, check: Callable[[], bool]) -> None:
        last, moved_at, said_at = self._moved(), time.monotonic(), 0.0
        while not _checked(check):
            time.sleep(0.2)
            now = self._moved()
            if now != last:
                stored = now[1:] != last[1:]
                last, moved_at = now, time.monotonic()
                if stored or moved_at - said_at >= SAY_EVERY_S:
                    say(f"waiting for {what}: log {now[0]} lines, runs {now[1:]}")
                    said_at = moved_at
            elif time.monotonic() - moved_at > self.stall_s:
                tail = self.pipeline.log("worker")[-5000:]
                raise TimeoutError(f"{what}: nothing moved for {self.stall_s:.0f} s\n{tail}")


def _working_lines(log: str) -> int:
    """How many lines of the worker's log are not the beat's periodic tasks' (their sending,
    receipt and success: ``housekeeping.*``); what they find to do logs lines of its own."""
    return sum("housekeeping." not in line for line in log.splitlines())


def _checked(check: Callable[[], bool]) -> bool:
    from django.db import DatabaseError, close_old_connections

    try:
        return check()
    except DatabaseError:  # PostgreSQL is the fault
        close_old_connections()
        return False


def _facts(submissions: list[Any], split: Any, log: str, fault: str) -> dict[str, Any]:
    from django.core.files.storage import default_storage

    from leaderboard.models import EvaluationRun, ItemAnswer, ItemVerdict
    from leaderboard.quotas import usage

    runs = list(EvaluationRun.objects.filter(submission__in=submissions).order_by("pk"))
    rows = ItemAnswer.objects.filter(run__in=runs)
    distinct = rows.values_list("run", "item_key").distinct().count()
    asked, processes = 0, 0
    for run in runs:  # the agent's own record: per process, the count at each answer
        counts: dict[str, list[int]] = defaultdict(list)
        for response in rows.filter(run=run).values_list("response", flat=True):
            record = json.loads(response)
            counts[record["process"]].append(record["asked"])
        asked += sum(max(c) for c in counts.values())
        processes += len(counts)
    verdicts = ItemVerdict.objects.filter(answer__run__in=runs)
    files = [a for a in rows.exclude(thumbnail="").values_list("thumbnail", flat=True)]
    files += [run.transcript.name for run in runs if run.transcript]
    turns = split.items * len(runs)
    return {
        "runs_submitted": len(submissions),
        "runs_done": sum(run.state == EvaluationRun.State.DONE for run in runs),
        "failures": [run.operator_detail[-300:] for run in runs if run.state != "done"],
        "turns": turns,
        "turns_lost": turns - distinct,
        "answers_stored_twice": rows.count() - distinct,
        "turns_asked_twice": asked - distinct,
        "agent_processes": processes,
        "verdicts_missing": turns - verdicts.count(),
        "verdicts_not_correct": verdicts.exclude(verdict="correct").count(),
        "quota_charged": usage(runs[0].submission.team, runs[0].task).total,
        "files_missing": sum(not default_storage.exists(name) for name in files),
        "files_checked": len(files),
        "evidence": _lines(log, *EVIDENCE[fault]) if fault in EVIDENCE else None,
        "resent": _lines(log, *EVIDENCE["redis"]),
    }


def _lines(log: str, *words: str) -> int:
    return sum(all(word in line for word in words) for line in log.splitlines())


if __name__ == "__main__":
    json.dump(main(), sys.stdout)
    sys.stdout.write("\n")
