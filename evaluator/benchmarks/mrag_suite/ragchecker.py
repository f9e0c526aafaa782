"""RAGChecker's per-answer arithmetic on claim labels, once per modality (MM-RAGChecker).

Every claim is labelled against one reference at a time (``Entailment``, ``Neutral``,
``Contradiction``); a claim labelled against several references takes Entailment over
Contradiction over Neutral (``merge_labels``). For one answer, with R its response claims,
G the reference claims and C the retrieved items of the modality (images, passages or all):

- precision = |R entailed by the reference| / |R|; recall = |G entailed by the response| / |G|;
  f1 = their harmonic mean (0 when either is 0);
- claim_recall = |G entailed by some item| / |G|;
  context_precision = |items entailing some g| / |C| (those items are the *relevant* ones);
  context_utilization = |G entailed by some item and by the response| / |G entailed by some item|;
- over R: faithfulness (entailed by some item), hallucination (by no item, not by the
  reference), self_knowledge (by no item, by the reference), noise_sensitivity_relevant (not
  by the reference, by a relevant item), noise_sensitivity_irrelevant (not by the reference,
  only by irrelevant items);
- items_used = |items entailing some response claim| / |C| (apart from context precision).

A metric whose divisor is 0 is 0, never NaN. Guarded as RAGChecker's ``computation.py``
guards them, per modality: hallucination and self_knowledge are 0 when |R| or |C| is 0
(``evaluate_unfaithfulness``: an answer over an empty retrieval is neither), both noise
sensitivities are 0 when |R|, |C| or |G| is 0 (``evaluate_noise_sensitivity``); every other
metric is 0 exactly where its divisor is (faithfulness and claim_recall divide by |R| and |G|
but count nothing without items). When |R|, |G| and |C| are all non-zero: faithfulness +
hallucination + self_knowledge = 1 and precision + both noise sensitivities + hallucination = 1.

Counting is RAGChecker's: an item retrieved twice is two items of C, a claim extracted twice
is two claims (``modes.COUNTINGS`` names Podium's other reading).

**Podium's cross-modal figures** (MM-RAGChecker's own formulas are not published), over R:
``image_support`` (entailed by some image item), ``text_support`` (by some passage),
``contradicted`` (contradicted by some item and entailed by none), and the signed
``modality_gap`` = image_support - text_support.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ENTAILMENT, NEUTRAL, CONTRADICTION = "Entailment", "Neutral", "Contradiction"
LABELS = (ENTAILMENT, NEUTRAL, CONTRADICTION)
MODALITIES = ("all", "image", "text")
ANSWER_METRICS = ("precision", "recall", "f1")
ITEM_METRICS = (
    "claim_recall",
    "context_precision",
    "context_utilization",
    "faithfulness",
    "hallucination",
    "self_knowledge",
    "noise_sensitivity_relevant",
    "noise_sensitivity_irrelevant",
    "items_used",
)
CROSS_MODAL = ("image_support", "text_support", "contradicted", "modality_gap")


def merge_labels(labels: Sequence[str]) -> str:
    """One claim's label over several references: Entailment, else Contradiction, else
    Neutral (also for no reference at all)."""
    if ENTAILMENT in labels:
        return ENTAILMENT
    return CONTRADICTION if CONTRADICTION in labels else NEUTRAL


@dataclass(frozen=True)
class ClaimChecks:
    """Every label one answer's diagnosis needs. ``items``: the retrieved items' modalities;
    ``response_in_items[i][r]``: response claim r against item i; likewise for reference
    claims."""

    response_in_reference: tuple[str, ...]
    reference_in_response: tuple[str, ...]
    items: tuple[str, ...]
    response_in_items: tuple[tuple[str, ...], ...]
    reference_in_items: tuple[tuple[str, ...], ...]


def _share(count: int, total: int) -> float:
    return count / total if total else 0.0


def _entailed(labels: Sequence[str]) -> bool:
    return merge_labels(labels) == ENTAILMENT


def diagnose(checks: ClaimChecks, modality: str = "all") -> dict[str, float]:
    """The metrics of one answer over the retrieved items of ``modality`` (see module doc)."""
    chosen = [i for i, kind in enumerate(checks.items) if modality in ("all", kind)]
    n_r, n_g, n_c = (
        len(checks.response_in_reference),
        len(checks.reference_in_response),
        len(chosen),
    )
    by_ref = [label == ENTAILMENT for label in checks.response_in_reference]
    g_in_answer = [label == ENTAILMENT for label in checks.reference_in_response]
    relevant = [i for i in chosen if any(x == ENTAILMENT for x in checks.reference_in_items[i])]
    irrelevant = [i for i in chosen if i not in relevant]
    g_in_items = [_entailed([checks.reference_in_items[i][g] for i in chosen]) for g in range(n_g)]
    r_in = [_entailed([checks.response_in_items[i][r] for i in chosen]) for r in range(n_r)]
    r_rel = [_entailed([checks.response_in_items[i][r] for i in relevant]) for r in range(n_r)]
    r_irr = [_entailed([checks.response_in_items[i][r] for i in irrelevant]) for r in range(n_r)]
    # each response claim: (by some item, by the reference, by a relevant, by an irrelevant item)
    claims = list(zip(r_in, by_ref, r_rel, r_irr, strict=True))
    used = [i for i in chosen if any(x == ENTAILMENT for x in checks.response_in_items[i])]
    precision, recall = _share(sum(by_ref), n_r), _share(sum(g_in_answer), n_g)
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else 0.0
    both = sum(1 for g in range(n_g) if g_in_items[g] and g_in_answer[g])
    unfaithful = n_r if n_c else 0  # RAGChecker's guard: nothing retrieved, nothing unfaithful
    noisy = n_r if n_c and n_g else 0  # and no noise sensitivity without reference claims
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "claim_recall": _share(sum(g_in_items), n_g),
        "context_precision": _share(len(relevant), n_c),
        "context_utilization": _share(both, sum(g_in_items)),
        "faithfulness": _share(sum(r_in), n_r),
        "hallucination": _share(sum(not i and not g for i, g, _, _ in claims), unfaithful),
        "self_knowledge": _share(sum(not i and g for i, g, _, _ in claims), unfaithful),
        "noise_sensitivity_relevant": _share(sum(not g and rel for _, g, rel, _ in claims), noisy),
        "noise_sensitivity_irrelevant": _share(
            sum(not g and not rel and irr for _, g, rel, irr in claims), noisy
        ),
        "items_used": _share(len(used), n_c),
    }


def cross_modal(checks: ClaimChecks) -> dict[str, float]:
    """Podium's cross-modal figures for one answer (see module doc)."""
    n_r = len(checks.response_in_reference)

    def supported(kind: str) -> int:
        rows = [
            row for row, k in zip(checks.response_in_items, checks.items, strict=True) if k == kind
        ]
        return sum(_entailed([row[r] for row in rows]) for r in range(n_r))

    merged = [merge_labels([row[r] for row in checks.response_in_items]) for r in range(n_r)]
    image, text = _share(supported("image"), n_r), _share(supported("text"), n_r)
    return {
        "image_support": image,
        "text_support": text,
        "contradicted": _share(merged.count(CONTRADICTION), n_r),
        "modality_gap": image - text,
    }


def answer_profile(checks: ClaimChecks) -> dict[str, float]:
    """Every claim metric of one answer, flat: ``precision``, ``recall``, ``f1``, each item
    metric for all items and per modality (``<metric>_image``, ``<metric>_text``), and
    Podium's cross-modal figures."""
    profile = diagnose(checks, "all")
    for modality in ("image", "text"):
        per = diagnose(checks, modality)
        profile |= {f"{name}_{modality}": per[name] for name in ITEM_METRICS}
    return profile | cross_modal(checks)


PROFILE = (
    *ANSWER_METRICS,
    *ITEM_METRICS,
    *(f"{name}_{modality}" for modality in ("image", "text") for name in ITEM_METRICS),
    *CROSS_MODAL,
)  # every key of ``answer_profile``, in order
