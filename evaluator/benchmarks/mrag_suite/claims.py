"""Claims as data: the extractor's and the checker's replies read as JSON (never ``eval``),
the checker's labels fitted to its claims, and the deterministic rules behind the offline
``rules`` judge.

A claim is a (subject, predicate, object) triplet of strings. The extractor answers
``{"claims": [[s, p, o], ...]}``; the checker ``{"labels": [label, ...]}``, one of
Entailment / Neutral / Contradiction per claim (any case). A reply may come wrapped in a
structured judge's ``{"verdict": "<that JSON>"}`` or in a Markdown code fence; anything else
is no reply (``None``), and the item stays unjudged with the reason.
"""

from __future__ import annotations

import json
import re
from typing import Any

from evaluator.benchmarks.mrag_suite.ragchecker import LABELS, NEUTRAL

Claim = tuple[str, str, str]
MAX_CLAIMS = 32  # of one text; more are dropped (and the answer's row says so)
CLAIMS_PER_CHECK = 5  # RAGChecker's batch: five claims per checker prompt
MAX_CLAIM_CHARS = 300  # of one triplet part
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_SENTENCE = re.compile(r"[^.!?\n]+")
_WORD = re.compile(r"[^\W_]+")
_LABEL = {label.lower(): label for label in LABELS}


def json_reply(reply: str) -> dict[str, Any] | None:
    """The JSON object in a reply (a bare object, a code-fenced one, or the first ``{...}``
    span), unwrapping a ``{"verdict": "<json>"}``; None when there is none."""
    text = _FENCE.sub("", reply.strip())
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        data = json.loads(text[start : end + 1])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    inner = data.get("verdict")
    if isinstance(inner, str) and inner.lstrip().startswith("{"):
        return json_reply(inner)
    return data


def read_claims(data: dict[str, Any]) -> list[Claim] | None:
    """The claims of an extractor reply's JSON; None when it is not ``{"claims": [...]}`` of
    three-string triplets."""
    claims = data.get("claims")
    if not isinstance(claims, list):
        return None
    found: list[Claim] = []
    for claim in claims:
        if not (isinstance(claim, list) and len(claim) == 3):
            return None
        if not all(isinstance(part, str) for part in claim):
            return None
        subject, predicate, obj = (part.strip()[:MAX_CLAIM_CHARS] for part in claim)
        found.append((subject, predicate, obj))
    return found


def read_labels(data: dict[str, Any]) -> list[str] | None:
    """The labels of a checker reply's JSON; None when it is not ``{"labels": [...]}`` of
    known labels."""
    labels = data.get("labels")
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        return None
    known = [_LABEL.get(label.strip().lower()) for label in labels]
    return None if None in known else [label for label in known if label is not None]


def fit_labels(labels: list[str], claims: int) -> tuple[list[str], str | None]:
    """One label per claim: missing labels are Neutral (padding), extra ones dropped
    (truncation); the note says which happened."""
    if len(labels) == claims:
        return labels, None
    note = f"the checker gave {len(labels)} labels for {claims} claims"
    if len(labels) < claims:
        return [*labels, *[NEUTRAL] * (claims - len(labels))], f"{note}: the rest are Neutral"
    return labels[:claims], f"{note}: the extra ones are dropped"


def claim_text(claim: Claim) -> str:
    return " | ".join(claim)


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


def rules_claims(text: str) -> list[Claim]:
    """The rules extractor: one claim per sentence, its first word, its second, the rest."""
    found: list[Claim] = []
    for sentence in _SENTENCE.findall(text):
        parts = sentence.split()
        if parts:
            found.append((parts[0], " ".join(parts[1:2]), " ".join(parts[2:])))
    return found[:MAX_CLAIMS]


def rules_label(claim: Claim, reference: str) -> str:
    """The rules checker: Entailment when every word of the claim is in the reference."""
    wanted = words(claim_text(claim))
    return "Entailment" if wanted and wanted <= words(reference) else NEUTRAL
