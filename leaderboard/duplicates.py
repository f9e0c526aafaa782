"""Near-identical answers from different teams: flagged to the organisers.

When a run is done (the scoring stage), its answers are compared with those of every other
team's done run on the same split and setting (the ``COMPARED_RUNS`` latest): each item both
answered (an abstention, in the benchmark's terms ``Benchmark.abstains``, or an empty answer is
left out) is alike when the two answers, normalised (case, accents' forms, punctuation,
spacing), are the same or at least ``NEAR_RATIO`` % similar (rapidfuzz's normalised
Levenshtein ratio). A pair is flagged (``AnswerSimilarity``) when at least ``FLAG_SHARE`` of at
least ``MIN_ITEMS`` items are alike. Each pair is computed once, when the later run finishes
(again when either is re-judged), never on a page view.
"""

from __future__ import annotations

import re
import unicodedata

from django.db import transaction
from django.db.models import Q
from rapidfuzz import fuzz

from evaluator.seam import SomeGrading
from leaderboard.models import AnswerSimilarity, EvaluationRun, ItemAnswer

FLAG_SHARE = 0.9
MIN_ITEMS = 20
NEAR_RATIO = 90.0
COMPARED_RUNS = 500
_PUNCTUATION = re.compile(r"[^\w\s]+")
_SPACES = re.compile(r"\s+")


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return _SPACES.sub(" ", _PUNCTUATION.sub(" ", text)).strip()


def answer_texts(run: EvaluationRun, benchmark: SomeGrading) -> dict[str, str]:
    """The run's given answers, normalised, by item key."""
    rows = ItemAnswer.objects.filter(run=run, outcome=ItemAnswer.Outcome.ANSWERED).values_list(
        "item_key", "response", "verdict__verdict"
    )
    texts = {}
    for key, response, grade in rows:
        text = normalise(response)
        if text and not (grade and benchmark.abstains(grade)):
            texts[key] = text
    return texts


def likeness(a: dict[str, str], b: dict[str, str]) -> tuple[int, int]:
    """(items both answered, items answered alike)."""
    shared = a.keys() & b.keys()
    alike = sum(
        1
        for key in shared
        if a[key] == b[key] or fuzz.ratio(a[key], b[key], score_cutoff=NEAR_RATIO) > 0
    )
    return len(shared), alike


def flag_similar_runs(run: EvaluationRun, benchmark: SomeGrading) -> int:
    """Compare ``run`` with the other teams' done runs on its split and setting; store the
    flagged pairs (replacing the run's earlier ones). Returns how many are flagged."""
    mine = answer_texts(run, benchmark)
    others = (
        EvaluationRun.objects.filter(
            split=run.split_id, setting=run.setting, state=EvaluationRun.State.DONE, trial=0
        )
        .exclude(submission__team=run.submission.team_id)
        .order_by("-finished_at")[:COMPARED_RUNS]
    )
    flagged = []
    if len(mine) >= MIN_ITEMS:
        for other in others:
            items, alike = likeness(mine, answer_texts(other, benchmark))
            if items >= MIN_ITEMS and alike / items >= FLAG_SHARE:
                a, b = sorted((run.pk, other.pk))
                flagged.append(
                    AnswerSimilarity(
                        split_id=run.split_id, run_a_id=a, run_b_id=b, items=items,
                        alike=alike, share=alike / items,
                    )
                )  # fmt: skip
    with transaction.atomic():
        forget(run)
        AnswerSimilarity.objects.bulk_create(flagged)
    return len(flagged)


def forget(run: EvaluationRun) -> None:
    """Drop ``run``'s flags (its answers or verdicts are about to change)."""
    AnswerSimilarity.objects.filter(Q(run_a=run) | Q(run_b=run)).delete()
