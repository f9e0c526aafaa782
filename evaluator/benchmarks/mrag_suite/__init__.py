"""The MRAG-Suite benchmark, with MM-RAGChecker's claim-level diagnosis (``docs/mrag-suite.md``).

Items and their distractor pools: ``items.py``; retrieval modes GO / GPD / DO and the answer:
``modes.py``; rule metrics: ``answers.py``; RAGChecker's arithmetic: ``ragchecker.py``; claims
read as data: ``claims.py``; the judge's prompts: ``judging.py``; the judge calls, keyed
``claims/answer/<mode>/<item_id>``, ``claims/reference/<item_id>``,
``accuracy/<mode>/<item_id>`` and ``check/<sha256(text)[:16]>/<sha256(claims)[:16]>``:
``diagnosis.py`` (its checks, counted as RAGChecker or Podium's ``distinct``: ``checks.py``);
grading and the table: ``grading.py``; scores and the GPD - GO gap:
``metrics.py``; the agent's side: ``agent.py``; the sample: ``sample.py``.
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluator.benchmarks.mrag_suite import grading, items, predictions
from evaluator.benchmarks.mrag_suite.agent import ModePlan
from evaluator.benchmarks.mrag_suite.diagnosis import forecast
from evaluator.benchmarks.mrag_suite.grading import GradedAnswer
from evaluator.benchmarks.mrag_suite.judging import MragRubric
from evaluator.benchmarks.mrag_suite.metrics import (
    GAP,
    answer_unit_slices,
    answer_units,
    answer_value,
    compare_answers,
    gap,
    score_answers,
)
from evaluator.benchmarks.mrag_suite.modes import (
    COUNTINGS,
    DEFAULT_DEPTH,
    MODES,
    SETTINGS_SCHEMA,
    MragAnswer,
    answer_key,
    check_counting,
    check_mode,
    modes_argument,
    read_stored,
    retrieved,
    stored_answer,
)
from evaluator.benchmarks.mrag_suite.ragchecker import ANSWER_METRICS, ITEM_METRICS, PROFILE
from evaluator.benchmarks.mrag_suite.summary import comparison_text, summary_text
from evaluator.judges.base import Judge
from evaluator.judges.cache import JudgmentCache
from evaluator.judges.transcript import TranscriptWriter
from evaluator.records import EvaluatorError, JudgeForecast
from evaluator.seam import Benchmark, Metric, Profile, Scale, ScoreBlock
from evaluator.seam.samples import example_agent_folder
from evaluator.seam.scoring import UnitSlices
from evaluator.seam.setting_scores import flat_settings, slice_blocks

LOWER_IS_BETTER = ("hallucination", "noise_sensitivity", "contradicted", "no_answer_rate")
HEADLINE = ("accuracy", "exact_match", "rouge_l", "precision", "recall", "f1", "faithfulness",
            "hallucination", "claim_recall", "context_precision")  # fmt: skip


def _metric(name: str) -> Metric:
    lower = any(name.startswith(prefix) for prefix in LOWER_IS_BETTER)
    label = name.replace("_", " ").capitalize().replace("Rouge l", "ROUGE-L")
    scale: Scale = "ratio" if name == "modality_gap" else "percent"
    return Metric(name, label, not lower, scale, "settings", name == "accuracy", name in HEADLINE)


class MragSuite(Benchmark[items.MragSplit, MragAnswer, GradedAnswer]):
    """MRAG-Suite: the retrieval ``modes`` evaluated (one run each), the retrieval depth
    (``passages``, ``images``: default 5 + 5) and the ``counting`` (RAGChecker's by default,
    or Podium's ``distinct``: ``checks.py``)."""

    name = "mrag-suite"
    title = "MRAG-Suite"
    rubric = MragRubric()
    table = "answers"
    unit = "answers"
    groups = "sources"
    shown_fields = ("question", "reference")
    answer_field = "short_answer"
    columns = grading.COLUMNS
    metrics = (
        *(_metric(name) for name in ("accuracy", "exact_match", "rouge_l", "no_answer_rate")),
        *(_metric(name) for name in PROFILE),
        Metric("count", "Answers", scale="count", where="settings"),
        Metric(GAP, "GPD - GO accuracy gap", scale="ratio", where="gap"),
    )
    primary = "accuracy"
    passing_unit = 100.0  # a correct answer (units are x100)
    settings_schema: ClassVar[dict[str, Any]] = SETTINGS_SCHEMA

    def __init__(
        self,
        modes: Sequence[str] = MODES,
        passages: int = DEFAULT_DEPTH[0],
        images: int = DEFAULT_DEPTH[1],
        counting: str = COUNTINGS[0],
    ) -> None:
        self.modes = tuple(check_mode(mode) for mode in modes)
        if passages < 0 or images < 0:
            raise EvaluatorError("mrag-suite: the retrieval depth cannot be negative")
        self.depth = (passages, images)
        self.counting = check_counting(counting)
        self.calls: dict[str, float] = {}  # the last grading's judge calls, predicted and made

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        group.add_argument(
            "--modes",
            type=modes_argument,
            default=MODES,
            help="mrag-suite: retrieval modes to score (default GO,GPD,DO)",
        )
        group.add_argument(
            "--passages",
            type=int,
            default=DEFAULT_DEPTH[0],
            help="mrag-suite: passages retrieved per item (default 5)",
        )
        group.add_argument("--images", type=int, default=DEFAULT_DEPTH[1],
                           help="mrag-suite: images retrieved per item (default 5)")  # fmt: skip
        group.add_argument("--counting", choices=COUNTINGS, default=COUNTINGS[0],
                           help="mrag-suite: ragchecker (default: an item retrieved twice and "
                           "a claim extracted twice count twice) or distinct (once)")  # fmt: skip

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> MragSuite:
        return cls(args.modes, args.passages, args.images, args.counting)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> MragSuite:
        passages, images = document.get("depth", DEFAULT_DEPTH)
        counting = document.get("counting", COUNTINGS[0])
        return cls(document.get("modes", MODES), passages, images, counting)

    def settings(self) -> dict[str, Any]:
        return {"modes": list(self.modes), "depth": list(self.depth), "counting": self.counting}

    def load_split(self, path: str | Path, **options: Any) -> items.MragSplit:
        if options.get("hf_split") is not None:
            raise EvaluatorError("mrag-suite: a split has no Hugging Face splits (hf_split)")
        return items.load_split(path)

    def load_predictions(
        self, path: str | Path, split: items.MragSplit
    ) -> tuple[dict[str, MragAnswer], list[str]]:
        return predictions.load_predictions(path, split, self.modes)

    def grade(
        self,
        split: items.MragSplit,
        predictions: Mapping[str, MragAnswer],
        judge: Judge,
        cache: JudgmentCache | None,
        progress: bool = True,
        transcript: TranscriptWriter | None = None,
    ) -> list[GradedAnswer]:
        predicted = self.judge_forecast(split).calls
        writer = transcript or TranscriptWriter(io.StringIO())  # counts the requests
        start = writer.lines
        graded = grading.grade_answers(
            split, predictions, self.modes, self.depth, judge, cache, progress, writer,
            self.counting,
        )  # fmt: skip
        self.calls = {"predicted": predicted, "requested": writer.lines - start}
        return graded

    def never_asked(self, split: items.MragSplit, keys: Collection[str]) -> set[str]:
        return grading.never_asked(split, keys)

    def judge_forecast(self, split: items.MragSplit) -> JudgeForecast:
        return forecast([(i, retrieved(i, m, self.depth, self.counting))
                         for m in self.modes for i in split.items])  # fmt: skip

    def bundle_files(self, split: items.MragSplit) -> list[str]:
        return [items.SPLIT_FILE, *split.image_files()]

    def split_counts(self, split: items.MragSplit) -> tuple[int, int]:
        return len({item.labels.get("source") for item in split.items}), len(split.items)

    def split_notes(self, split: items.MragSplit) -> list[str]:
        every = [e for i in split.items for e in (*i.evidence, *i.distractors)]
        blind = sum(1 for e in every if e.modality == "image" and not e.content.strip())
        if not blind:
            return []
        return [f"{blind} image(s) have no caption: the text-only claim checker finds no "
                "claim in them (they count as retrieved, never as relevant)"]  # fmt: skip

    def run_settings(self) -> tuple[str, ...]:
        return self.modes

    def for_setting(self, setting: str) -> MragSuite:
        if check_mode(setting, "mrag-suite setting") not in self.modes:
            raise EvaluatorError(f"mrag-suite: mode {setting!r} is not evaluated here")
        return MragSuite((setting,), *self.depth, counting=self.counting)

    def derived(self, settings: Mapping[str, Mapping[str, Any]]) -> dict[str, float | None]:
        return gap(settings)[0]

    def undefined(self, settings: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
        return gap(settings)[1]

    def in_setting(self, metric: Metric, setting: str) -> bool:
        return metric.where != "gap" or setting == ""

    def profile(self) -> Profile:
        """MM-RAGChecker's diagnosis: the answer metrics, each item metric over all, image and
        text items, the claims supported by an image or a passage; the GPD - GO gap beside.
        Its title names a counting other than RAGChecker's."""
        rows: list[tuple[str, tuple[str | None, ...]]]
        rows = [(self.metric(n).label, (n, None, None)) for n in ANSWER_METRICS]
        rows += [(self.metric(n).label, (n, f"{n}_image", f"{n}_text")) for n in ITEM_METRICS]
        rows += [("Claims supported", (None, "image_support", "text_support")),
                 ("Contradicted", ("contradicted", None, None))]  # fmt: skip
        series = ("all items", "image items", "text items")
        title = "MM-RAGChecker diagnosis"
        if self.counting != COUNTINGS[0]:
            title += f", counted {self.counting} (Podium's reading, not RAGChecker's)"
        return Profile(title, series, tuple(rows), (GAP,))

    def agent_plan(
        self, split: items.MragSplit, task: str, answered: Mapping[str, str]
    ) -> ModePlan:
        if len(self.modes) != 1:
            raise EvaluatorError("mrag-suite: a run evaluates one mode (for_setting)")
        return ModePlan(split, self.modes[0], self.depth, self.counting)

    def split_keys(self, split: items.MragSplit) -> list[str]:
        return [answer_key(mode, item.item_id) for mode in self.modes for item in split.items]

    def stored_prediction(self, split: items.MragSplit, key: str, response: str) -> MragAnswer:
        mode, _, item_id = key.partition("/")
        return read_stored(item_id, mode, response)

    def stored_reply(self, prediction: MragAnswer) -> str:
        return stored_answer(prediction)

    def prediction_record(self, split: items.MragSplit, key: str, response: str) -> dict[str, Any]:
        answer = self.stored_prediction(split, key, response)
        return {"item_id": answer.item_id, "mode": answer.mode,
                "short_answer": answer.short_answer, "long_answer": answer.long_answer}  # fmt: skip

    def item_key(self, item: GradedAnswer) -> str:
        return answer_key(item.mode, item.item_id)

    def item_grade(self, item: GradedAnswer) -> str:
        return item.grade

    def falls_short(self, grade: str) -> bool:
        return grade in ("incorrect", "no_answer")

    def verdict_menu(self) -> tuple[str, ...]:
        """The judge's correct / incorrect, and no_answer (an empty short answer, by rule)."""
        return (*self.rubric.menu(), "no_answer")

    def abstains(self, grade: str) -> bool:
        return grade == "no_answer"

    def verdict_value(self, verdict: str) -> float | None:
        # accuracy (x100) is the answers' mean of these (``answer_units``)
        return answer_value(verdict) if verdict in self.verdict_menu() else None

    def item_slices(self, row: Mapping[str, Any]) -> dict[str, str]:
        return {k: str(v) for k, v in row.items() if k not in self.columns and v is not None}

    def item_image(self, split: items.MragSplit, key: str) -> Path | None:
        mode, _, item_id = key.partition("/")
        try:
            found = retrieved(split.item(item_id), mode, self.depth, self.counting)
        except (KeyError, EvaluatorError):
            return None
        images = [entry for entry in found if entry.modality == "image"]
        return split.root / images[0].file if images else None

    def aggregate(self, graded: Sequence[GradedAnswer], seed: int = 0) -> dict[str, Any]:
        return score_answers(graded, seed) | {"judge_calls": dict(self.calls)}

    def score_blocks(self, scores: Mapping[str, Any]) -> list[ScoreBlock]:
        """One row per slice value: each mode's metrics (a single mode's unprefixed, as in a
        server run; else ``<mode>.<metric>``) and the gap."""
        rows = []
        for dimension, value, block in slice_blocks(scores):
            metrics, count = flat_settings(block["settings"])
            rows.append(ScoreBlock(dimension, value, count, metrics | block["gap"]))
        return rows

    def to_row(self, item: GradedAnswer) -> dict[str, Any]:
        return grading.to_row(item)

    def from_row(self, row: Mapping[str, Any], where: str) -> GradedAnswer:
        return grading.from_row(row, where)

    def summary(self, document: Mapping[str, Any], graded: Sequence[GradedAnswer]) -> str:
        return summary_text(document, graded)

    def paired(
        self, a: Sequence[GradedAnswer], b: Sequence[GradedAnswer], seed: int = 0
    ) -> dict[str, Any]:
        return compare_answers(a, b, seed)

    def units(self, graded: Sequence[GradedAnswer]) -> np.ndarray | None:
        found = answer_units(graded)
        return np.array([found[key] for key in sorted(found)]) if found else None

    def unit_slices(self, graded: Sequence[GradedAnswer]) -> UnitSlices:
        """A unit per (mode, item) answer, by key: its item's labels."""
        return answer_unit_slices(graded)

    def format_comparison(self, result: Mapping[str, Any], a_name: str, b_name: str) -> str:
        return comparison_text(result, a_name, b_name)

    def example_agent(self) -> Path:
        return example_agent_folder("mrag-grounded")

    def write_sample(self, out_dir: str | Path, seed: int = 0) -> None:
        from evaluator.benchmarks.mrag_suite.sample import write_sample

        write_sample(out_dir, seed)

    def write_sample_predictions(
        self, split: items.MragSplit, path: str | Path, seed: int = 0
    ) -> None:
        predictions.write_predictions(predictions.sample_answers(split, self.modes, seed), path)


BENCHMARK = MragSuite
