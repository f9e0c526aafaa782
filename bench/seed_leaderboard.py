"""Seed a PostgreSQL database with a large CRAG-MM leaderboard for the read-path benchmark.

Usage: python bench/seed_leaderboard.py [--database podium_bench] [--teams 1000]
       [--submissions 5000] [--server postgres://postgres@127.0.0.1:5432]

Drops and re-creates ``--database``, migrates it, then writes one published challenge with the
three CRAG-MM tasks, a public-test split each, ``--teams`` teams, ``--submissions`` submissions
(a few organiser baselines among them) and a done run of every submission on every split with a
SliceScore row for the headline block and 40 slice values, and its Headline (COPY), ranked by
truthfulness.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from datetime import timedelta
from pathlib import Path

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TASK_IDS = ("single-source-augmentation", "multi-source-augmentation", "multi-turn-qa")
# 40 slice values, named as the CRAG-MM labels name them (13 + 6 + 4 + 6 + 2 + 9).
SLICE_VALUES: dict[str, tuple[str, ...]] = {
    "domain": (
        "animal", "other", "shopping", "book", "general object recognition", "local", "vehicle",
        "plants and gardening", "style and fashion", "food", "text understanding",
        "sports and games", "math and science",
    ),
    "query_category": (
        "reasoning", "simple-knowledge", "comparison", "simple-recognition", "multi-hop",
        "aggregation",
    ),
    "dynamism": ("fast-changing", "static", "slow-changing", "real-time"),
    "image_quality": ("rotated", "truncated", "occluded", "low light", "blurred", "normal"),
    "is_ego": ("false", "true"),
    "turn": tuple(str(i) for i in range(9)),
}  # fmt: skip
SLICE_COLUMNS = (
    "run_id", "dimension", "value", "count", "primary", "primary_ci_low", "primary_ci_high",
    "metrics",
)  # fmt: skip
HEADLINE_COLUMNS = (
    "run_id", "split_id", "setting", "count", "primary", "primary_ci_low", "primary_ci_high",
    "metrics", "dimensions",
)  # fmt: skip


def block(rng: random.Random, skill: float, turns: int) -> dict[str, object]:
    """A metric block shaped like the evaluator's, around a submission's ``skill``."""
    accuracy = min(max(rng.gauss(0.25 + 0.5 * skill, 0.05), 0.0), 1.0)
    hallucination = min(max(rng.gauss(0.45 - 0.35 * skill, 0.05), 0.0), 1.0 - accuracy)
    truthfulness = accuracy - hallucination
    return {
        "turns": turns,
        "conversations": max(turns // 2, 1),
        "accuracy": accuracy,
        "exact_match": accuracy / 3,
        "missing": 1.0 - accuracy - hallucination,
        "hallucination_rate": hallucination,
        "truthfulness_turn": truthfulness,
        "truthfulness": truthfulness,
        "truthfulness_ci95": [truthfulness - 0.03, truthfulness + 0.03],
        "early_stop_rate": rng.random() * 0.3,
        "avg_successful_turns": 1 + rng.random() * 2,
    }


def slice_row(run_id: int, dimension: str, value: str, metrics: dict[str, object]) -> tuple:
    low, high = metrics["truthfulness_ci95"]  # type: ignore[misc]
    return (
        run_id, dimension, value, metrics["turns"], metrics["truthfulness"], low, high,
        json.dumps(metrics),
    )  # fmt: skip


def copy_into(table: str, columns: tuple[str, ...]) -> sql.Composed:
    return sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
    )


def recreate_database(server: str, name: str) -> str:
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return f"{server}/{name}"


def seed(teams: int, submissions: int, seed_value: int) -> dict[str, int]:
    """Write the leaderboard data into the configured database; returns row counts."""
    from django.db import connection, transaction
    from django.utils import timezone

    from leaderboard import board_store
    from leaderboard.models import Challenge, EvaluationRun, Split, Submission, Task, Team

    rng = random.Random(seed_value)
    now = timezone.now()
    challenge = Challenge.objects.create(
        name="CRAG-MM 2026 (bench)", slug="crag-mm-bench", is_published=True
    )
    splits = [
        Split.objects.create(
            task=Task.objects.create(challenge=challenge, task_id=task_id, name=task_id, order=i),
            kind=Split.Kind.PUBLIC_TEST,
        )
        for i, task_id in enumerate(TASK_IDS)
    ]
    team_rows = Team.objects.bulk_create(Team(name=f"team-{i:04d}") for i in range(teams))
    organisers = Team.objects.create(name="organisers")
    skill = {team.pk: rng.random() for team in team_rows}
    subs: list[Submission] = []
    for i in range(submissions):
        baseline = i < 4
        team = organisers if baseline else rng.choice(team_rows)
        subs.append(
            Submission(
                team=team,
                challenge=challenge,
                artifact_kind=Submission.ArtifactKind.REGISTRY_REF,
                registry_ref=f"registry.example/{team.name}/agent:{i}",
                method_name=f"baseline-{i}" if baseline else f"rag-agent-v{i}",
                paper_url="https://example.org/paper" if i % 7 == 0 else "",
                code_url="https://example.org/code" if i % 5 == 0 else "",
                is_baseline=baseline,
                state=Submission.State.READY,
                created_at=now - timedelta(minutes=rng.randrange(60 * 24 * 60)),
            )
        )
    with transaction.atomic():
        Submission.objects.bulk_create(subs, batch_size=2000)
        runs = EvaluationRun.objects.bulk_create(
            (
                EvaluationRun(
                    submission=sub,
                    task_id=split.task_id,
                    split=split,
                    state=EvaluationRun.State.DONE,
                    judge_id="openai:gpt-4o@2024-08-06",
                    scored_with={"counting": "paper"},
                    scores_complete=True,
                    finished_at=now,
                )
                for sub in subs
                for split in splits
            ),
            batch_size=2000,
        )
        slice_rows = 0
        headlines = []
        dimensions = sorted(SLICE_VALUES)
        with (
            connection.cursor() as cursor,
            cursor.connection.cursor().copy(
                copy_into("leaderboard_slicescore", SLICE_COLUMNS)
            ) as copy,
        ):
            for run in runs:
                level = skill.get(run.submission.team_id, 0.5) + rng.gauss(0, 0.1)
                whole = slice_row(run.pk, "all", "all", block(rng, level, 1200))
                copy.write_row(whole)
                headlines.append((run.pk, run.split_id, "", *whole[3:], dimensions))
                for dimension, values in SLICE_VALUES.items():
                    for value in values:
                        turns = rng.randrange(20, 200)
                        copy.write_row(
                            slice_row(run.pk, dimension, value, block(rng, level, turns))
                        )
                        slice_rows += 1
        with (
            connection.cursor() as cursor,
            cursor.connection.cursor().copy(
                copy_into("leaderboard_headline", HEADLINE_COLUMNS)
            ) as copy,
        ):
            for headline in headlines:
                copy.write_row(headline)
        board_store.results_changed(*(split.pk for split in splits))
    with connection.cursor() as cursor:  # the steady state autovacuum keeps a live database in
        cursor.execute("VACUUM ANALYZE")
    return {"teams": teams, "submissions": submissions, "runs": len(runs), "slices": slice_rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="podium_bench")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--teams", type=int, default=1000)
    parser.add_argument("--submissions", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.teams < 1 or args.submissions < args.teams:
        parser.error("need at least one team and at least as many submissions as teams")
    os.environ["DATABASE_URL"] = recreate_database(args.server, args.database)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    counts = seed(args.teams, args.submissions, args.seed)
    print(f"seeded {os.environ['DATABASE_URL']}: {counts} in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
