"""Judge audits' pages: the organisers' list (open one on a split and a judge), an audit's
results (figures, slices, disagreements, labellers, export, finish), and the labelling page,
where an organiser or an invited labeller labels one item after another from the keyboard
(``leaderboard/static/leaderboard/label.js``; without it the buttons post as usual).

The labelling page and its image never carry the judge's verdict; the results and exports are
the organisers' only (``leaderboard.permissions``)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from leaderboard import audit_results, audits, permissions
from leaderboard.audit_results import export_csv, export_record, results
from leaderboard.models import AuditItem, AuditLabel, Challenge, JudgeAudit, Split
from leaderboard.models.audit import DEFAULT_SIZE, MAX_SIZE
from leaderboard.permissions import signed_in
from leaderboard.views.run_live import thumbnail_response

ANSWER_CHARS = 1500  # an answer longer than this is shown cut, saying how much is left out


def _organised(request: HttpRequest, challenge: Challenge) -> None:
    if not permissions.is_organiser(request.user, challenge):
        raise PermissionDenied(f"only the organisers of {challenge.name} audit its judges")


def _audit(request: HttpRequest, audit_id: int) -> JudgeAudit:
    return get_object_or_404(
        JudgeAudit.objects.select_related("split__task__challenge"), pk=audit_id
    )


def _messages(error: ValidationError) -> list[str]:
    if hasattr(error, "error_dict"):
        return [f"{field}: {m}" for field, found in error.message_dict.items() for m in found]
    return list(error.messages)


@login_required
def audit_list(request: HttpRequest, slug: str) -> HttpResponse:
    """Every audit of the challenge; ``POST`` opens one (``audits.open_audit``)."""
    challenge = get_object_or_404(Challenge, slug=slug)
    _organised(request, challenge)
    splits = list(Split.objects.current().filter(task__challenge=challenge).select_related("task"))
    target, size, dimension, double = "", str(DEFAULT_SIZE), "", False
    if request.method == "POST":
        target = request.POST.get("target", "")
        size = request.POST.get("size", "").strip()
        dimension = request.POST.get("dimension", "").strip()
        double = request.POST.get("double") == "1"
        split_id, _, judge = target.partition("|")
        split = next((s for s in splits if str(s.pk) == split_id), None)
        try:
            if split is None:
                raise ValidationError({"target": "choose a split and a judge to audit"})
            if not size.isdigit():
                raise ValidationError({"size": f"a whole number from 1 to {MAX_SIZE}"})
            audit = audits.open_audit(
                split, signed_in(request.user), judge, int(size), dimension,
                labels_wanted=2 if double else 1,
            )  # fmt: skip
        except ValidationError as exc:
            for message in _messages(exc):
                messages.error(request, message)
        else:
            messages.success(request, f"Audit #{audit.pk} opened: {audit.size} items to label.")
            return redirect("leaderboard:audit", audit.pk)
    targets = []
    for split in splits:
        if split.task.declared().verdict_menu():
            targets += [(split, option) for option in audits.judges_on(split)]
    context = {
        "challenge": challenge,
        "audits": [
            (audit, audits.progress(audit))
            for audit in JudgeAudit.objects.filter(split__task__challenge=challenge).select_related(
                "split__task"
            )
        ],
        "targets": targets,
        "dimensions": sorted({d for split in splits for d in audits.dimensions_of(split)}),
        "form": {"target": target, "size": size, "dimension": dimension, "double": double},
        "max_size": MAX_SIZE,
    }
    return render(request, "leaderboard/audits.html", context)


@login_required
def audit_page(request: HttpRequest, audit_id: int) -> HttpResponse:
    """An audit's results, for organisers."""
    audit = _audit(request, audit_id)
    _organised(request, audit.split.task.challenge)
    found = results(audit)
    table = found["judge"]["confusion"]
    context = {
        "audit": audit,
        "challenge": audit.split.task.challenge,
        "found": found,
        "confusion": list(zip(table["classes"], table["counts"], strict=True)),
        "progress": audits.progress(audit),
        "labellers": audit.labellers.order_by("username"),
        "participants": permissions.participants(audit.split.task.challenge),
    }
    return render(request, "leaderboard/audit.html", context)


@login_required
@require_POST
def audit_action(request: HttpRequest, audit_id: int, action: str) -> HttpResponse:
    """``finish`` the audit, or ``invite`` a labeller (``who``)."""
    audit = _audit(request, audit_id)
    _organised(request, audit.split.task.challenge)
    try:
        if action == "finish":
            audit_results.finish(audit, signed_in(request.user))
            messages.success(request, f"Audit #{audit.pk} finished.")
        elif action == "invite":
            user = audits.invite(audit, signed_in(request.user), request.POST.get("who", ""))
            messages.success(request, f"{user.get_username()} may label this audit.")
        else:
            raise Http404(f"no audit action {action!r}")
    except ValidationError as exc:
        for message in _messages(exc):
            messages.error(request, message)
    return redirect("leaderboard:audit", audit.pk)


@login_required
def audit_export(request: HttpRequest, audit_id: int, fmt: str) -> HttpResponse:
    """The audit as a calibration set: CSV (one row per item) or JSON (with the figures)."""
    audit = _audit(request, audit_id)
    _organised(request, audit.split.task.challenge)
    name = f"judge-audit-{audit.pk}"
    if fmt == "csv":
        response = HttpResponse(export_csv(audit), content_type="text/csv; charset=utf-8")
    else:
        body = json.dumps(export_record(audit), indent=1, ensure_ascii=False, default=str)
        response = HttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


def _labelling(request: HttpRequest, audit_id: int) -> JudgeAudit:
    audit = _audit(request, audit_id)
    if not permissions.can_label(request.user, audit):
        raise Http404("no such audit to label")
    return audit


@login_required
def label_page(request: HttpRequest, audit_id: int) -> HttpResponse:
    """The next item for this labeller (``?item=``: that one, to change a label); ``POST``
    records a label (or a skip) on ``item``."""
    audit = _labelling(request, audit_id)
    if request.method == "POST":
        labelled = get_object_or_404(AuditItem, audit=audit, pk=request.POST.get("item") or 0)
        verdict = request.POST.get("verdict", "")
        try:
            audits.record_label(
                labelled, signed_in(request.user), verdict, request.POST.get("note", "")
            )
        except ValidationError as exc:
            for message in _messages(exc):
                messages.error(request, message)
        return redirect("leaderboard:label", audit.pk)
    user = signed_in(request.user)
    asked = request.GET.get("item", "")
    item: AuditItem | None
    if audit.finished:
        item = None
    elif asked:  # an item again: the labeller's last one (undo), or a contested one
        item = get_object_or_404(AuditItem, audit=audit, pk=asked if asked.isdigit() else 0)
    else:
        item = audits.next_item(audit, user)
    mine = AuditLabel.objects.filter(item__audit=audit, labeller=user)
    last = mine.order_by("-labelled_at").first()
    answer = item.response if item else ""
    context = {
        "audit": audit,
        "item": item,  # the template shows no judge verdict: never pass one
        "own": mine.filter(item=item).first() if item else None,
        "last": last.item_id if last and (item is None or last.item_id != item.pk) else None,
        "answer": answer[:ANSWER_CHARS],
        "answer_cut": max(0, len(answer) - ANSWER_CHARS),
        "keys": [(str(n), verdict) for n, verdict in enumerate(audit.menu, 1)],
        "mine": mine.exclude(verdict="").count(),
        "skipped": mine.filter(verdict="").count(),
        "progress": audits.progress(audit),
        "image": reverse("leaderboard:audit-image", args=(audit.pk, item.pk))
        if item and item.thumbnail
        else "",
    }
    return render(request, "leaderboard/label.html", context)


@login_required
def audit_image(request: HttpRequest, audit_id: int, item_id: int) -> HttpResponseBase:
    """An item's image, scaled down: whoever may label the audit."""
    audit = _labelling(request, audit_id)
    item = get_object_or_404(AuditItem, audit=audit, pk=item_id)
    if not item.thumbnail:
        raise Http404("this item has no image")
    return thumbnail_response(request, item.thumbnail)
