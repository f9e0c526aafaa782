"""Template filters for showing stored metrics."""

from __future__ import annotations

from collections.abc import Mapping

from django import template

register = template.Library()

# Metrics that are counts or averages rather than shares of turns.
PLAIN_NUMBERS = frozenset({"avg_successful_turns", "turns", "conversations"})


@register.filter
def metric(value: float | None, name: str = "") -> str:
    """A stored metric for a page: shares as percentages, averages with two decimals."""
    if value is None:
        return "–"
    if name in PLAIN_NUMBERS:
        return f"{value:.2f}" if isinstance(value, float) else str(value)
    return f"{100 * value:.1f}"


@register.filter
def attr(obj: object, name: str) -> object:
    """A field of a stored row or of a slice cell (a dict)."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None) if obj is not None else None


@register.filter
def cell(cells: dict, key: str) -> object:
    return cells.get(key)
