"""The stored score rows of a benchmark whose runs are settings (Visual-RAG's settings,
MRAG-Suite's retrieval modes): one row per slice value, its settings' metrics in one flat
dict (a single setting's unprefixed, as in a server run; else ``<setting>.<metric>``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def slice_blocks(scores: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """``(dimension, value, block)``: the whole run (``all``/``all``) first, then each slice
    value's block."""
    return [("all", "all", scores)] + [
        (label, str(value), block)
        for label, values in scores["slices"].items()
        for value, block in values.items()
    ]


def flat_settings(settings: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], int]:
    """The settings' metrics in one dict, and the most items one setting counts."""
    flat: dict[str, Any] = {}
    for setting, metrics in settings.items():
        prefix = "" if len(settings) == 1 else f"{setting}."
        flat |= {f"{prefix}{name}": number for name, number in metrics.items()}
    return flat, max((metrics["count"] for metrics in settings.values()), default=0)
