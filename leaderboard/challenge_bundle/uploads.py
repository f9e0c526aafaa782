"""A bundle uploaded (the API, the organiser's page): the zip as received, checked and
imported, diffed or validated as ``manage.py challenge`` does, for the user who sent it (who
may is decided before it is unpacked: ``admission``)."""

from __future__ import annotations

import tempfile
from functools import partial
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile

from leaderboard.challenge_bundle.importer import Outcome, import_bundle

ACTIONS = ("validate", "diff", "import")


def run(
    upload: UploadedFile[bytes],
    action: str,
    user: User,
    via: str,
    slug: str | None = None,
    redo_runs: bool = False,
) -> Outcome:
    """``action`` (one of ``ACTIONS``) on the uploaded zip (of challenge ``slug``, when given);
    ``redo_runs``: as ``import_bundle``'s. Raises ``BundleInvalid``, ``PermissionDenied``."""
    run_on = partial(
        import_bundle,
        user=user,
        via=via,
        dry_run=action != "import",
        slug=slug,
        redo_runs=redo_runs,
        shown=upload.name or "bundle.zip",
    )
    if isinstance(upload, TemporaryUploadedFile):  # on disk already (FILE_UPLOAD_HANDLERS)
        return run_on(upload.temporary_file_path())
    with tempfile.TemporaryDirectory(prefix="podium-upload-") as scratch:
        path = Path(scratch) / "bundle.zip"
        with path.open("wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        return run_on(path)


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    return {
        "challenge": outcome.slug,
        "unchanged": outcome.unchanged,
        "changes": outcome.changes,
        "pages": outcome.pages,
        "version": outcome.version,
        "checklist": outcome.checklist,
        "runs_queued": outcome.runs_queued,
    }
