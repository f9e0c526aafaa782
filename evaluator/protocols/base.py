"""What every benchmark protocol provides: the one place that knows a benchmark.

A protocol declares, in typed code:

- its split (``load_split``: Podium's format and the benchmark's released one, errors naming
  file, line and field) and its predictions (``load_predictions``);
- its options (``add_arguments`` / ``from_arguments`` on the CLI, ``settings()`` as they go
  into scores.json);
- grading (``grade``): rule checks and judge calls on its ``rubric``, each call with a stable
  key (``docs/protocols.md``) written to the transcript;
- its metrics (``metrics``: name, label, direction, scale, interval, where in scores.json;
  ``primary``) and their aggregation (``score``: ``{"complete", "unjudged", ...,
  "slices"}``);
- what the server stores (``split_keys``, ``stored_prediction``; per graded item its answer's
  ``item_key``, its ``item_grade`` and ``to_row`` as the verdict's detail, read back by
  ``from_row``);
- how a run puts its items to an agent (``agent_plan``, ``evaluator/protocols/agent_plan.py``),
  one run per setting it evaluates (``run_settings``, ``for_setting``), and what a split
  bundle holds (``bundle_files``, ``split_counts``);
- its per-item table (``columns``, ``to_row`` / ``from_row``, written as ``<table>.jsonl``
  and ``<table>.csv``), its summary for people (``summary``), its paired comparison on the
  primary metric (``compare`` / ``format_comparison``), and its generated sample
  (``write_sample``).

The CLI, the report and the conformance tests (``tests/evaluator/test_protocols.py``) go only
through this interface; ``docs/protocols.md`` says how to add one.
"""

from __future__ import annotations

import argparse
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeVar

import jsonschema

from evaluator.judges.base import Judge
from evaluator.judges.cache import JudgmentCache
from evaluator.judges.rubric import Rubric
from evaluator.judges.transcript import TranscriptWriter
from evaluator.protocols.agent_plan import AgentPlan
from evaluator.records import EvaluatorError, JudgeForecast

SplitT = TypeVar("SplitT")
PredictionT = TypeVar("PredictionT")
ItemT = TypeVar("ItemT")

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
class Profile:
    """An entry's diagnosis as its leaderboard page charts it (``Protocol.profile``): one group
    of bars per row (its label and, per series, the metric of its bar, None for no bar), all
    on one scale; ``derived``: the scores across settings shown beside it."""

    title: str
    series: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str | None, ...]], ...]
    derived: tuple[str, ...] = ()


@dataclass(frozen=True)
class ShownAnswer:
    """An answer as a run page renders it: markdown (the team's: shown sanitised, no raw HTML,
    no remote image) whose images are links ``image:N``, N an index of ``placed_images``, and
    what the page says beside each image (its scores)."""

    markdown: str
    image_notes: dict[int, str]


class Protocol(ABC, Generic[SplitT, PredictionT, ItemT]):
    """Loading, grading, aggregation and the per-item table of one benchmark."""

    name: ClassVar[str]  # as in scores.json and on the CLI ("crag-mm", "visual-rag")
    title: ClassVar[str]
    rubric: ClassVar[Rubric]  # what its judges are asked
    table: ClassVar[str]  # the per-item table's file stem ("turns", "queries")
    unit: ClassVar[str]  # what a score block counts, plural ("turns", "queries")
    groups: ClassVar[str]  # what a split's items are grouped in ("conversations", "species")
    # the per-item row's fields (``to_row``) holding the item's question and its ground truth:
    # what a run page shows beside each answer of a public split
    shown_fields: ClassVar[tuple[str, str]]
    # the per-item row's field holding the answer as the judge read it (CRAG-MM: cut to 75
    # tokens): what a person auditing the judge reads
    answer_field: ClassVar[str] = "answer"
    searches: ClassVar[bool] = False  # whether its agents may use Podium's search service
    # ... over the challenge's corpus (image and web search); False: image search only, among
    # each item's candidates (``AgentPlan.candidates``; no corpus needed)
    search_corpus: ClassVar[bool] = True
    # Some judge prompts carry images (M2RAG): they go to a judge that sees them
    # (``vision_routed``; on the server the task's vision judge endpoint, which an
    # LLM-judged task must have to be published)
    image_prompts: ClassVar[bool] = False
    columns: ClassVar[tuple[str, ...]]  # its fixed columns, in order; label columns follow
    metrics: ClassVar[tuple[Metric, ...]]
    primary: ClassVar[str]  # the default primary metric (ranks entries, paired comparison)
    # A task's settings for this protocol (JSON Schema; every property has a default): an
    # organiser's task holds them as JSON, checked here (``check_settings``).
    settings_schema: ClassVar[dict[str, Any]]

    @classmethod
    @abstractmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        """The protocol's options on ``python -m evaluator score``."""

    @classmethod
    @abstractmethod
    def from_arguments(cls, args: argparse.Namespace) -> Protocol[SplitT, PredictionT, ItemT]:
        """The protocol built from the options ``add_arguments`` declared."""

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
    def from_settings(cls, settings: Any) -> Protocol[SplitT, PredictionT, ItemT]:
        """The protocol a task's settings make (``check_settings`` first)."""
        return cls(**cls.check_settings(settings))

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Protocol[SplitT, PredictionT, ItemT]:
        """The protocol as a scores document recorded it (to compare or re-read its runs)."""
        return cls()

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """The protocol's options as they go into scores.json."""

    @abstractmethod
    def load_split(self, path: str | Path, **options: Any) -> SplitT:
        """A split directory (Podium's format or the benchmark's released layout). Options a
        protocol may take: ``hf_split`` (which split of a Hugging Face dataset), ``cache_dir``
        (where a released layout may be converted once)."""

    @abstractmethod
    def load_predictions(
        self, path: str | Path, split: SplitT
    ) -> tuple[dict[str, PredictionT], list[str]]:
        """Predictions keyed by what they answer, and warnings (items left unanswered)."""

    @abstractmethod
    def grade(
        self,
        split: SplitT,
        predictions: Mapping[str, PredictionT],
        judge: Judge,
        cache: JudgmentCache | None,
        progress: bool = True,
        transcript: TranscriptWriter | None = None,
    ) -> list[ItemT]:
        """Grade every item of ``split``; items the judge could not decide stay undecided.
        Every judge call goes to ``transcript`` (with the key the protocol gives it)."""

    @abstractmethod
    def bundle_files(self, split: SplitT) -> list[str]:
        """The files of ``split`` (relative to its root) a server bundle holds: ``load_split``
        reads the split back from them alone."""

    @abstractmethod
    def split_counts(self, split: SplitT) -> tuple[int, int]:
        """How big ``split`` is: its groups (CRAG-MM: conversations; Visual-RAG: species) and
        the items one run answers (turns; queries)."""

    def split_notes(self, split: SplitT) -> list[str]:
        """What loading ``split`` changed in the benchmark's released data (the official
        evaluation's own corrections), for the organiser who imports it; none by default."""
        return []

    def judge_forecast(self, split: SplitT) -> JudgeForecast | None:
        """The judge calls one submission's runs on ``split`` make with these settings,
        predicted before judging (the organiser's task page shows it); None when the protocol
        forecasts none."""
        return None

    def profile(self) -> Profile | None:
        """The per-entry profile a leaderboard entry's page charts from the entry's headline
        metrics (MRAG-Suite: the claim metrics over all, image and text items); None: no
        profile."""
        return None

    def vision_routed(self, judge: Judge, vision: Judge) -> Judge:
        """The judge to give ``grade``: ``judge`` for the prompts, ``vision`` (a model that
        sees images) for those carrying images; only for protocols with ``image_prompts``."""
        raise EvaluatorError(f"{self.name}: no judge prompt carries an image")

    def run_settings(self) -> tuple[str, ...]:
        """The settings a task evaluates, one run each; ``("",)`` when the protocol has none."""
        return ("",)

    def for_setting(self, setting: str) -> Protocol[SplitT, PredictionT, ItemT]:
        """The protocol that plans, grades and scores one run of ``setting``."""
        if setting:
            raise EvaluatorError(f"{self.name} has no settings to run, not {setting!r}")
        return self

    def derived(self, settings: Mapping[str, Mapping[str, Any]]) -> dict[str, float | None]:
        """Scores across one submission's runs (``settings``: each setting's headline metrics,
        as ``score_blocks`` stored them), e.g. Visual-RAG's gCUE; none by default. A score that
        cannot be computed is None, and ``undefined`` says why."""
        return {}

    def undefined(self, settings: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
        """Why each of ``derived(settings)``'s None values is undefined, by name."""
        return {}

    def in_setting(self, metric: Metric, setting: str) -> bool:
        """Whether runs of ``setting`` have ``metric`` (the leaderboard's columns)."""
        return True

    def on_board(self, metric: Metric, groups: int, items: int) -> bool:
        """Whether ``metric`` means something on a split of ``groups`` groups holding ``items``
        items (``split_counts``); a leaderboard shows no column that does not."""
        return True

    @abstractmethod
    def agent_plan(self, split: SplitT, task: str, answered: Mapping[str, str]) -> AgentPlan[Any]:
        """One run's items as the runner asks them (``answered``: item key -> stored reply of
        items an earlier attempt answered, for histories); ``task``: the agent's task id."""

    @abstractmethod
    def split_keys(self, split: SplitT) -> list[str]:
        """The key of every answer a run on ``split`` must store, in the split's order."""

    @abstractmethod
    def stored_prediction(self, split: SplitT, key: str, response: str) -> PredictionT:
        """The prediction a stored answer makes (``response``: the text the server kept)."""

    @abstractmethod
    def stored_reply(self, prediction: PredictionT) -> str:
        """A prediction as the server stores its answer (``stored_prediction``'s inverse)."""

    @abstractmethod
    def prediction_record(self, split: SplitT, key: str, response: str) -> dict[str, Any]:
        """A stored answer as one line of the protocol's predictions file (``load_predictions``
        reads it back): what ``python -m workers.cli`` writes."""

    @abstractmethod
    def item_key(self, item: ItemT) -> str:
        """The key of the answer a graded item grades (one of ``split_keys``)."""

    @abstractmethod
    def item_grade(self, item: ItemT) -> str:
        """A graded item's grade (``evaluator.judges.rubric.UNJUDGED`` when undecided)."""

    @abstractmethod
    def falls_short(self, grade: str) -> bool:
        """Whether ``grade`` (an ``item_grade``) is a wrong answer in the protocol's terms
        (CRAG-MM: missing or hallucinated; Visual-RAG: below full score or no answer): the run
        page's "wrong answers only". ``unjudged`` never is."""

    def verdict_menu(self) -> tuple[str, ...]:
        """The grades a person auditing the judge chooses among, in the order a labelling page
        offers them: the rubric's (``Rubric.menu``), and those the protocol decides before any
        judge call; empty when an item's grade is not one of a few (M2RAG: a number per
        answer), so its judge cannot be audited item by item."""
        return self.rubric.menu()

    @abstractmethod
    def abstains(self, grade: str) -> bool:
        """Whether ``grade`` says the agent gave no answer (CRAG-MM ``missing``, Visual-RAG
        ``no_answer``): such answers are left out when two teams' answers are compared."""

    @abstractmethod
    def item_slices(self, row: Mapping[str, Any]) -> dict[str, str]:
        """The slice values of one per-item row (``to_row``), named as ``score``'s slices are
        (dimension -> value): what the run page filters its answers by."""

    @abstractmethod
    def item_image(self, split: SplitT, key: str) -> Path | None:
        """The image the agent was shown first for the answer ``key`` (one of ``split_keys``
        of any setting), or None: the run page shows it, scaled down, beside the answer."""

    def placed_images(self, split: SplitT, item: ItemT) -> dict[int, Path]:
        """The images a graded answer shows within its text, by the index it names them
        (M2RAG's placements): the judging stage stores them for the run page; none by
        default."""
        return {}

    def shown_answer(self, row: Mapping[str, Any]) -> ShownAnswer | None:
        """How a run page shows the answer of a verdict row (``to_row``) when it is markdown
        with images (M2RAG); None by default: the stored reply, as text."""
        return None

    @abstractmethod
    def score(self, graded: Sequence[ItemT], seed: int = 0) -> dict[str, Any]:
        """Aggregate: ``{"complete", "unjudged", <the metric blocks>, "slices"}``."""

    @abstractmethod
    def score_blocks(self, scores: Mapping[str, Any]) -> list[ScoreBlock]:
        """A ``score`` result as the rows the server stores: ``all``/``all`` first, then one
        per slice value (the leaderboard, its slice view and exports read only these)."""

    @abstractmethod
    def to_row(self, item: ItemT) -> dict[str, Any]:
        """One row of the per-item table (the ``columns`` first, then label columns)."""

    @abstractmethod
    def from_row(self, row: Mapping[str, Any], where: str) -> ItemT:
        """Read a row written by ``to_row`` back; ``where`` names the file and line for errors."""

    @abstractmethod
    def summary(self, document: Mapping[str, Any], graded: Sequence[ItemT]) -> str:
        """The headline numbers of a scores document, for people (the CLI prints it)."""

    @abstractmethod
    def compare(self, a: Sequence[ItemT], b: Sequence[ItemT], seed: int = 0) -> dict[str, Any]:
        """Paired comparison of two runs on the same items, on the primary metric:
        ``{"metric", "a", "b", "difference", "difference_ci95", "p_value", "separable", ...}``;
        an ``EvaluatorError`` when the runs cannot be paired (other items, unjudged items)."""

    @abstractmethod
    def format_comparison(self, result: Mapping[str, Any], a_name: str, b_name: str) -> str:
        """A few readable lines for a ``compare`` result."""

    @abstractmethod
    def write_sample(self, out_dir: str | Path, seed: int = 0) -> None:
        """Write the protocol's generated sample data (``python -m evaluator sample``)."""

    @abstractmethod
    def write_sample_predictions(self, split: SplitT, path: str | Path, seed: int = 0) -> None:
        """Write made-up predictions for ``split`` (some right, some wrong, some "I don't
        know"): the conformance tests, the benchmarks and the demo use them."""

    def ranking_metrics(self) -> tuple[Metric, ...]:
        """The metrics that may rank a task's entries (its primary metric): those a run of
        these settings is scored on, neither a count nor a score across a submission's
        settings (``derived``: Visual-RAG's gCUE, MRAG-Suite's GPD - GO gap)."""
        settings = self.run_settings()
        return tuple(
            m
            for m in self.metrics
            if m.scale != "count" and any(self.in_setting(m, s) for s in settings)
        )

    def metric(self, name: str) -> Metric:
        """The declared metric called ``name`` (KeyError when there is none)."""
        for metric in self.metrics:
            if metric.name == name:
                return metric
        raise KeyError(name)
