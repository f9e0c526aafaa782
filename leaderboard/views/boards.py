"""Public pages: challenges, leaderboards, slice view, comparisons, exports.

Every page reads stored rows (``leaderboard.ranking``) through ``leaderboard.board_cache``, which
keeps a split's leaderboard and rendered fragments until its results change; visibility comes
from ``leaderboard.permissions`` and is checked on every request, before any cached part.

A task whose benchmark evaluates several settings (``Task.run_settings``) has a leaderboard per
setting: ``?setting=`` picks one (the first by default), the pages show a selector and keep the
setting in their links. A task without settings (CRAG-MM) has neither.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Collection, Sequence
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import EmptyPage, Page, Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse

from leaderboard import board_cache, pages, permissions, public_board, ranking, slice_store
from leaderboard.audit_results import judge_cards
from leaderboard.charts import slice_chart
from leaderboard.models import Challenge, Split, current_splits
from leaderboard.task_environment import task_environment
from leaderboard.views import board_nav, board_page, board_settings, board_table, slice_table

# Leaderboard and slice pages list this many entries a page; exports and the API list them all.
ENTRIES_PER_PAGE = 100
# The CSV export: these, then the primary metric's interval, then every metric of the benchmark.
EXPORT_HEAD = (
    "rank",
    "rank_low",
    "rank_high",
    "group",
    "team",
    "method_name",
    "is_baseline",
    "count",
    "complete",
    "judge_id",
)
EXPORT_TAIL = ("paper_url", "code_url", "submission_id", "run_id", "submitted_at")
# an entry's repeated runs (``leaderboard.repeats``), as ``repeated_<name>``: empty when none
REPEATED_COLUMNS = ("runs", "done", "mean", "low", "high", "sd", "pass_k")


def _challenge(request: HttpRequest, slug: str) -> Challenge:
    return get_object_or_404(permissions.visible_challenges(request.user), slug=slug)


def results_split(request: HttpRequest, slug: str, task_id: str, kind: str) -> Split:
    """The split whose results the page shows (its current version, or ``?version=``); 404 if
    unknown, 403 if not revealed to the user. Found with its task and challenge in one query;
    only when it is not found are the challenge and then the split looked up apart, so the 404
    says which of them is unknown."""
    try:
        splits = Split.objects.of_version(request.GET.get("version"))
    except ValueError as exc:
        raise Http404(str(exc)) from None
    splits = splits.select_related("task__challenge")
    split = splits.filter(
        task__challenge__in=permissions.visible_challenges(request.user),
        task__challenge__slug=slug,
        task__task_id=task_id,
        kind=kind,
    ).first()
    if split is None:
        challenge = _challenge(request, slug)
        split = splits.filter(task__challenge=challenge, task__task_id=task_id, kind=kind).first()
    if split is None:
        asked = request.GET.get("version")
        version = f" version {asked}" if asked else ""
        raise Http404(f"{slug} has no split {task_id}/{kind}{version}")
    check_revealed(request.user, split)
    return board_cache.current(split)


def check_revealed(user: permissions.User, split: Split) -> None:
    """403 saying when they appear, unless ``split``'s results are revealed to ``user``."""
    if not permissions.can_see_results(user, split):
        when = f" They appear on {split.reveal_at:%Y-%m-%d %H:%M} UTC." if split.reveal_at else ""
        raise PermissionDenied(f"The results of {split} are not public yet.{when}")


def challenge_list(request: HttpRequest) -> HttpResponse:
    challenges = permissions.visible_challenges(request.user).prefetch_related("phases")
    return render(request, "leaderboard/challenge_list.html", {"challenges": challenges})


def challenge_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """A challenge's tabs: its organisers' pages (those written) and its leaderboards; the
    rules tab takes the participant's acceptance (``POST``)."""
    challenge = _challenge(request, slug)
    organiser = permissions.is_organiser(request.user, challenge)
    written = [name for name in pages.PAGES if getattr(challenge, name).strip()]
    tab = request.GET.get("tab") or (written[0] if written else "leaderboards")
    if tab not in (*written, "leaderboards"):
        raise Http404(f"{challenge.name} has no page {tab!r}")
    if request.method == "POST" and tab == "rules" and request.user.is_authenticated:
        try:
            pages.accept_rules(request.user, challenge)
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        else:
            messages.success(request, f"You accepted the rules of {challenge.name}.")
        return redirect(f"{request.path}?tab=rules")
    tasks, models = [], list(challenge.hub_models.all())
    for task in challenge.tasks.prefetch_related(current_splits()):
        splits = [(s, organiser or s.is_revealed()) for s in task.splits.all()]
        tasks.append((task, splits, task_environment(task, models)))
    return render(
        request,
        "leaderboard/challenge_detail.html",
        {
            "challenge": challenge,
            "tasks": tasks,
            "phases": challenge.phases.all(),
            "organiser": organiser,
            "tabs": [*written, "leaderboards"],
            "tab": tab,
            "overall": bool(challenge.overall),
            "page": pages.rendered(getattr(challenge, tab)) if tab in written else "",
            "accepted": pages.accepted_rules(request.user, challenge),
            "labeller": pages.labeller_notice(request.user, challenge) if tab == "rules" else "",
        },
    )


def _page_number(request: HttpRequest) -> int:
    value = request.GET.get("page", "1")
    if not value.isdigit() or int(value) < 1:
        raise Http404(f"page={value!r}: expected a page number from 1")
    return int(value)


def _page(entries: Sequence[ranking.Entry], number: int) -> Page[ranking.Entry]:
    try:
        return Paginator(entries, ENTRIES_PER_PAGE).page(number)
    except EmptyPage:
        raise Http404(f"no page {number}: the leaderboard has {len(entries)} entries") from None


def _entry_href(split: Split, query: str) -> str:
    """The URL of an entry's page with ``{}`` for its run id and ``query`` (the page's
    setting, metric, ...) kept: one ``reverse`` a page, not one a row."""
    task = split.task
    first = reverse("leaderboard:entry", args=(task.challenge.slug, task.task_id, split.kind, 0))
    return first.removesuffix("0/") + "{}/" + (f"?{query}" if query else "")


def leaderboard(request: HttpRequest, slug: str, task_id: str, kind: str) -> HttpResponse:
    split = results_split(request, slug, task_id, kind)
    setting = board_settings.asked_setting(request, split)
    number = _page_number(request)
    raw = board_page.raw_asked(request, split)  # an organiser's view without the public rules
    columns = ranking.columns(split.task, setting, split, raw)
    sort = board_table.asked_sort(request.GET, columns)

    def lacking(name: str) -> Collection[str]:
        """The order asked for, when the other setting's board lacks its column."""
        other = {c.name for c in ranking.columns(split.task, name, split)}
        return ("sort", "dir") if sort.key in {c.name for c in columns} - other else ()

    shown = board_settings.settings_shown(request, split, setting, lacking)

    def render_body() -> str:
        board = board_page.board(split, setting, sort, raw)  # reads this page's entries only
        page = _page(board.entries, number)
        kept = "&".join(filter(None, (shown["setting_query"], "raw=1" if raw else "")))
        context = {
            "split": split,
            "task": split.task,
            "board": board,
            "page": page,
            "rows": board_table.rows(
                list(page.object_list),
                columns,
                _entry_href(split, kept),
                calibrated="calibration" in board.statistics,
            ),
            "calibrated": "calibration" in board.statistics,
            "headers": board_table.headers(columns, sort, kept),
            "query": "".join(f"{part}&" for part in (kept, sort.query) if part),
            "setting_query": kept,
            "columns": columns,
            "count_label": split.task.declared().unit.capitalize(),
            "statistics_note": board_table.statistics_note(board.statistics, columns[0]),
            "across": board_settings.across_settings(split.task, board, list(page.object_list)),
        }
        return render_to_string("leaderboard/_leaderboard_body.html", context)

    parts = [number, sort.key, sort.descending, raw]
    body = board_cache.fragment(split, setting, "leaderboard", parts, render_body)
    context = {"split": split, "task": split.task, "body": body, **shown}
    context |= board_nav.around(request, split, "leaderboard", setting)
    context |= {  # not cached: an audit finishing changes it, the results do not
        "judge_cards": judge_cards(split, setting),
        "organiser": permissions.is_organiser(request.user, split.task.challenge),
        "raw": raw,
        "raw_offered": not raw
        and public_board.rules(split) != public_board.Rules()
        and permissions.can_see_raw_board(request.user, split),
    }
    return render(request, "leaderboard/leaderboard.html", context)


def slices(request: HttpRequest, slug: str, task_id: str, kind: str) -> HttpResponse:
    split = results_split(request, slug, task_id, kind)
    setting = board_settings.asked_setting(request, split)
    asked = request.GET.get("dimension", "")
    columns = ranking.columns(split.task, setting, split)
    metric = next((c for c in columns if c.name == request.GET.get("metric")), columns[0])
    if request.GET.get("metric", metric.name) != metric.name:
        raise Http404(f"unknown metric {request.GET['metric']!r}")
    number = _page_number(request)

    def lacking(name: str) -> Collection[str]:
        """The metric asked for, when the other setting's runs lack it."""
        other = {c.name for c in ranking.columns(split.task, name)}
        return () if metric.name in other else ("metric",)

    shown = board_settings.settings_shown(request, split, setting, lacking)

    def render_body() -> str:
        board = board_page.board(split, setting, board_table.Sort(board_table.RANK, False))
        dimension = asked or (board.dimensions[0] if board.dimensions else "")
        if board.dimensions and dimension not in board.dimensions:
            raise Http404(f"no slice dimension {dimension!r} in {split}")
        page = _page(board.entries, number)
        entries = list(page.object_list)
        table = ranking.slice_table(entries, dimension, metric.name) if dimension else None
        query = urlencode({"dimension": dimension, "metric": metric.name}) + (
            f"&{shown['setting_query']}" if shown["setting_query"] else ""
        )
        statistics = (  # computed on the primary metric: shown beside it
            slice_store.read(split, setting, dimension)
            if table and metric.name == split.task.primary_metric
            else None
        )
        context = {
            "split": split,
            "task": split.task,
            "board": board,
            "dimension": dimension,
            "metric": metric,
            "page": page,
            "query": f"{query}&",
            "setting": setting,
            "setting_query": shown["setting_query"],
            "columns": columns,
            "table": table,
            "lines": slice_table.slice_lines(table, metric, _entry_href(split, query), statistics)
            if table
            else [],
            "headers": slice_table.value_headers(table, metric, statistics) if table else [],
            "notes": slice_table.statistics_notes(statistics, metric),
            "chart": slice_chart(table, metric) if table and table.values else None,
        }
        return render_to_string("leaderboard/_slices_body.html", context)

    body = board_cache.fragment(split, setting, "slices", [asked, metric.name, number], render_body)
    context = {"split": split, "task": split.task, "body": body, **shown}
    context |= board_nav.around(request, split, "slices", setting)
    return render(request, "leaderboard/slices.html", context)


def compare(request: HttpRequest, slug: str, task_id: str, kind: str) -> HttpResponse:
    split = results_split(request, slug, task_id, kind)
    setting = board_settings.asked_setting(request, split)
    entries = board_cache.board(split, setting).entries
    by_run = {e.run_id: e for e in entries}
    chosen = []
    for name in ("a", "b"):
        value = request.GET.get(name, "")
        if value:
            if not value.isdigit() or int(value) not in by_run:
                raise Http404(f"{name}={value!r} is not an entry of this leaderboard")
            chosen.append(by_run[int(value)])
    comparison = None
    # a paired comparison of laddered entries would tell their raw scores apart
    if len(chosen) == 2 and chosen[0].run_id != chosen[1].run_id and not chosen[0].laddered:
        comparison = ranking.stored_comparison(chosen[0].run_id, chosen[1].run_id)
    columns = ranking.columns(split.task, setting, split)
    return render(
        request,
        "leaderboard/compare.html",
        {
            "split": split,
            "task": split.task,
            "entries": entries,
            "chosen": chosen,
            "comparison": comparison,
            "columns": columns,
            "primary": columns[0],
            # a and b are runs of this setting's board: another setting has other runs
            **board_settings.settings_shown(request, split, setting, lambda name: ("a", "b")),
        },
    )


def entry_records(board: ranking.Board) -> list[dict[str, Any]]:
    """The board's entries as plain data (``Entry.record``) with each entry's derived scores
    (``derived``: {} when none): the exports' and the API's one shape."""
    return [e.record() | {"derived": board.derived.get(e.submission_id, {})} for e in board.entries]


def _csv_row(record: dict[str, Any], primary: str) -> dict[str, object]:
    """A record as a CSV line: the entry's fields, every scalar metric, its derived scores."""
    row = {k: v for k, v in record["metrics"].items() if not isinstance(v, list | dict)}
    row |= record["derived"]
    row |= {name: record[name] for name in (*EXPORT_HEAD, *EXPORT_TAIL) if name in record}
    row[f"{primary}_ci_low"], row[f"{primary}_ci_high"] = record["primary_ci95"]
    row["rank_low"], row["rank_high"] = record["rank_ci95"]
    repeated = record.get("repeated") or {}
    row |= {f"repeated_{name}": repeated.get(name) for name in REPEATED_COLUMNS}
    return row


def export(request: HttpRequest, slug: str, task_id: str, kind: str, fmt: str) -> HttpResponse:
    split = results_split(request, slug, task_id, kind)
    setting = board_settings.asked_setting(request, split)
    task = split.task
    version = "" if split.is_current else f"v{split.version}"
    names = (task.challenge.slug, task.task_id, split.kind, version, setting)
    filename = "-".join(filter(None, names))
    board = board_cache.board(split, setting, board_page.raw_asked(request, split))
    records = entry_records(board)
    response: HttpResponse
    if fmt == "json":
        body = {
            "challenge": task.challenge.slug,
            "task": task.task_id,
            "split": split.kind,
            "version": split.version,
            "setting": setting,
            "settings": list(task.run_settings()),
            "protocol": task.benchmark,
            "metrics": [dataclasses.asdict(m) for m in task.declared().metrics],
            "primary_metric": task.primary_metric,
            "entry_rule": task.entry_rule,
            "statistics": board.statistics,
            "entries": records,
        }
        response = JsonResponse(body, json_dumps_params={"indent": 2})
    else:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        primary = task.primary_metric
        metrics = [m.name for m in ranking.columns(task, setting)]
        metrics += [
            m.name
            for m in task.declared().metrics
            if m.name not in metrics and task.declared().in_setting(m, setting)
        ]
        fields = [*EXPORT_HEAD, *metrics[:1], f"{primary}_ci_low", f"{primary}_ci_high"]
        fields += [*metrics[1:], *board_settings.derived_names(board), *EXPORT_TAIL]
        if any(record["repeated"] for record in records):
            fields += [f"repeated_{name}" for name in REPEATED_COLUMNS]
        writer = csv.DictWriter(response, fieldnames=fields, extrasaction="ignore", restval="")
        writer.writeheader()
        writer.writerows(_csv_row(r, primary) for r in records)
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response
