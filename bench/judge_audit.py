"""Judge audits at scale: opening one on a split with many verdicts, the labelling queue, the
results and the leaderboard's judge card (``leaderboard.audits``, ``leaderboard.audit_results``).

Usage: python bench/judge_audit.py [--runs 100] [--items 2000] [--size 200]
       [--database podium_bench_audit] [--server postgres://postgres@127.0.0.1:5432]

Drops and re-creates ``--database``, migrates it, then writes one CRAG-MM task whose private
test has ``--runs`` done runs answering ``--items`` turns each, every answer with its verdict
(a CRAG-MM row of ~400 bytes; each turn's answers drawn from 4 distinct ones, so the split holds
4 x items distinct answers), and times, median of ``--repeat``: opening an audit of ``--size``
(by verdict only, and by verdict and domain), the next item for a labeller, the results once
every item has a label, and the judge cards of the board.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GRADES = ("correct", "correct", "missing", "hallucinated")
DOMAINS = ("animal", "food", "vehicle", "plants and gardening", "book", "shopping", "local")


def recreate(server: str, database: str) -> None:
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(database)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))


def seed(runs: int, items: int) -> tuple[object, object]:
    from django.contrib.auth.models import User
    from django.utils import timezone

    from leaderboard.models import (
        Challenge,
        EvaluationRun,
        Headline,
        ItemAnswer,
        ItemVerdict,
        Split,
        Submission,
        Task,
        Team,
    )

    rng = random.Random(0)
    challenge = Challenge.objects.create(name="bench", slug="bench", is_published=True)
    task = Task.objects.create(challenge=challenge, task_id="multi-turn-qa", name="MTQA")
    split = Split.objects.create(task=task, kind=Split.Kind.PRIVATE_TEST, reveal_at=timezone.now())
    organiser = User.objects.create_user("org", is_staff=True)
    team = Team.objects.create(name="t")
    for n in range(runs):
        submission = Submission.objects.create(
            team=team, challenge=challenge, method_name=f"m{n}", state=Submission.State.READY,
            artifact_kind=Submission.ArtifactKind.REGISTRY_REF, registry_ref="x/y:1",
        )  # fmt: skip
        run = EvaluationRun.objects.create(
            submission=submission, task=task, split=split, state=EvaluationRun.State.DONE,
            judge_id="openai:judge@r1", prompt_version="crag-mm-judge-v1",
        )  # fmt: skip
        answers = ItemAnswer.objects.bulk_create(
            ItemAnswer(
                run=run, group=f"s{i // 3}", item_key=f"i{i}", position=i % 3, response=f"raw {i}"
            )
            for i in range(items)
        )
        verdicts = []
        for i, answer in enumerate(answers):
            choice = rng.randrange(4)
            row = {
                "session_id": f"s{i // 3}", "interaction_id": f"i{i}", "turn_idx": i % 3,
                "is_ego": i % 2 == 0, "query": f"what is shown in picture {i}?",
                "ground_truth": f"the answer to {i}", "agent_response": f"answer {choice} to {i}",
                "is_exact_match": False, "is_miss": False, "verdict": GRADES[choice],
                "domain": DOMAINS[i % len(DOMAINS)], "query_category": "simple-recognition",
                "judge_id": "openai:judge@r1", "prompt_version": "crag-mm-judge-v1",
            }  # fmt: skip
            verdicts.append(
                ItemVerdict(
                    answer=answer,
                    verdict=GRADES[choice],
                    detail=row,
                    judge_id="openai:judge@r1",
                    prompt_version="crag-mm-judge-v1",
                )
            )
        ItemVerdict.objects.bulk_create(verdicts, batch_size=2000)
        # the slices the run was scored by (what an audit may be stratified by)
        Headline.objects.create(run=run, split=split, count=items, dimensions=["domain"])
    return split, organiser


def timed(work: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, found = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        found = work()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--database", default="podium_bench_audit")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    recreate(args.server, args.database)
    os.environ["DATABASE_URL"] = f"{args.server}/{args.database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from leaderboard import audit_results, audits
    from leaderboard.audit_results import judge_cards, results
    from leaderboard.models import AuditLabel

    call_command("migrate", verbosity=0)
    start = time.perf_counter()
    split, organiser = seed(args.runs, args.items)
    print(f"seeded {args.runs * args.items:,} verdicts in {time.perf_counter() - start:.1f} s")
    judge = "openai:judge@r1|crag-mm-judge-v1"
    for dimension in ("", "domain"):
        took, audit = timed(
            lambda d=dimension: audits.open_audit(split, organiser, judge, args.size, d),
            args.repeat,
        )
        print(f"open an audit of {args.size}, by verdict{' and ' + dimension if dimension else ''}"
              f": {took:.0f} ms")  # fmt: skip
    took, _ = timed(lambda: audits.next_item(audit, organiser), args.repeat)
    print(f"next item for a labeller: {took:.1f} ms")
    AuditLabel.objects.bulk_create(
        AuditLabel(item=item, labeller=organiser, verdict=item.judge_verdict)
        for item in audit.items.all()
    )
    took, found = timed(lambda: results(audit), args.repeat)
    print(f"results of {found['judge']['n']} labelled items, {len(found['slices'])} dimensions: "
          f"{took:.0f} ms")  # fmt: skip
    audit_results.finish(audit, organiser)
    took, _ = timed(lambda: judge_cards(split, ""), args.repeat)
    print(f"judge cards of the board: {took:.1f} ms")


if __name__ == "__main__":
    main()
