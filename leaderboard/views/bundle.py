"""Challenges as code on the web: the bundle's JSON Schema, published for editors; the
organiser's page to upload, check and import a bundle, and download the live challenge as one;
a new challenge from a bundle (staff); the challenge's logo (a bundle's ``challenge.logo``),
served to whoever sees the challenge."""

from __future__ import annotations

import tempfile
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from leaderboard.challenge_bundle import admission, uploads
from leaderboard.challenge_bundle.exporter import export_zip
from leaderboard.challenge_bundle.problems import BundleInvalid
from leaderboard.challenge_bundle.schema import schema_text
from leaderboard.models import Challenge
from leaderboard.permissions import is_organiser, signed_in, visible_challenges

LOGO_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".webp": "image/webp"}


@require_GET
def schema(request: HttpRequest) -> HttpResponse:
    """``/schemas/challenge-bundle.json``: what ``challenge.yaml`` may hold."""
    response = HttpResponse(schema_text(), content_type="application/schema+json")
    response["Access-Control-Allow-Origin"] = "*"  # editors fetch it from anywhere
    return response


@require_GET
def logo(request: HttpRequest, slug: str) -> FileResponse:
    """``/c/<slug>/logo/``: the challenge's logo, as stored (its address carries its digest,
    so it is cached for a year)."""
    challenge = get_object_or_404(visible_challenges(request.user), slug=slug)
    name = challenge.logo.name  # set by the bundle's importer alone, with a suffix it checked
    if not name:
        raise Http404(f"{challenge.name} has no logo")
    suffix = name[name.rfind(".") :]
    response = FileResponse(default_storage.open(name, "rb"), content_type=LOGO_TYPES[suffix])
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    response["X-Content-Type-Options"] = "nosniff"
    return response


@login_required
def organise(request: HttpRequest, slug: str) -> HttpResponse:
    """``/c/<slug>/bundle/``: the challenge as code, for its organisers: upload a bundle to
    check it (the diff and the publish checklist) or import it as a new version; download the
    live challenge as a bundle; the versions so far."""
    challenge = get_object_or_404(Challenge, slug=slug)
    if not is_organiser(request.user, challenge):
        raise PermissionDenied(f"only the organisers of {challenge.name} change it")
    context: dict[str, Any] = {"challenge": challenge}
    if request.method == "POST":
        context |= _uploaded(request, slug)
        challenge.refresh_from_db()
    context["versions"] = challenge.versions.select_related("imported_by")[:20]
    return render(request, "leaderboard/challenge_bundle.html", context)


@login_required
def create(request: HttpRequest) -> HttpResponse:
    """``/challenges/new/``: a new challenge from a bundle, for whoever may create one (staff,
    as ``admission.may_change`` says; decided before the upload is read): check it (the
    changes, each page's text diff, the publish checklist), then import it."""
    if not admission.may_change(signed_in(request.user), None):
        raise PermissionDenied("only staff create a challenge")
    context: dict[str, Any] = {}
    if request.method == "POST":
        context |= _uploaded(request, None)
        outcome = context.get("outcome")
        if outcome is not None and outcome.version is not None:
            context["created"] = Challenge.objects.get(slug=outcome.slug)
    return render(request, "leaderboard/challenge_new.html", context)


def _uploaded(request: HttpRequest, slug: str | None) -> dict[str, Any]:
    """The form's bundle checked or imported (of challenge ``slug``, when given): the
    template's ``action``, ``redo_runs``, ``outcome`` or ``problems``, or ``error``."""
    action = request.POST.get("action", "")
    upload = request.FILES.get("bundle")
    if action not in ("validate", "import"):
        return {"error": "choose Check or Import"}
    if upload is None:
        return {"error": "choose a bundle (a zip with challenge.yaml at its root)"}
    redo_runs = request.POST.get("redo_runs") == "1"
    context: dict[str, Any] = {"action": action, "redo_runs": redo_runs}
    try:
        context["outcome"] = uploads.run(
            upload, action, signed_in(request.user), "upload", slug, redo_runs=redo_runs
        )
    except BundleInvalid as exc:
        context["problems"] = exc.problems
    return context


@login_required
@require_GET
def download(request: HttpRequest, slug: str) -> FileResponse:
    """The live challenge as a bundle zip, private splits included (organisers only)."""
    challenge = get_object_or_404(Challenge, slug=slug)
    if not is_organiser(request.user, challenge):
        raise PermissionDenied(f"only the organisers of {challenge.name} export it")
    return zip_response(challenge)


def zip_response(challenge: Challenge) -> FileResponse:
    """The challenge as a bundle zip, private splits included, as a download (the caller has
    checked that the user organises it)."""
    out = tempfile.TemporaryFile()  # noqa: SIM115 (FileResponse closes it)
    export_zip(challenge, out, private=True)
    out.seek(0)
    return FileResponse(
        out, as_attachment=True, filename=f"{challenge.slug}.zip", content_type="application/zip"
    )
