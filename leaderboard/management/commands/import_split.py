"""``manage.py import_split --task <challenge>/<task-id> --kind private-test DIR``: the task's
benchmark reads DIR (``--protocol`` states which it must be)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from evaluator.benchmarks import names
from leaderboard.models import Split
from leaderboard.splits import SplitImportError, find_task, import_split_dir


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(f"--reveal-at {text!r}: expected an ISO date-time") from None
    return moment if timezone.is_aware(moment) else moment.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = (
        "Validate a split directory with the task's benchmark (Podium's split format or the "
        "benchmark's released layout: CRAG-MM's Hugging Face data, Visual-RAG's v1_anno.jsonl "
        "beside images/) and store it as the task's split bundle, with its sha256. "
        "Participants can never download it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", help="the split directory")
        parser.add_argument("--task", required=True, help="<challenge-slug>/<task-id>")
        parser.add_argument("--kind", required=True, choices=Split.Kind.values)
        parser.add_argument(
            "--protocol",
            choices=names(),
            help="the benchmark the task must have (a check: the task decides how DIR is read)",
        )
        parser.add_argument("--hf-split", help="which split of a Hugging Face dataset to read")
        parser.add_argument("--visibility", choices=Split.Visibility.values)
        parser.add_argument("--reveal-at", type=_moment, help="ISO date-time (UTC if no zone)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            task = find_task(options["task"])
            if options["protocol"] and options["protocol"] != task.benchmark:
                raise SplitImportError(
                    f"task {task} is a {task.benchmark} task, not {options['protocol']}"
                )
            notes: list[str] = []
            split = import_split_dir(
                task,
                options["kind"],
                options["directory"],
                hf_split=options["hf_split"],
                visibility=options["visibility"],
                reveal_at=options["reveal_at"],
                notes=notes,
            )
        except SplitImportError as e:
            raise CommandError(str(e)) from e
        for note in notes:
            self.stdout.write(f"converted: {note}")
        benchmark = task.declared()
        self.stdout.write(
            f"imported {split}: {split.groups} {benchmark.groups}, {split.items} "
            f"{benchmark.unit}, sha256 {split.sha256}"
        )
