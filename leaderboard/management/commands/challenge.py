"""``manage.py challenge validate|import|diff|export|schema``: challenges as code
(``docs/challenge-bundle.md``).

- ``validate BUNDLE``: every problem at once (file:line: field: message), then the publish
  checklist, by importing in a transaction that is rolled back; exit status 1 on a problem.
- ``diff BUNDLE``: what importing it would change.
- ``import BUNDLE [--as USER] [--redo-runs]``: applied as a new version (nothing when
  unchanged); ``--as``: who may is decided before the bundle is unpacked (``admission``);
  ``--redo-runs``: a split that gets a new version (its data changed under its
  runs) runs its submissions again on it (``validate`` and ``diff`` take it too: the preview).
- ``export SLUG OUT [--as USER] [--zip]``: the live challenge as a bundle; private test splits
  only when the user (none: the command line, an operator) organises it.
- ``schema``: the JSON Schema of challenge.yaml.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.challenge_bundle.admission import may_change
from leaderboard.challenge_bundle.exporter import export, export_zip
from leaderboard.challenge_bundle.importer import Outcome, import_bundle
from leaderboard.challenge_bundle.problems import BundleInvalid
from leaderboard.challenge_bundle.schema import schema_text
from leaderboard.models import Challenge


class Command(BaseCommand):
    help = "Validate, import, diff or export a challenge bundle; print the bundle's JSON Schema."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        for name, what in (
            ("validate", "check a bundle: every problem, then the publish checklist"),
            ("diff", "what importing a bundle would change"),
            ("import", "import a bundle as a new version of its challenge"),
        ):
            sub = actions.add_parser(name, help=what)
            sub.add_argument("bundle", help="a bundle directory or zip")
            sub.add_argument("--as", dest="user", help="act as this user (default: operator)")
            sub.add_argument(
                "--redo-runs",
                action="store_true",
                help="a split whose data changed under its runs becomes a new version: run "
                "the submissions that had runs on it again on the new version",
            )
        sub = actions.add_parser("export", help="write a live challenge as a bundle")
        sub.add_argument("slug")
        sub.add_argument("out", help="a new directory (or, with --zip, a .zip file)")
        sub.add_argument("--zip", action="store_true", help="write a zip file")
        sub.add_argument("--as", dest="user", help="act as this user (default: operator)")
        actions.add_parser("schema", help="print the JSON Schema of challenge.yaml")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "schema":
            self.stdout.write(schema_text(), ending="")
            return
        user = self._user(options["user"])
        try:
            if action == "export":
                self._export(options["slug"], Path(options["out"]), options["zip"], user)
                return
            outcome = import_bundle(
                options["bundle"],
                user,
                "manage.py",
                dry_run=action != "import",
                redo_runs=options["redo_runs"],
            )
        except BundleInvalid as exc:
            for problem in exc.problems:
                self.stderr.write(str(problem))
            raise CommandError(f"{len(exc.problems)} problem(s) in {options['bundle']}") from None
        except PermissionDenied as exc:
            raise CommandError(str(exc)) from None
        self._report(action, outcome)

    def _user(self, name: str | None) -> User | None:
        if name is None:
            return None
        found = get_user_model().objects.filter(username=name).first()
        if found is None:
            raise CommandError(f"--as {name!r}: no such user")
        return found

    def _report(self, action: str, outcome: Outcome) -> None:
        say = self.stdout.write
        if outcome.unchanged:
            say(f"{outcome.slug}: unchanged")
        else:
            say(f"{outcome.slug}: {len(outcome.changes)} change(s)")
            for line in outcome.changes:
                say(f"  {line}")
            for text in outcome.pages.values():  # each changed page's text diff
                for line in text:
                    say(f"    {line}")
        if action == "validate":
            for problem in outcome.checklist:
                say(f"publish checklist: {problem}")
            say("valid" + ("" if outcome.checklist else "; the publish checklist passes"))
        elif action == "import" and outcome.version is not None:
            say(f"imported {outcome.slug} as version {outcome.version}")

    def _export(self, slug: str, out: Path, as_zip: bool, user: User | None) -> None:
        challenge = Challenge.objects.filter(slug=slug).first()
        if challenge is None or not may_change(user, challenge):
            raise CommandError(f"challenge {slug!r}: none that you organise")
        if as_zip:
            with out.open("xb") as f:
                left_out = export_zip(challenge, f, private=True)
        else:
            left_out = export(challenge, out, private=True)
        for split in left_out:
            self.stdout.write(f"left out: {split} (a private split)")
        self.stdout.write(f"exported {slug} to {out}")
