"""A benchmark's identity, its settings and its splits: what every other interface of the
seam builds on (``Splits``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, Self, TypeVar

import jsonschema

from evaluator.records import EvaluatorError, JudgeForecast

SplitT = TypeVar("SplitT")


class Splits(ABC, Generic[SplitT]):
    """The benchmark's name and settings, and how it reads a split."""

    name: ClassVar[str]  # as in scores.json and on the CLI ("crag-mm", "visual-rag")
    title: ClassVar[str]  # as pages name it ("CRAG-MM")
    # A task's settings (JSON Schema; every property has a default): an organiser's task holds
    # them as JSON, checked here (``check_settings``).
    settings_schema: ClassVar[dict[str, Any]]

    @classmethod
    def check_settings(cls, settings: Any) -> dict[str, Any]:
        """A task's settings, checked against ``settings_schema`` and completed with its
        defaults; ``EvaluatorError`` naming the setting and what is wrong."""
        validator = jsonschema.Draft202012Validator(cls.settings_schema)
        errors = sorted(validator.iter_errors(settings), key=lambda e: list(e.absolute_path))
        if errors:
            where = ".".join(str(part) for part in errors[0].absolute_path) or "settings"
            raise EvaluatorError(f"{cls.name} settings: {where}: {errors[0].message}")
        defaults = {
            name: spec["default"] for name, spec in cls.settings_schema["properties"].items()
        }
        return defaults | dict(settings)

    @classmethod
    def from_settings(cls, settings: Any) -> Self:
        """The benchmark a task's settings make (``check_settings`` first)."""
        return cls(**cls.check_settings(settings))

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Self:
        """The benchmark as a scores document recorded it (to compare or re-read its runs)."""
        return cls()

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """The benchmark's options as they go into scores.json."""

    def run_settings(self) -> tuple[str, ...]:
        """The settings a task evaluates, one run each; ``("",)`` when the benchmark has none."""
        return ("",)

    def for_setting(self, setting: str) -> Self:
        """The benchmark that plans, grades and scores one run of ``setting``."""
        if setting:
            raise EvaluatorError(f"{self.name} has no settings to run, not {setting!r}")
        return self

    @abstractmethod
    def load_split(self, path: str | Path, **options: Any) -> SplitT:
        """A split directory (Podium's format or the benchmark's released layout). Options a
        benchmark may take: ``hf_split`` (which split of a Hugging Face dataset), ``cache_dir``
        (where a released layout may be converted once)."""

    @abstractmethod
    def bundle_files(self, split: SplitT) -> list[str]:
        """The files of ``split`` (relative to its root) a server bundle holds: ``load_split``
        reads the split back from them alone."""

    @abstractmethod
    def split_counts(self, split: SplitT) -> tuple[int, int]:
        """How big ``split`` is: its groups (CRAG-MM: conversations; Visual-RAG: species) and
        the items one run answers (turns; queries)."""

    @abstractmethod
    def split_keys(self, split: SplitT) -> list[str]:
        """The key of every answer a run on ``split`` must store, in the split's order."""

    def split_notes(self, split: SplitT) -> list[str]:
        """What loading ``split`` changed in the benchmark's released data (the official
        evaluation's own corrections), for the organiser who imports it; none by default."""
        return []

    def judge_forecast(self, split: SplitT) -> JudgeForecast | None:
        """The judge calls one submission's runs on ``split`` make with these settings,
        predicted before judging (the organiser's task page shows it); None when the benchmark
        forecasts none."""
        return None
