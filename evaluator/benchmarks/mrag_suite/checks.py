"""The diagnosis's second round: which claims are checked against which text, the check calls
and their keys, and every claim's label read back from them.

Per answer, the reference's claims go against the long answer and each retrieved text; the
answer's claims against the reference explanation and each retrieved text. A call asks about
at most five claims against one text: ``check/<sha256(text)[:16]>/<sha256(claims)[:16]>``.
How claims are put in calls is the counting (a benchmark setting, ``modes.COUNTINGS``):

- ``ragchecker`` (the default, as RAGChecker's checker labels a claim list): per answer, each
  list against each text as extracted, in fives, so every occurrence of a claim is labelled
  where it occurs: a claim extracted twice twice, a claim of both the answer and the reference
  in each list, an item retrieved twice twice.
- ``distinct`` (**Podium**'s): each (claim, text) pair is checked once per grading, whichever
  answer or list it comes from: per text, the reference claims of every answer, sorted, in
  fives, then the answers' claims not checked yet. Fewer calls; a pair has one label.

Identical calls (the same claims against the same text: an item retrieved twice, the reference's
claims in another mode or run) are one call under one key, and the judgment cache answers it in
the next run. A text that is empty (an image with no caption) entails nothing and is never sent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from evaluator.benchmarks.mrag_suite.claims import (
    CLAIMS_PER_CHECK,
    Claim,
    fit_labels,
    json_reply,
    read_labels,
)
from evaluator.benchmarks.mrag_suite.items import Evidence, MragItem
from evaluator.benchmarks.mrag_suite.judging import CHECK
from evaluator.benchmarks.mrag_suite.modes import MragAnswer
from evaluator.benchmarks.mrag_suite.ragchecker import NEUTRAL, ClaimChecks
from evaluator.judges.rubric import UNJUDGED
from evaluator.records import JudgeRequest, Judgment

Slot = tuple[str, int]  # a check call's key and a claim's place in it
Slots = dict[tuple[str, str], list[Slot]]  # (list, text) -> each claim's slot, in the list's order
LISTS = ("reference", "answer")  # the reference's claims, the answer's


@dataclass(frozen=True)
class AnswerCase:
    """One answer to diagnose: its item, the answer, what its mode retrieved."""

    item: MragItem
    answer: MragAnswer
    retrieved: tuple[Evidence, ...]

    @property
    def key(self) -> str:
        return f"{self.answer.mode}/{self.item.item_id}"

    def texts(self, claims: str) -> list[str]:
        """The texts the ``reference``'s or the ``answer``'s claims are checked against."""
        first = self.answer.long_answer if claims == "reference" else self.item.long_answer
        return [first, *(entry.content for entry in self.retrieved)]


Claims = tuple[AnswerCase, Sequence[Claim], Sequence[Claim]]  # a case, its response, reference


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def check_key(text: str, claims: Sequence[Claim]) -> str:
    """A check call's key: ``check/`` and the first 16 hex digits of the sha256 of ``text``,
    ``/`` and those of the claims' JSON (``claims_json``), each in UTF-8."""
    return f"check/{_digest(text)}/{_digest(claims_json(claims))}"


def claims_json(claims: Sequence[Claim]) -> str:
    """The claims as a check call carries them (its ``response``): ``[[s, p, o], ...]``,
    ``json.dumps`` with non-ASCII kept."""
    return json.dumps([list(claim) for claim in claims], ensure_ascii=False)


class CheckPlan:
    """Every check call of a grading (``calls``, by key) and each answer's slots."""

    def __init__(self, answers: Sequence[Claims], counting: str) -> None:
        self.calls: dict[str, JudgeRequest] = {}
        if counting == "distinct":
            self.slots = self._distinct(answers)
        else:
            self.slots = [self._as_listed(*one) for one in answers]

    def _ask(self, text: str, claims: Sequence[Claim]) -> list[Slot]:
        """The calls that check ``claims`` against ``text`` in fives, and each claim's slot."""
        found: list[Slot] = []
        for start in range(0, len(claims), CLAIMS_PER_CHECK):
            part = claims[start : start + CLAIMS_PER_CHECK]
            key = check_key(text, part)
            self.calls[key] = JudgeRequest(CHECK, text, claims_json(part), key)
            found += [(key, place) for place in range(len(part))]
        return found

    def _as_listed(
        self, case: AnswerCase, response: Sequence[Claim], reference: Sequence[Claim]
    ) -> Slots:
        """RAGChecker's: each list against each text, as extracted."""
        return {
            (name, text): self._ask(text, claims)
            for name, claims in _lists(response, reference)
            for text in case.texts(name)
            if text.strip() and claims
        }

    def _distinct(self, answers: Sequence[Claims]) -> list[Slots]:
        """Podium's: each (claim, text) pair once, the reference's first."""
        where: dict[tuple[str, Claim], Slot] = {}
        for name in LISTS:
            by_text: dict[str, set[Claim]] = {}
            for case, response, reference in answers:
                claims = dict(_lists(response, reference))[name]
                for text in case.texts(name):
                    wanted = {claim for claim in claims if (text, claim) not in where}
                    by_text.setdefault(text, set()).update(wanted)
            for text, found in by_text.items():
                ordered = sorted(found) if text.strip() else []
                pairs = [(text, claim) for claim in ordered]
                where |= dict(zip(pairs, self._ask(text, ordered), strict=True))
        return [
            {
                (name, text): [where[text, claim] for claim in claims]
                for name, claims in _lists(response, reference)
                for text in case.texts(name)
                if text.strip() and claims
            }
            for case, response, reference in answers
        ]


def _lists(
    response: Sequence[Claim], reference: Sequence[Claim]
) -> tuple[tuple[str, Sequence[Claim]], ...]:
    return ("reference", reference), ("answer", response)


def read_checks(
    calls: dict[str, JudgeRequest], checked: dict[str, Judgment]
) -> tuple[dict[str, list[str]], dict[str, str], dict[str, str]]:
    """Each call's labels, one per claim it asked about; why a call failed; what was fitted."""
    labels: dict[str, list[str]] = {}
    failures: dict[str, str] = {}
    notes: dict[str, str] = {}
    for key, request in calls.items():
        judgment = checked[key]
        data = None if judgment.verdict == UNJUDGED else json_reply(judgment.verdict)
        given = None if data is None else read_labels(data)
        if given is None:
            failures[key] = judgment.error or "the checker's reply holds no list of labels"
            continue
        labels[key], note = fit_labels(given, len(json.loads(request.response)))
        if note:
            notes[key] = note
    return labels, failures, notes


def assemble(answer: Claims, slots: Slots, labels: dict[str, list[str]]) -> ClaimChecks:
    """One answer's labels from its slots' calls; a claim against an empty text is Neutral."""
    case, response, reference = answer
    counts = {"answer": len(response), "reference": len(reference)}

    def row(name: str, text: str) -> tuple[str, ...]:
        found = slots.get((name, text))
        if found is None:
            return (NEUTRAL,) * counts[name]
        return tuple(labels[key][place] for key, place in found)

    return ClaimChecks(
        response_in_reference=row("answer", case.item.long_answer),
        reference_in_response=row("reference", case.answer.long_answer),
        items=tuple(e.modality for e in case.retrieved),
        response_in_items=tuple(row("answer", e.content) for e in case.retrieved),
        reference_in_items=tuple(row("reference", e.content) for e in case.retrieved),
    )
