"""The organisers' bulk export of a challenge's answers and verdicts
(``leaderboard.answer_export``): ``/c/<slug>/answers/``, a page of links (the whole challenge,
each split, as CSV, JSON Lines or Parquet), and ``/c/<slug>/answers.<csv|jsonl|parquet>``
(``?task=&split=`` for one split), streamed."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseBadRequest, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from leaderboard import answer_export
from leaderboard.models import Challenge, Split
from leaderboard.permissions import is_organiser


def _organised(request: HttpRequest, slug: str) -> Challenge:
    challenge = get_object_or_404(Challenge, slug=slug)
    if not is_organiser(request.user, challenge):
        raise PermissionDenied(f"only the organisers of {challenge.name} export its answers")
    return challenge


@login_required
@require_GET
def export_page(request: HttpRequest, slug: str) -> HttpResponseBase:
    """The export's links: the whole challenge, then each task's splits."""
    challenge = _organised(request, slug)
    splits = (
        Split.objects.current()
        .filter(task__challenge=challenge)
        .select_related("task")
        .order_by("task__order", "task__task_id", "kind")
    )
    context = {"challenge": challenge, "splits": splits, "formats": list(answer_export.FORMATS)}
    return render(request, "leaderboard/answer_export.html", context)


@login_required
@require_GET
def export_download(request: HttpRequest, slug: str, fmt: str) -> HttpResponseBase:
    challenge = _organised(request, slug)
    return response(challenge, fmt, request.GET.get("task", ""), request.GET.get("split", ""))


def response(challenge: Challenge, fmt: str, task: str, split: str) -> HttpResponseBase:
    """The export as a streamed download, or 400 saying what was wrong with the request (the
    caller has checked that the user organises ``challenge``)."""
    try:
        lines = answer_export.streamed(challenge, fmt, task, split)
    except answer_export.ExportRefused as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    out = StreamingHttpResponse(lines, content_type=answer_export.FORMATS[fmt])
    name = answer_export.filename(challenge, fmt, task, split)
    out["Content-Disposition"] = f'attachment; filename="{name}"'
    return out
