"""The panel's "repeat the final entries" of a split (``leaderboard.repeat_entries``): only the
challenge's organisers, with the reason the teams read."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from leaderboard.models import Split
from leaderboard.permissions import signed_in
from leaderboard.repeat_entries import repeat_final_entries
from leaderboard.run_actions import RunActionRefused
from leaderboard.views.panel import _organised

logger = logging.getLogger(__name__)


@login_required
@require_POST
def panel_repeat(request: HttpRequest, slug: str) -> HttpResponse:
    """Repeat the final entries of the split chosen (``split``), with the reason given."""
    challenge = _organised(request, slug)
    split_id = request.POST.get("split", "")
    split = get_object_or_404(
        Split.objects.select_related("task"),
        pk=int(split_id) if split_id.isdigit() else 0,
        task__challenge=challenge,
    )
    listed = QueryDict(request.POST.get("query", "")).urlencode()
    back = redirect(f"{reverse('leaderboard:panel', args=[challenge.slug])}?{listed}")
    try:
        acted, refused = repeat_final_entries(
            split, signed_in(request.user), request.POST.get("why", "")
        )
    except RunActionRefused as exc:
        messages.error(request, f"Nothing repeated: {exc}.")
        return back
    logger.info("final entries of split #%s repeated by %s from the panel", split.pk, request.user)
    k, plural = split.task.final_repeats, "entry" if acted == 1 else "entries"
    messages.success(request, f"{acted} {plural} of {split} repeated up to {k} runs each.")
    for line in refused:
        messages.warning(request, f"Not repeated: {line}.")
    return back
