"""Template filters for showing stored metrics, each as its protocol declares it."""

from __future__ import annotations

from collections.abc import Mapping

from django import template

from evaluator.protocols.base import Metric

register = template.Library()


@register.filter
def shown(value: float | None, metric: Metric) -> str:
    """A stored value as ``metric`` is shown (``Metric.shown``: fractions x100, ...)."""
    return metric.shown(value)


@register.filter
def attr(obj: object, name: str) -> object:
    """A field of a stored row or of a slice cell (a dict)."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None) if obj is not None else None


@register.filter
def cell(cells: Mapping, key: str) -> object:
    return cells.get(key) if cells is not None else None


@register.filter
def join_list(value: object) -> str:
    """A setting's value for a page: a list as comma-separated words."""
    return ", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
