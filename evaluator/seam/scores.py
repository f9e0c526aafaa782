"""What a benchmark's scoring gives back, typed: its declared metrics (``Metric``), a run's
scores (``Score``: the scores.json document and the rows the server stores) and a paired
comparison of two runs (``Comparison``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from evaluator.records import EvaluatorError

Scale = Literal["fraction", "signed_fraction", "percent", "ratio", "count"]


@dataclass(frozen=True)
class Metric:
    """One metric as scores.json names it and a page shows it.

    ``scale``: how scores.json stores it: ``fraction`` (a rate, 0 to 1; pages show it x100),
    ``signed_fraction`` (-1 to 1, e.g. truthfulness; shown x100), ``percent`` (already x100,
    0 to 100), ``ratio`` (a plain ratio, may be negative or above 1), ``count``;
    ``where``: the block of scores.json that holds it (``all``; ``retrieval``; ``settings``,
    one block per setting; ``gcue``); ``interval``: ``<name>_ci95`` stands beside it.
    """

    name: str
    label: str
    higher_is_better: bool = True
    scale: Scale = "fraction"
    where: str = "all"
    interval: bool = False
    headline: bool = False  # a column of the leaderboard (every metric is in exports and slices)

    def shown(self, value: float | None) -> str:
        """The value as a page shows it: fractions x100, one decimal; ratios two decimals."""
        if value is None:
            return "–"
        if self.scale == "count":
            return str(int(value))
        if self.scale == "ratio":
            return f"{value:.2f}"
        text = f"{value * 100 if self.scale.endswith('fraction') else value:.1f}"
        return "0.0" if text == "-0.0" else text

    def axis(self) -> tuple[float, float] | None:
        """The fixed axis of a chart of this metric (None: fit to the values)."""
        return {
            "fraction": (0.0, 1.0),
            "signed_fraction": (-1.0, 1.0),
            "percent": (0.0, 100.0),
        }.get(self.scale)


@dataclass(frozen=True)
class ScoreBlock:
    """One stored row of a run's scores: a slice value (``all``/``all`` for the whole run),
    the number of items behind it, and its metrics by name (``<name>_ci95`` beside those with
    an interval)."""

    dimension: str
    value: str
    count: int
    metrics: dict[str, Any]


@dataclass(frozen=True)
class Score:
    """A run's scores: ``document`` as scores.json holds it (``{"complete", "unjudged", <the
    benchmark's metric blocks, laid out as its official evaluation does>, "slices"}``) and
    ``blocks``, the rows the server stores (``all``/``all`` first, then one per slice value;
    the leaderboard, its slice view and exports read only these)."""

    document: dict[str, Any]
    blocks: tuple[ScoreBlock, ...]

    @property
    def complete(self) -> bool:
        """Whether every item was judged."""
        return bool(self.document["complete"])

    @property
    def unjudged(self) -> int:
        """How many items the judge left undecided."""
        return int(self.document["unjudged"])

    @property
    def headline(self) -> ScoreBlock:
        """The whole run's row (``all``/``all``)."""
        return self.blocks[0]


@dataclass(frozen=True)
class Comparison:
    """A paired comparison of two runs on the same items, on the primary metric: run A's and
    run B's value, A - B with its 95 % interval, the p-value and whether the runs are
    separable at the 95 % level; ``document`` is the whole result as stored (the benchmark's
    own fields beside these)."""

    metric: str
    a: float
    b: float
    difference: float
    difference_ci95: tuple[float, float]
    p_value: float
    separable: bool
    document: dict[str, Any] = field(repr=False)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Comparison:
        """A comparison as a benchmark's paired test wrote it (``EvaluatorError`` naming the
        field when one is missing)."""
        try:
            low, high = document["difference_ci95"]
            return cls(
                metric=str(document["metric"]),
                a=float(document["a"]),
                b=float(document["b"]),
                difference=float(document["difference"]),
                difference_ci95=(float(low), float(high)),
                p_value=float(document["p_value"]),
                separable=bool(document["separable"]),
                document=dict(document),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EvaluatorError(f"comparison: field {exc}: missing or not a number") from None
