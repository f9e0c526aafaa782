"""A judge audit's items with the people's labels: what its results, exports and the boards'
calibrated scores (``leaderboard.calibration``) read."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Prefetch

from leaderboard.models import AuditItem, AuditLabel, JudgeAudit

CONTESTED = "contested"


def people_label(labels: list[AuditLabel]) -> str | None:
    """The labellers' verdict (None: none given yet; ``CONTESTED``: they disagree)."""
    given = {label.verdict for label in labels if label.verdict}
    if not given:
        return None
    return given.pop() if len(given) == 1 else CONTESTED


@dataclass(frozen=True)
class LabelledItem:
    """An audit item with its labels (``given``, oldest first) and the people's label
    (``people``: ``people_label``)."""

    item: AuditItem
    given: list[AuditLabel]
    people: str | None


def labelled_items(audit: JudgeAudit) -> list[LabelledItem]:
    """The audit's items in labelling order, with their labels."""
    ordered = AuditLabel.objects.select_related("labeller").order_by("labelled_at", "pk")
    items = audit.items.prefetch_related(Prefetch("labels", ordered, to_attr="given"))
    return [LabelledItem(item, item.given, people_label(item.given)) for item in items]
