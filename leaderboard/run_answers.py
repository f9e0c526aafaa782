"""The answers a run page lists: filtered by verdict, by "wrong answers only" (in the task
benchmark's terms, ``Benchmark.falls_short``) and by slice (``Benchmark.item_slices`` of each
verdict's row), a page at a time; a markdown answer (``Benchmark.shown_answer``) rendered
sanitised with its images (``leaderboard.answer_markdown``). Who may see them is the view's to
check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.http import QueryDict
from django.urls import reverse
from django.utils.safestring import SafeString

from evaluator.seam import SomePages
from leaderboard.answer_markdown import rendered_answer
from leaderboard.models import EvaluationRun, ItemAnswer, SliceScore
from leaderboard.models.results import ALL

ANSWERS_PER_PAGE = 200
UNLABELLED = "(unlabelled)"  # a slice value no row names: not offered as a filter


@dataclass(frozen=True)
class AnswerFilter:
    verdict: str = ""
    wrong: bool = False
    dimension: str = ""
    value: str = ""
    page: str = "1"

    @classmethod
    def from_query(cls, query: QueryDict) -> AnswerFilter:
        return cls(
            verdict=query.get("verdict", ""),
            wrong=query.get("wrong") == "1",
            dimension=query.get("slice", ""),
            value=query.get("value", ""),
            page=query.get("page", "1"),
        )

    def query(self, **changes: Any) -> str:
        """This filter as a query string, with ``changes`` (the page goes back to 1)."""
        fields = {"verdict": self.verdict, "wrong": "1" if self.wrong else "",
                  "slice": self.dimension, "value": self.value, "page": ""} | changes  # fmt: skip
        data = QueryDict(mutable=True)
        for name, value in fields.items():
            if value:
                data[name] = value
        return data.urlencode()


@dataclass(frozen=True)
class AnswerRow:
    """An answer as the run page shows it, with the item as its judge saw it (its verdict's
    row: question, ground truth, slice values; nothing before it is judged)."""

    answer: ItemAnswer
    question: object
    truth: object
    slice_values: dict[str, str]
    wrong: bool  # judged short of right (``Benchmark.falls_short``)
    shown: SafeString | None  # the answer as rendered markdown, where the benchmark has it so


@dataclass
class AnswerList:
    page: Page[int] | Page[ItemAnswer]  # of the answers' ids when filtered by a slice
    answers: list[AnswerRow]
    verdicts: list[str]  # the grades the run's verdicts have
    wrong_grades: list[str]  # of those, the wrong ones
    slices: list[tuple[str, list[str]]]  # dimension, values: what the run was scored by
    problem: str = ""  # a filter that names nothing on this run, in words


def slice_options(run: EvaluationRun) -> list[tuple[str, list[str]]]:
    """The slices the run's scores have (its stored ``SliceScore`` rows)."""
    options: dict[str, list[str]] = {}
    rows = SliceScore.objects.filter(run=run).exclude(dimension=ALL[0], value=ALL[1])
    for dimension, value in rows.order_by("dimension", "value").values_list("dimension", "value"):
        if value != UNLABELLED:
            options.setdefault(dimension, []).append(value)
    return list(options.items())


def list_answers(run: EvaluationRun, benchmark: SomePages, wanted: AnswerFilter) -> AnswerList:
    """The page of ``run``'s answers ``wanted`` asks for, in split order."""
    chosen = ItemAnswer.objects.filter(run=run)
    verdicts = sorted(set(chosen.exclude(verdict=None).values_list("verdict__verdict", flat=True)))
    wrong = [grade for grade in verdicts if benchmark.falls_short(grade)]
    slices = slice_options(run)
    problem = ""
    if wanted.verdict:
        chosen = chosen.filter(verdict__verdict=wanted.verdict)
    if wanted.wrong:
        chosen = chosen.filter(verdict__verdict__in=wrong)
    ordered = chosen.order_by("group", "position")
    page: Page[int] | Page[ItemAnswer]
    if wanted.dimension:
        if wanted.value not in dict(slices).get(wanted.dimension, []):
            problem = f"this run has no slice {wanted.dimension} = {wanted.value!r}"
        rows = ordered.exclude(verdict=None).values_list("pk", "verdict__detail")
        ids = [
            pk
            for pk, row in rows
            if benchmark.item_slices(row or {}).get(wanted.dimension) == wanted.value
        ]
        ids_page = Paginator(ids, ANSWERS_PER_PAGE).get_page(wanted.page)
        page = ids_page
        answers = list(
            ItemAnswer.objects.filter(pk__in=list(ids_page.object_list))
            .select_related("verdict")
            .order_by("group", "position")
        )
    else:
        answers_page = Paginator(ordered.select_related("verdict"), ANSWERS_PER_PAGE).get_page(
            wanted.page
        )
        page = answers_page
        answers = list(answers_page.object_list)
    listed = [_answer_row(answer, benchmark) for answer in answers]
    return AnswerList(page, listed, verdicts, wrong, slices, problem)


def _answer_row(answer: ItemAnswer, benchmark: SomePages) -> AnswerRow:
    question, truth = benchmark.shown_fields
    judged = hasattr(answer, "verdict")
    row = (answer.verdict.detail if judged else None) or {}
    shown = benchmark.shown_answer(row) if row else None
    return AnswerRow(
        answer,
        question=row.get(question),
        truth=row.get(truth),
        slice_values=benchmark.item_slices(row) if row else {},
        wrong=judged and benchmark.falls_short(answer.verdict.verdict),
        shown=rendered_answer(shown, _image_url(answer)) if shown else None,
    )


def _image_url(answer: ItemAnswer) -> Callable[[int], str | None]:
    """Where the run page fetches the images ``answer`` places (those stored for it)."""

    def url(index: int) -> str | None:
        if str(index) not in (answer.images or {}):
            return None
        return reverse("leaderboard:answer-image", args=[answer.run_id, answer.pk, index])

    return url


def filter_links(listed: AnswerList, wanted: AnswerFilter) -> dict[str, Any]:
    """The query strings of the run page's filters and pages (``current``: the one shown)."""
    page = listed.page
    return {
        "all": wanted.query(verdict="", wrong=""),
        "verdicts": [
            (grade, wanted.query(verdict=grade, wrong=""), grade == wanted.verdict)
            for grade in listed.verdicts
        ],
        "wrong": wanted.query(verdict="", wrong="" if wanted.wrong else "1"),
        "every_slice": wanted.query(slice="", value=""),
        "slices": [
            (
                dimension,
                [
                    (
                        value,
                        wanted.query(slice=dimension, value=value),
                        (dimension, value) == (wanted.dimension, wanted.value),
                    )
                    for value in values
                ],
            )
            for dimension, values in listed.slices
        ],
        "previous": wanted.query(page=str(page.number - 1)) if page.has_previous() else None,
        "next": wanted.query(page=str(page.number + 1)) if page.has_next() else None,
    }
