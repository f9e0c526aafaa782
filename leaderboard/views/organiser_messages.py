"""The organisers' messages page of a challenge (``/c/<slug>/messages/``): write a plain-text
message to everyone taking part or to the teams of one task, see how many people that is
(and how many turned organisers' messages off), send it (``leaderboard.mailing``: one e-mail
per person, off the request), and the messages sent so far with their state.

Who is asking is decided first: a challenge the user may not see is not found, and a
non-organiser is refused, before anything posted is read."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from leaderboard import mailing, permissions
from leaderboard.mailing import MailError
from leaderboard.models import Challenge, Mailing
from leaderboard.models.mail import BODY_MAX_CHARS, SUBJECT_MAX_CHARS

PER_PAGE = 20


def _organised(request: HttpRequest, slug: str) -> Challenge:
    challenge = get_object_or_404(permissions.visible_challenges(request.user), slug=slug)
    if not permissions.is_organiser(request.user, challenge):
        raise PermissionDenied(f"only the organisers of {challenge.name} send its messages")
    return challenge


@login_required
def messages_page(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the form and the log. POST ``preview``: the message as it will go and to how many;
    ``send``: queued, then back to the page (a reload sends nothing again)."""
    challenge = _organised(request, slug)  # before anything posted is read
    by = permissions.signed_in(request.user)
    written = {
        "audience": request.POST.get("audience", mailing.EVERYONE),
        "subject": request.POST.get("subject", ""),
        "body": request.POST.get("body", ""),
    }
    preview = None
    status = 200
    if request.method == "POST":
        try:
            if request.POST.get("action") == "send":
                sent = mailing.send_message(
                    challenge, by, written["audience"], written["subject"], written["body"]
                )
                messages.success(
                    request,
                    f"Message #{sent.pk} is queued for {len(sent.recipients)} "
                    f"{_people(len(sent.recipients))}; its state is below.",
                )
                return redirect("leaderboard:messages", slug=challenge.slug)
            preview = mailing.preview(challenge, written["audience"], written["subject"],
                                      written["body"])  # fmt: skip
        except MailError as exc:
            messages.error(request, f"Not sent: {exc}.")
            status = 400
    sent_so_far = Mailing.objects.filter(challenge=challenge, kind=Mailing.Kind.MESSAGE)
    page = Paginator(sent_so_far.select_related("sent_by"), PER_PAGE).get_page(
        request.GET.get("page")
    )
    choices = [
        (found, mailing.reach(mailing.people(found.teams, challenge), Mailing.Kind.MESSAGE))
        for found in mailing.audiences(challenge)
    ]
    context = {
        "challenge": challenge,
        "choices": choices,
        "written": written,
        "preview": preview,
        "page": page,
        "subject_max": SUBJECT_MAX_CHARS,
        "body_max": BODY_MAX_CHARS,
    }
    return render(request, "leaderboard/messages.html", context, status=status)


def _people(count: int) -> str:
    return "person" if count == 1 else "people"
