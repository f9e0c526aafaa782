"""The starter kit pages: ``/c/<slug>/kit/`` says what is in it, and its two downloads stream
the kit archive and the agent base image (``leaderboard.kits``)."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from leaderboard import permissions
from leaderboard.kits import archive, base_image, contents, downloads
from leaderboard.models import Challenge

log = logging.getLogger(__name__)


def _kit_challenge(request: HttpRequest, slug: str) -> Challenge | HttpResponse:
    """The challenge, or the redirect to its rules when the user must accept them first."""
    challenge = get_object_or_404(permissions.visible_challenges(request.user), slug=slug)
    if refusal := downloads.rules_refusal(permissions.signed_in(request.user), challenge):
        messages.info(request, refusal[0].upper() + refusal[1:] + ".")
        return redirect(f"{reverse('leaderboard:challenge', args=[slug])}?tab=rules")
    return challenge


def _unavailable(
    request: HttpRequest, challenge: Challenge, problem: str, status: int = 503
) -> HttpResponse:
    return render(
        request, "leaderboard/kit.html", {"challenge": challenge, "problem": problem}, status=status
    )


@login_required
def kit_page(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = _kit_challenge(request, slug)
    if isinstance(challenge, HttpResponse):
        return challenge
    plan = contents.plan(challenge)
    context = {
        "challenge": challenge,
        "plan": plan,
        "kit": archive.stored_kit(plan),
        "base_images": base_image.saved_base_images(),
        "organiser": permissions.is_organiser(request.user, challenge),
    }
    return render(request, "leaderboard/kit.html", context)


@login_required
def kit_download(request: HttpRequest, slug: str) -> HttpResponseBase:
    challenge = _kit_challenge(request, slug)
    if isinstance(challenge, HttpResponse):
        return challenge
    plan = contents.plan(challenge)
    try:
        stored = archive.kit_archive(plan)
    except archive.KitError as exc:
        log.error("starter kit of %s: %s", challenge.slug, exc)
        return _unavailable(
            request, challenge, "The starter kit cannot be made now: Podium's stored copy of "
            "its data is damaged. The organisers can see why in the server's log."
        )  # fmt: skip
    return downloads.streamed(stored, plan.filename)


@login_required
def base_image_download(request: HttpRequest, slug: str) -> HttpResponseBase:
    challenge = _kit_challenge(request, slug)
    if isinstance(challenge, HttpResponse):
        return challenge
    try:
        saved = base_image.base_image_archive(request.GET.get("image"))
    except base_image.BaseImageError as exc:
        return _unavailable(request, challenge, f"Not a base image: {exc}.", status=400)
    except (base_image.ImageMissing, base_image.EngineUnavailable) as exc:
        log.warning("base image download for %s: %s", challenge.slug, exc)
        return _unavailable(request, challenge, base_image.unavailable_reason(exc))
    return downloads.streamed(saved.archive, saved.filename)
