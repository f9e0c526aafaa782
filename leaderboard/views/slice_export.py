"""A slice dimension's table as a file (``slices/export.json``, ``slices/export.csv``): the
entries' scores per slice value with their places there (``leaderboard.slice_records``); the
board's visibility is checked first (``results_split``)."""

from __future__ import annotations

import csv
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse

from leaderboard import board_cache
from leaderboard.slice_records import slice_records
from leaderboard.views import board_settings
from leaderboard.views.boards import results_split

CSV_FIELDS = (
    "rank", "team", "method_name", "is_baseline", "submission_id", "run_id", "value", "count",
    "{0}", "{0}_ci_low", "{0}_ci_high", "slice_rank", "rank_low", "rank_high", "group",
    "calibrated", "calibrated_low", "calibrated_high",
)  # fmt: skip


def _csv_rows(body: dict[str, Any], primary: str) -> list[dict[str, object]]:
    """One line per entry and slice value."""
    lines = []
    for entry in body["entries"]:
        head = {name: entry[name] for name in CSV_FIELDS[:6]}
        for value, cell in entry["slices"].items():
            interval = cell["metrics"].get(f"{primary}_ci95") or [None, None]
            calibrated = cell["calibrated"] or {"value": None, "ci95": [None, None]}
            lines.append(
                head
                | {"value": value, "count": cell["count"], primary: cell["metrics"].get(primary)}
                | {f"{primary}_ci_low": interval[0], f"{primary}_ci_high": interval[1]}
                | {"slice_rank": cell["rank"], "group": cell["group"]}
                | dict(zip(("rank_low", "rank_high"), cell["rank_ci95"], strict=True))
                | {"calibrated": calibrated["value"]}
                | dict(zip(("calibrated_low", "calibrated_high"), calibrated["ci95"], strict=True))
            )
    return lines


def export(request: HttpRequest, slug: str, task_id: str, kind: str, fmt: str) -> HttpResponse:
    split = results_split(request, slug, task_id, kind)
    setting = board_settings.asked_setting(request, split)
    board = board_cache.board(split, setting)
    dimension = request.GET.get("dimension") or (board.dimensions[0] if board.dimensions else "")
    if dimension not in board.dimensions:
        raise Http404(f"no slice dimension {dimension!r} in {split}")
    body = slice_records(split, setting, dimension, board.entries)
    task = split.task
    body = (
        {"challenge": task.challenge.slug, "task": task.task_id, "split": split.kind}
        | {
            "version": split.version,
            "setting": setting,
            "primary_metric": task.primary_metric,
        }
        | body
    )
    names = (task.challenge.slug, task.task_id, split.kind, f"v{split.version}", setting)
    filename = "-".join(filter(None, (*names, "slices", dimension)))
    response: HttpResponse
    if fmt == "json":
        response = JsonResponse(body, json_dumps_params={"indent": 2})
    else:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        fields = [name.format(task.primary_metric) for name in CSV_FIELDS]
        writer = csv.DictWriter(response, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(_csv_rows(body, task.primary_metric))
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response
