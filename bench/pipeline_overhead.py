"""What the Celery pipeline adds on top of the agent runtime, measured side by side.

The zero-work example agent (answers "" at once, batch size 16; with ``--sleeping``, the same
agent sleeping 100 ms a batch, as ``runtime_overhead.py``'s) answers the same split twice:

1. ``workers.runner.run_agent`` alone, results kept in a list: the runtime's own cost;
2. the whole pipeline: ``submit`` (the web form's code path, a build context) -> a real
   ``celery worker`` process -> build (image cached by the engine) -> run (each batch's answers
   ``ItemAnswer`` rows, progress every 0.5 s) -> judge (rules) -> aggregate.

Reported: the run stage's answering time (first to last stored answer, plus the container's
start) against the runner alone, and the whole submit -> done latency split by stage; with the
agent image's archive in storage, when it was stored relative to the last answer (negative:
before it, beside or before the run).

``--build-worker``: the ``build`` queue on a worker of its own (as deployed) beside one on the
others. ``--quiet``: after each run, wait (up to 120 s) for its image's archive before the next
submission. ``--another-node``: announce a second GPU node in Redis
(``leaderboard.pipeline.node.announce``), so ``PODIUM_IMAGE_STORE=auto`` stores images ahead as on
a cluster (a no-op before that setting).

Needs a scratch database it may migrate (``DATABASE_URL``) and Redis (``REDIS_URL``; a worker on
that broker's queues is started here, so use a database no other worker listens on):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_pipeline \\
    REDIS_URL=redis://127.0.0.1:6379/10 python bench/pipeline_overhead.py [--conversations 64] \\
        [--sleeping]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.files.storage import default_storage  # noqa: E402
from django.core.files.uploadedfile import SimpleUploadedFile  # noqa: E402
from django.core.management import call_command  # noqa: E402

from evaluator.benchmarks.crag_mm.loading import load_split  # noqa: E402
from leaderboard.demo.setup import context_tar  # noqa: E402
from leaderboard.kits import store  # noqa: E402
from leaderboard.models import Challenge, EvaluationRun, Membership, Submission, Team  # noqa: E402
from leaderboard.pipeline.node import nodes_key  # noqa: E402
from leaderboard.pipeline.run import limits_for  # noqa: E402
from leaderboard.splits import import_split_dir  # noqa: E402
from leaderboard.submitting import Artifact, MethodInfo, submit  # noqa: E402
from podium.monitoring_events import events_redis  # noqa: E402
from tests.e2e.harness import make_task, write_split  # noqa: E402
from workers.builds import build_context  # noqa: E402
from workers.image_export import archive_name  # noqa: E402
from workers.runner import run_agent  # noqa: E402

ZERO_WORK = REPO / "examples/agents/zero-work"
QUEUES = "build,gpu-l40s,judge,default"


def runner_alone(image, split, task) -> dict[str, float]:
    arrived: list[float] = []
    started = time.monotonic()
    plan = task.scoring().agent_plan(split, task.task_id, {})
    report = run_agent(
        image, plan, task.task_id, limits_for(task), lambda _: arrived.append(time.monotonic())
    )
    assert report.status == "completed", report.failure_reason
    return {"total_s": time.monotonic() - started, "answering_s": arrived[-1] - arrived[0]}


def _stored_at(digest: str, wait_s: float) -> float | None:
    """When the image's archive was stored (its sidecar, written last), waiting up to
    ``wait_s`` for it; None if it never came."""
    deadline = time.monotonic() + wait_s
    while store.stored(archive_name(digest)) is None:
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.2)
    return default_storage.get_modified_time(f"{archive_name(digest)}.sha256").timestamp()


def agent_context(sleeping: bool) -> bytes:
    """The zero-work example's build context; ``sleeping``: its agent sleeps 100 ms a batch."""
    if not sleeping:
        return context_tar(ZERO_WORK)
    import runtime_overhead  # bench/: the sleeping agent it times

    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(shutil.copytree(ZERO_WORK, Path(scratch) / "agent"))
        (directory / "timed.py").write_text(runtime_overhead.TIMED)
        dockerfile = runtime_overhead.dockerfile("timed:SleepingAgent", runtime_overhead.BASE_IMAGE)
        (directory / "Dockerfile").write_text(dockerfile)
        return context_tar(directory)


def through_pipeline(team, user, challenge, quiet: bool, context: bytes) -> dict[str, float]:
    upload = SimpleUploadedFile("zero-work.tar", context)
    started = time.time()
    submission = submit(
        team,
        challenge,
        user,
        Artifact(kind=Submission.ArtifactKind.BUILD_CONTEXT, file=upload),
        MethodInfo(method_name=f"zero-work {started:.0f}"),
    )
    run = EvaluationRun.objects.get(submission=submission)
    while run.state not in EvaluationRun.TERMINAL_STATES:
        time.sleep(0.05)
        run.refresh_from_db()
    done = time.time()
    assert run.state == EvaluationRun.State.DONE, run.failure_reason
    answers = run.answers.order_by("created_at")
    first, last = answers.first().created_at.timestamp(), answers.last().created_at.timestamp()
    row = {
        "submit_to_done_s": done - started,
        "answering_s": last - first,
        "after_last_answer_s": run.finished_at.timestamp() - last,
    }
    stored = _stored_at(Submission.objects.get(pk=submission.pk).image_digest, 120 if quiet else 0)
    if stored is not None:
        row["archive_stored_after_last_answer_s"] = stored - last
    return row


def announce_another_node(stop: threading.Event) -> None:
    while not stop.is_set():
        events_redis().hset(nodes_key(), "bench-another-node", str(time.time()))
        stop.wait(10)


def start_workers(build_worker: bool, log) -> list[subprocess.Popen]:
    """One solo worker on every queue, or one on ``build`` and one on the others."""
    queues = ["build", QUEUES.removeprefix("build,")] if build_worker else [QUEUES]
    workers = []
    for i, q in enumerate(queues):
        command = [sys.executable, "-m", "celery", "-A", "podium", "worker", "--pool=solo",
                   "-Q", q, "-n", f"bench{i}@%h", "--without-gossip", "--without-mingle",
                   "-l", "warning"]  # fmt: skip
        workers.append(subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT))
    return workers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=64)
    parser.add_argument("--turns", type=int, default=4, help="turns per conversation")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--build-worker", action="store_true", help="build on its own worker")
    parser.add_argument("--quiet", action="store_true", help="wait for each image's archive")
    parser.add_argument("--another-node", action="store_true", help="a second GPU node seen")
    parser.add_argument("--sleeping", action="store_true", help="the agent sleeps 100 ms a batch")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    stamp = f"{time.time():.0f}"
    user = User.objects.create_user(f"bench-{stamp}", password="bench-secret-123")
    team = Team.objects.create(name=f"bench {stamp}")
    Membership.objects.create(team=team, user=user)
    challenge = Challenge.objects.create(
        name=f"bench {stamp}", slug=f"bench-{stamp}", is_published=True
    )
    task = make_task(challenge, "multi-turn-qa", per_item_s=10.0)
    with tempfile.TemporaryDirectory() as scratch:
        split_dir = write_split(Path(scratch) / "split", args.conversations, args.turns)
        import_split_dir(task, "validation", split_dir)
        split = load_split(split_dir)
        context = agent_context(args.sleeping)
        with tempfile.NamedTemporaryFile(suffix=".tar") as tar:
            tar.write(context)
            tar.flush()
            image = build_context(tar.name, tag="podium-bench/zero-work:latest")
        alone = [runner_alone(image, split, task) for _ in range(args.repeat)]
        log = open(Path(scratch) / "worker.log", "wb")  # noqa: SIM115
        stop = threading.Event()
        if args.another_node:
            threading.Thread(target=announce_another_node, args=(stop,), daemon=True).start()
        workers = start_workers(args.build_worker, log)
        try:
            piped = [
                through_pipeline(team, user, challenge, args.quiet, context)
                for _ in range(args.repeat)
            ]
        finally:
            stop.set()
            for worker in workers:
                worker.terminate()
            for worker in workers:
                worker.wait()
    turns = args.conversations * args.turns
    median = statistics.median
    print(f"split: {args.conversations} conversations x {args.turns} turns = {turns} turns")
    for name, rows in (("runner alone", alone), ("pipeline", piped)):
        for key in rows[0]:
            values = [row[key] for row in rows if key in row]
            print(f"{name} {key}: median {median(values):.3f} s  {[round(v, 3) for v in values]}")
    answering = median(p["answering_s"] for p in piped), median(a["answering_s"] for a in alone)
    batches = -(-turns // 16)
    print(
        f"answering, first to last answer: pipeline / runner alone = "
        f"{answering[0] / answering[1]:.2f}x ({(answering[0] - answering[1]) / batches * 1e3:.2f} "
        "ms more per batch of 16: their ItemAnswer rows, progress every 0.5 s)"
    )
    total = median(p["submit_to_done_s"] for p in piped), median(a["total_s"] for a in alone)
    print(f"submit -> done / runner alone total = {total[0] / total[1]:.2f}x")


if __name__ == "__main__":
    main()
