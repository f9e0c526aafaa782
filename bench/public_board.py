"""What the public board's rules cost (``leaderboard.public_board``): ranking a board again and
the first view after it, with no rule, a freeze, the Ladder and both.

Usage: python bench/public_board.py [--database podium_bench] [--views 9]

Seed the database first (``bench/seed_leaderboard.py``: 1,000 teams, 5,000 submissions). For
each rule: the median wall time of ``board_store.results_changed`` on the seeded public test
(ranking its board again), then of the first view of its leaderboard page after that change
(nothing cached), and of ``public_board.stale`` (what every view of a board asks first).
The rules are set by queryset updates (no receiver ranks anything meanwhile) and put back.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BOARD = "/c/crag-mm-bench/multi-turn-qa/public-test/"
RULES = {  # freeze_days, ladder_threshold
    "no rule": (None, None),
    "freeze (last 3 days)": (3, None),
    "Ladder (0.01)": (None, 0.01),
    "freeze and Ladder": (3, 0.01),
}


def _median_ms(action: Callable[[], object], times: int) -> float:
    found = []
    for _ in range(times):
        started = time.perf_counter()
        action()
        found.append((time.perf_counter() - started) * 1000)
    return statistics.median(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="podium_bench")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--views", type=int, default=9)
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = f"{args.server}/{args.database}"
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")
    import django

    django.setup()
    from django.test import Client
    from django.utils import timezone

    from leaderboard import board_store, public_board
    from leaderboard.models import Challenge, Phase, Split

    split = Split.objects.select_related("task__challenge").get(
        task__task_id="multi-turn-qa", kind=Split.Kind.PUBLIC_TEST
    )
    challenge = split.task.challenge
    now = timezone.now()
    phase, _ = Phase.objects.get_or_create(
        challenge=challenge,
        name="bench",
        defaults={"starts_at": now - timedelta(days=30), "ends_at": now + timedelta(days=1)},
    )
    client = Client()
    split_id = split.pk

    def first_view() -> float:
        """A change of the board's results, then the wall time of the page's first view."""
        board_store.results_changed(split_id)
        started = time.perf_counter()
        assert client.get(BOARD).status_code == 200
        return (time.perf_counter() - started) * 1000

    print("| rule | results_changed (ms) | first view after it (ms) | stale check (ms) |")
    print("| --- | --- | --- | --- |")
    try:
        for name, (days, threshold) in RULES.items():
            Challenge.objects.filter(pk=challenge.pk).update(
                freeze_days=days, ladder_threshold=threshold
            )
            fresh = Split.objects.select_related("task__challenge").get(pk=split_id)
            change = _median_ms(partial(board_store.results_changed, split_id), args.views)
            view = statistics.median(first_view() for _ in range(args.views))
            stale = _median_ms(partial(public_board.stale, fresh), args.views)
            print(f"| {name} | {change:.1f} | {view:.1f} | {stale:.2f} |")
    finally:
        Challenge.objects.filter(pk=challenge.pk).update(freeze_days=None, ladder_threshold=None)
        phase.delete()
        board_store.results_changed(split_id)


if __name__ == "__main__":
    main()
