"""``manage.py warm_search [--challenge SLUG ...]``: on a worker node that joins, fetch each
challenge's search corpus and build (or read back) its search indexes in this node's cache
(``PODIUM_SEARCH_CACHE``) before the first run needs them, so that run does not pay for it."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.models import Task
from leaderboard.pipeline.bundles import corpus_dir


class Command(BaseCommand):
    help = (
        "Build this node's search indexes for the published challenges' tasks that enable "
        "search (or only --challenge SLUG ones): the corpus comes from storage, the encoders ship "
        "with Podium; indexes already in the cache are read, not rebuilt."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--challenge", action="append", default=[], help="a challenge's slug")

    def handle(self, *args: Any, **options: Any) -> None:
        from workers.search.engine import SearchEngine  # faiss and torch: only here

        tasks = Task.objects.select_related("challenge").order_by("challenge__slug", "order")
        if options["challenge"]:
            tasks = tasks.filter(challenge__slug__in=options["challenge"])
            missing = set(options["challenge"]) - {task.challenge.slug for task in tasks}
            if missing:
                raise CommandError(f"no task of challenge(s) {sorted(missing)} to warm")
        else:
            tasks = tasks.filter(challenge__is_published=True)
        warmed = 0
        for task in tasks:
            benchmark = task.declared()
            searching = task.image_search_enabled or task.web_search_enabled
            if not (searching and benchmark.searches and benchmark.search_corpus):
                continue
            directory = corpus_dir(task.challenge)
            if directory is None:
                self.stderr.write(f"{task}: search is on but the challenge has no corpus stored")
                continue
            engine = SearchEngine(directory)
            engine.prepare(task.task_id)
            built = ", ".join(
                f"{name} {'built' if fresh else 'read from the cache'}"
                for name, fresh in sorted(engine.indexes_built.items())
            )
            self.stdout.write(f"{task}: {built}")
            warmed += 1
        self.stdout.write(f"{warmed} task(s) warmed")
