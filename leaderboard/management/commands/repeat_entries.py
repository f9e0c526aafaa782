"""``manage.py repeat_entries SLUG TASK SPLIT --why REASON``: the organisers' "repeat the final
entries" of a split from the command line (an operator's: ``leaderboard.repeat_entries``),
its current version; the teams read the reason."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.models import Split
from leaderboard.repeat_entries import repeat_final_entries
from leaderboard.run_actions import RunActionRefused


class Command(BaseCommand):
    help = "Run every ranked entry of a split again, up to its task's final_repeats runs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="the challenge")
        parser.add_argument("task", help="the task id")
        parser.add_argument("split", choices=Split.Kind.values, help="the split's kind")
        parser.add_argument("--why", required=True, help="the reason; the teams read it")

    def handle(self, *args: Any, **options: Any) -> None:
        split = (
            Split.objects.current()
            .select_related("task")
            .filter(
                task__challenge__slug=options["slug"],
                task__task_id=options["task"],
                kind=options["split"],
            )
            .first()
        )
        if split is None:
            where = f"{options['slug']}/{options['task']}/{options['split']}"
            raise CommandError(f"no split {where}")
        try:
            acted, refused = repeat_final_entries(split, AnonymousUser(), options["why"])
        except RunActionRefused as exc:
            raise CommandError(f"nothing repeated: {exc}") from None
        for line in refused:
            self.stdout.write(f"not repeated: {line}")
        k = split.task.final_repeats
        self.stdout.write(f"{acted} entries of {split} repeated up to {k} runs each")
