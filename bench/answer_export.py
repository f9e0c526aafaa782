"""The answers' export at scale: the memory it takes while it streams a million rows.

Writes one challenge (``export-bench``, written again each time) with ``--runs`` done runs of
``--rows`` answers in all (each judged, a 200-character response) into the database that
``DATABASE_URL`` names (migrated), then streams the whole challenge's export through the
view's response (``leaderboard.views.answer_export.response``), as CSV, JSON Lines and
Parquet, sampling the process's resident memory every ``--every`` rows.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/podium_bench \\
        python bench/answer_export.py [--rows 1000000] [--runs 10] [--every 100000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


def seed(rows: int, runs: int) -> object:
    from django.db import connection

    from leaderboard.models import Challenge, EvaluationRun, Split, Submission, Task, Team

    Challenge.objects.filter(slug="export-bench").delete()
    challenge = Challenge.objects.create(name="Export bench", slug="export-bench")
    task = Task.objects.create(challenge=challenge, task_id="multi-turn-qa", name="QA")
    split = Split.objects.create(task=task, kind=Split.Kind.VALIDATION)
    team, _ = Team.objects.get_or_create(name="export-bench")
    ids = []
    for n in range(runs):
        submission = Submission.objects.create(
            team=team, challenge=challenge, method_name=f"m{n}",
            artifact_kind=Submission.ArtifactKind.REGISTRY_REF, registry_ref="example/agent:1",
        )  # fmt: skip
        run = EvaluationRun.objects.create(
            submission=submission, task=task, split=split, state=EvaluationRun.State.DONE
        )
        ids.append(run.pk)
    per_run = rows // runs
    with connection.cursor() as cursor:
        for run_id in ids:
            cursor.execute(
                """INSERT INTO leaderboard_itemanswer (run_id, "group", item_key, position,
                   response, outcome, problem, latency_s, thumbnail, images, created_at)
                   SELECT %s, 's' || (n / 10), 'k' || n, n %% 10, repeat('x', 200), 'answered',
                   '', 1.5, '', '{}', now() FROM generate_series(0, %s - 1) AS n""",
                [run_id, per_run],
            )
        cursor.execute(
            """INSERT INTO leaderboard_itemverdict (answer_id, verdict, detail, judge_id,
               prompt_version, prompt_hash, judged_at)
               SELECT a.id, 'correct', '{}', 'rules@1', 'v1', 'abc', now()
               FROM leaderboard_itemanswer a WHERE a.run_id = ANY(%s)""",
            [ids],
        )
    return challenge


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--every", type=int, default=100_000)
    args = parser.parse_args()
    import django

    django.setup()
    from leaderboard.answer_export import CHUNK
    from leaderboard.models import Challenge
    from leaderboard.views.answer_export import response

    started = time.perf_counter()
    seed(args.rows, args.runs)
    print(f"seeded {args.rows} answers in {time.perf_counter() - started:.1f} s")
    challenge = Challenge.objects.get(slug="export-bench")
    for fmt in ("csv", "jsonl", "parquet"):
        started, size, samples = time.perf_counter(), 0, []
        out = response(challenge, fmt, "", "")
        step = CHUNK if fmt == "parquet" else 1  # a Parquet part is a row group of CHUNK rows
        for parts, chunk in enumerate(out.streaming_content, 1):  # type: ignore[attr-defined]
            size += len(chunk)
            if (parts * step) % args.every == 0:
                samples.append(f"{parts * step}: {rss_mib():.0f}")
        took = time.perf_counter() - started
        print(f"{fmt}: {parts} parts, {size / 2**20:.0f} MiB in {took:.1f} s; RSS MiB by row:")
        print("  " + ", ".join(samples))


if __name__ == "__main__":
    main()
