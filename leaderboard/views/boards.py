"""Public pages: challenges, leaderboards, slice view, comparisons, exports.

Every page reads stored rows (``leaderboard.ranking``) through ``leaderboard.board_cache``, which
keeps a split's leaderboard and rendered fragments until its results change; visibility comes
from ``leaderboard.permissions`` and is checked on every request, before any cached part.
"""

from __future__ import annotations

import csv
import dataclasses
from urllib.parse import urlencode

from django.core.exceptions import PermissionDenied
from django.core.paginator import EmptyPage, Page, Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string

from leaderboard import board_cache, permissions, ranking
from leaderboard.charts import slice_chart
from leaderboard.models import Challenge, Split

# Leaderboard and slice pages list this many entries a page; exports and the API list them all.
ENTRIES_PER_PAGE = 100
# The CSV export: these, then the primary metric's interval, then every metric of the protocol.
EXPORT_HEAD = ("rank", "team", "method_name", "is_baseline", "count", "complete", "judge_id")
EXPORT_TAIL = ("paper_url", "code_url", "submission_id", "run_id", "submitted_at")


def _challenge(request: HttpRequest, slug: str) -> Challenge:
    return get_object_or_404(permissions.visible_challenges(request.user), slug=slug)


def results_split(request: HttpRequest, slug: str, task_id: str, kind: str) -> Split:
    """The split whose results the page shows; 404 if unknown, 403 if not revealed to the user."""
    challenge = _challenge(request, slug)
    split = get_object_or_404(
        Split.objects.select_related("task__challenge"),
        task__challenge=challenge,
        task__task_id=task_id,
        kind=kind,
    )
    if not permissions.can_see_results(request.user, split):
        when = f" They appear on {split.reveal_at:%Y-%m-%d %H:%M} UTC." if split.reveal_at else ""
        raise PermissionDenied(f"The results of {split} are not public yet.{when}")
    return split


def challenge_list(request: HttpRequest) -> HttpResponse:
    challenges = permissions.visible_challenges(request.user).prefetch_related("phases")
    return render(request, "leaderboard/challenge_list.html", {"challenges": challenges})


def challenge_detail(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = _challenge(request, slug)
    organiser = permissions.is_organiser(request.user, challenge)
    tasks = []
    for task in challenge.tasks.prefetch_related("splits"):
        splits = [(s, organiser or s.is_revealed()) for s in task.splits.all()]
        tasks.append((task, splits))
    return render(
        request,
        "leaderboard/challenge_detail.html",
        {"challenge": challenge, "tasks": tasks, "phases": challenge.phases.all()},
    )


def _page_number(request: HttpRequest) -> int:
    value = request.GET.get("page", "1")
    if not value.isdigit() or int(value) < 1:
        raise Http404(f"page={value!r}: expected a page number from 1")
    return int(value)


def _page(entries: list[ranking.Entry], number: int) -> Page:
    try:
        return Paginator(entries, ENTRIES_PER_PAGE).page(number)
    except EmptyPage:
        raise Http404(f"no page {number}: the leaderboard has {len(entries)} entries") from None


def leaderboard(request: HttpRequest, slug: str, task_id: str, kind: str) -> HttpResponse:
    split = results_split(request, slug, task_id, kind)
    number = _page_number(request)

    def render_body() -> str:
        board = board_cache.board(split)
        context = {
            "split": split,
            "task": split.task,
            "board": board,
            "page": _page(board.entries, number),
            "query": "",
            "columns": ranking.columns(split.task),
            "count_label": split.task.declared().unit.capitalize(),
        }
        return render_to_string("leaderboard/_leaderboard_body.html", context)

    body = board_cache.fragment(split, "leaderboard", [number], render_body)
    context = {"split": split, "task": split.task, "body": body}
    return render(request, "leaderboard/leaderboard.html", context)


def slices(request: HttpRequest, slug: str, task_id: str, kind: str) -> HttpResponse:
    split = results_split(request, slug, task_id, kind)
    asked = request.GET.get("dimension", "")
    columns = ranking.columns(split.task)
    metric = next((c for c in columns if c.name == request.GET.get("metric")), columns[0])
    if request.GET.get("metric", metric.name) != metric.name:
        raise Http404(f"unknown metric {request.GET['metric']!r}")
    number = _page_number(request)

    def render_body() -> str:
        board = board_cache.board(split)
        dimension = asked or (board.dimensions[0] if board.dimensions else "")
        if board.dimensions and dimension not in board.dimensions:
            raise Http404(f"no slice dimension {dimension!r} in {split}")
        page = _page(board.entries, number)
        table = ranking.slice_table(page.object_list, dimension) if dimension else None
        context = {
            "split": split,
            "task": split.task,
            "board": board,
            "dimension": dimension,
            "metric": metric,
            "page": page,
            "query": urlencode({"dimension": dimension, "metric": metric.name}) + "&",
            "columns": columns,
            "table": table,
            "chart": slice_chart(table, metric) if table and table.values else None,
        }
        return render_to_string("leaderboard/_slices_body.html", context)

    body = board_cache.fragment(split, "slices", [asked, metric.name, number], render_body)
    context = {"split": split, "task": split.task, "body": body}
    return render(request, "leaderboard/slices.html", context)


def compare(request: HttpRequest, slug: str, task_id: str, kind: str) -> HttpResponse:
    split = results_split(request, slug, task_id, kind)
    entries = board_cache.board(split).entries
    by_run = {e.run_id: e for e in entries}
    chosen = []
    for name in ("a", "b"):
        value = request.GET.get(name, "")
        if value:
            if not value.isdigit() or int(value) not in by_run:
                raise Http404(f"{name}={value!r} is not an entry of this leaderboard")
            chosen.append(by_run[int(value)])
    comparison = None
    if len(chosen) == 2 and chosen[0].run_id != chosen[1].run_id:
        comparison = ranking.stored_comparison(chosen[0].run_id, chosen[1].run_id)
    return render(
        request,
        "leaderboard/compare.html",
        {
            "split": split,
            "task": split.task,
            "entries": entries,
            "chosen": chosen,
            "comparison": comparison,
            "columns": ranking.columns(split.task),
            "primary": ranking.columns(split.task)[0],
        },
    )


def _csv_row(record: dict, primary: str) -> dict:
    """A record as a CSV line: the entry's fields and every scalar metric."""
    row = {k: v for k, v in record["metrics"].items() if not isinstance(v, list | dict)}
    row |= {name: record[name] for name in (*EXPORT_HEAD, *EXPORT_TAIL)}
    row[f"{primary}_ci_low"], row[f"{primary}_ci_high"] = record["primary_ci95"]
    return row


def export(request: HttpRequest, slug: str, task_id: str, kind: str, fmt: str) -> HttpResponse:
    split = results_split(request, slug, task_id, kind)
    filename = f"{split.task.challenge.slug}-{split.task.task_id}-{split.kind}"
    records = [entry.record() for entry in board_cache.board(split).entries]  # the API's too
    if fmt == "json":
        body = {
            "challenge": split.task.challenge.slug,
            "task": split.task.task_id,
            "split": split.kind,
            "protocol": split.task.protocol,
            "metrics": [dataclasses.asdict(m) for m in split.task.declared().metrics],
            "primary_metric": split.task.primary_metric,
            "entry_rule": split.task.entry_rule,
            "entries": records,
        }
        response = JsonResponse(body, json_dumps_params={"indent": 2})
    else:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        primary = split.task.primary_metric
        metrics = [m.name for m in ranking.columns(split.task)]
        metrics += [m.name for m in split.task.declared().metrics if m.name not in metrics]
        fields = [*EXPORT_HEAD, *metrics[:1], f"{primary}_ci_low", f"{primary}_ci_high"]
        fields += [*metrics[1:], *EXPORT_TAIL]
        writer = csv.DictWriter(response, fieldnames=fields, extrasaction="ignore", restval="")
        writer.writeheader()
        writer.writerows(_csv_row(r, primary) for r in records)
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response
