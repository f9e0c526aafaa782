"""The operator page (staff only): live workers and their nodes, queue depths, runs by state,
and the runs that need an operator, each with one-click re-queue and cancel (POST, CSRF,
logged as a ``RunAction`` through ``leaderboard.run_actions``)."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from leaderboard import operations, run_actions
from leaderboard.models import EvaluationRun
from leaderboard.monitoring import runs_by_state

logger = logging.getLogger("podium.operations")
ACTIONS = {
    "requeue": ("re-queued", run_actions.requeue),
    "cancel": ("cancelled", run_actions.cancel),
}


def _staff_only(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise PermissionDenied("only Podium's staff see the operator page")


@login_required
def operator_page(request: HttpRequest) -> HttpResponse:
    _staff_only(request)
    context = {
        "workers": operations.workers(),
        "depths": operations.depths(),
        "states": runs_by_state(),
        "attention": operations.needing_attention(),
        "inspect_timeout": operations.INSPECT_TIMEOUT_S,
        "actions": [("requeue", "Re-queue"), ("cancel", "Cancel")],
    }
    return render(request, "leaderboard/operator.html", context)


@login_required
@require_POST
def operator_action(request: HttpRequest, run_id: int, action: str) -> HttpResponse:
    """Re-queue or cancel one run, with the reason given (kept with the logged action; the
    team reads it) and the detail (why it was listed: the worker; the team never reads it)."""
    _staff_only(request)
    if action not in ACTIONS:
        raise PermissionDenied(f"unknown action {action!r}: expected requeue or cancel")
    done, perform = ACTIONS[action]
    run = get_object_or_404(EvaluationRun, pk=run_id)
    try:
        detail = request.POST.get("detail", "")[:300]
        refused = perform([run], request.user, request.POST.get("why", ""), detail)
    except run_actions.RunActionRefused as exc:
        messages.error(request, f"Run #{run.pk} not {done}: {exc}.")
        return redirect("leaderboard:operator")
    if refused:
        messages.warning(request, f"Not {done}: {refused[0]}.")
    else:
        logger.info("run #%s %s by %s from the operator page", run.pk, done, request.user)
        messages.success(request, f"Run #{run.pk} {done}.")
    return redirect("leaderboard:operator")
