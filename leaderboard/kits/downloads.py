"""What the kit's pages and API endpoints share: who may download, and the streamed answer.

A kit goes to signed-in users who may see the challenge (a draft: its organisers only) and have
accepted its current rules (organisers need not, as for submitting). The archive is streamed
from storage in chunks with its size and sha256 (``X-Content-SHA256``), never read whole.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import FileResponse

from leaderboard import pages, permissions
from leaderboard.kits.store import StoredArchive
from leaderboard.models import Challenge, TermsAcceptance

SHA256_HEADER = "X-Content-SHA256"


def rules_refusal(user: User, challenge: Challenge) -> str | None:
    """Why ``user`` may not download the kit yet (the rules to accept), or None."""
    if permissions.is_organiser(user, challenge) or not pages.must_accept_rules(user, challenge):
        return None
    changed = TermsAcceptance.objects.filter(user=user, challenge=challenge).exists()
    return (
        f"accept the rules of {challenge.name} to download its starter kit (the Rules tab of "
        f"its page, /c/{challenge.slug}/?tab=rules)"
        + ("; they changed since you last accepted them" if changed else "")
    )


def streamed(archive: StoredArchive, filename: str) -> FileResponse:
    response = FileResponse(archive.open(), as_attachment=True, filename=filename)
    response["Content-Length"] = str(archive.size)
    response[SHA256_HEADER] = archive.sha256
    response["Cache-Control"] = "private, no-store"
    return response
