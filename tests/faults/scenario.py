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
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
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


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fault", choices=FAULTS)
    parser.add_argument("--outage-s", type=float, default=5.0, help="how long it stays down")
    parser.add_argument("--runs", type=int, default=1, help="submissions, one run each")
    parser.add_argument("--resend-s", type=int, default=2, help="PODIUM_UNCLAIMED_RESEND_S")
    parser.add_argument("--reaper-s", type=int, default=1, help="PODIUM_REAPER_INTERVAL_S")
    parser.add_argument("--backoff-s", type=int, default=1, help="PODIUM_RETRY_BACKOFF_S")
    parser.add_argument("--backoff-max-s", type=int, default=2)
    parser.add_argument("--timeout-s", type=float, default=240, help="for the runs to finish")
    args = parser.parse_args(argv)
    services: dict[str, Any] = {"postgres": Postgres(), "redis": Redis(), "s3": SeaweedFS()}
    services["judge"] = Judge()
    try:
        for service in services.values():
            service.start()
        services["postgres"].create_database("podium")
        services["s3"].create_bucket(BUCKET)
        with tempfile.TemporaryDirectory(prefix="podium-faults-") as tmp:
            os.environ.update(_environment(args, services, Path(tmp) / "var"))
            return _scenario(args, services, Path(tmp))
    finally:
        for service in services.values():
            service.close()


def _scenario(args: argparse.Namespace, services: dict[str, Any], tmp: Path) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from tests.e2e.harness import Pipeline

    call_command("migrate", verbosity=0)
    submissions, split = _submit(args.runs, tmp)
    pipeline = Pipeline(tmp)
    started = time.monotonic()
    pipeline.start_worker("worker", beat=True, **_worker_env())
    try:
        outage = _inject(args, services, pipeline, submissions)
        for submission in submissions:
            pipeline.wait_finished(submission, timeout_s=args.timeout_s)
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
    args: argparse.Namespace, services: dict[str, Service], pipeline: Any, submissions: list[Any]
) -> dict[str, float | None]:
    """Stop the fault's service once the first run is answering and start it again after the
    outage: PostgreSQL ``outage_s`` later; the others ``outage_s`` after the first run reached
    judging (a stage that needs them; for Redis, handed over while the broker is away).
    Returns how long it was down and the seconds from its return until the first run moved
    on (a state, an answer or a verdict more)."""
    from django.db import connection

    from leaderboard.models import EvaluationRun, ItemAnswer

    first = EvaluationRun.objects.filter(submission=submissions[0])
    answers = ItemAnswer.objects.filter(run__submission=submissions[0])
    pipeline.wait_for("answers", lambda: answers.count() >= 4, timeout_s=180, every_s=0.1)
    if args.fault == "none":
        return {"down_s": None, "recovered_s": None}
    service = services[args.fault]
    down_at = time.monotonic()
    service.stop()
    held_from = down_at
    if args.fault != "postgres":
        judging = first.filter(state=EvaluationRun.State.JUDGING)
        pipeline.wait_for("the judging stage", judging.exists, timeout_s=120, every_s=0.1)
        held_from = time.monotonic()
    time.sleep(max(0.0, held_from + args.outage_s - time.monotonic()))
    service.start()
    back_at = time.monotonic()
    connection.close()
    before = _progress(submissions[0])
    _wait(lambda: _progress(submissions[0]) != before, args.timeout_s)
    return {
        "down_s": round(back_at - down_at, 1),
        "recovered_s": round(time.monotonic() - back_at, 1),
    }


def _progress(submission: Any) -> tuple[Any, ...]:
    """Where the run the fault met stands: its state, answers and verdicts stored."""
    from leaderboard.models import EvaluationRun, ItemAnswer, ItemVerdict

    run = EvaluationRun.objects.get(submission=submission)
    return (
        run.state,
        ItemAnswer.objects.filter(run=run).count(),
        ItemVerdict.objects.filter(answer__run=run).count(),
    )


def _wait(check: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("the runs made no progress after the service came back")
        time.sleep(0.2)


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
    json.dump(main(sys.argv[1:]), sys.stdout)
    sys.stdout.write("\n")
