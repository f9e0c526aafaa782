"""The CRAG-MM benchmark: per-turn grading (``grading.py``), the judge's rubric (``prompt.py``,
``rules.py``), metrics (``metrics.py``), the paired comparison (``compare.py``), the summary
(``summary.py``) and the official per-turn table, extended with Podium's verdict and audit
columns. Judge calls are keyed ``turn/<interaction_id>``."""

from __future__ import annotations

import argparse
import random
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluator.benchmarks.crag_mm.agent import TurnPlan
from evaluator.benchmarks.crag_mm.compare import (
    compare_runs,
    format_comparison,
    run_unit_slices,
    run_units,
)
from evaluator.benchmarks.crag_mm.grading import MISSING_RULES, grade, missing_rule, never_asked
from evaluator.benchmarks.crag_mm.loading import load_split
from evaluator.benchmarks.crag_mm.metrics import COUNTINGS, EGO_SLICE, TURN_SLICE, score_turns
from evaluator.benchmarks.crag_mm.predictions import load_predictions, write_predictions
from evaluator.benchmarks.crag_mm.prompt import CragMMRubric
from evaluator.benchmarks.crag_mm.records import (
    STANDARD_LABELS,
    GradedTurn,
    Prediction,
    Split,
    Verdict,
)
from evaluator.benchmarks.crag_mm.split import SESSIONS_FILE
from evaluator.benchmarks.crag_mm.summary import format_summary
from evaluator.benchmarks.crag_mm.truncation import Truncator, load_truncator
from evaluator.judges.base import Judge
from evaluator.judges.cache import JudgmentCache
from evaluator.judges.transcript import TranscriptWriter
from evaluator.records import EvaluatorError
from evaluator.seam import Benchmark, Metric, ScoreBlock
from evaluator.seam.samples import example_agent_folder
from evaluator.seam.scoring import UnitSlices

# The official per-turn columns, then Podium's.
OFFICIAL_COLUMNS: tuple[str, ...] = (
    "session_id",
    "interaction_id",
    "turn_idx",
    "is_ego",
    "image_quality",
    "query_category",
    "domain",
    "dynamism",
    "query",
    "ground_truth",
    "agent_response",
    "is_exact_match",
    "is_correct",
    "is_miss",
)
PODIUM_COLUMNS: tuple[str, ...] = (
    "verdict",
    "judge_id",
    "prompt_version",
    "prompt_hash",
    "judge_error",
)
_TEXT_FIELDS = ("session_id", "interaction_id", "query", "ground_truth", "agent_response")
_AUDIT_FIELDS = ("judge_id", "prompt_version", "prompt_hash")
_FLAGS = ("is_ego", "is_exact_match", "is_miss")


class CragMM(Benchmark[Split, Prediction, GradedTurn]):
    """CRAG-MM turns: truncation, missing rule (``kit-a``/``kit-b``), counting order
    (``paper``/``kit-a``/``kit-b``). The truncator is loaded on first use when not given."""

    name = "crag-mm"
    title = "CRAG-MM"
    rubric = CragMMRubric()
    table = "turns"
    groups = "conversations"
    shown_fields = ("query", "ground_truth")
    answer_field = "agent_response"  # cut to 75 tokens, as judged
    searches = True  # image search (tasks 1-3), web search (tasks 2-3): the official API
    unit = "turns"
    columns = OFFICIAL_COLUMNS + PODIUM_COLUMNS
    metrics = (
        Metric("truthfulness", "Truthfulness", scale="signed_fraction", interval=True,
               headline=True),
        Metric("accuracy", "Accuracy", headline=True),
        Metric("missing", "Missing", higher_is_better=False, headline=True),
        Metric("hallucination_rate", "Hallucination", higher_is_better=False, headline=True),
        Metric("early_stop_rate", "Early-stop rate", higher_is_better=False, headline=True),
        Metric("avg_successful_turns", "Avg successful turns", scale="ratio", headline=True),
        Metric("exact_match", "Exact match", headline=True),
        Metric("conversation_score", "Conversation score", scale="signed_fraction"),
        Metric("turns", "Turns", scale="count"),
        Metric("conversations", "Conversations", scale="count"),
    )  # fmt: skip
    primary = "truthfulness"
    passing_unit = 1.0  # a correct answer (a conversation: every turn correct)
    # What only conversations of several turns have: not columns of a single-turn split.
    multi_turn_metrics = frozenset(
        {"early_stop_rate", "avg_successful_turns", "conversation_score"}
    )
    settings_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "counting": {
                "enum": list(COUNTINGS),
                "default": "paper",
                "title": "Counting",
                "description": "the paper's definitions, or an official kit's counting order",
            },
            "missing_variant": {
                "enum": list(MISSING_RULES),
                "default": "kit-b",
                "title": "Missing-answer rule",
                "description": 'which official "I don\'t know" rule marks an answer missing',
            },
        },
        "additionalProperties": False,
    }

    def on_board(self, metric: Metric, groups: int, items: int) -> bool:
        return metric.name not in self.multi_turn_metrics or items > groups

    def __init__(
        self,
        truncator: Truncator | None = None,
        missing_variant: str = "kit-b",
        counting: str = "paper",
        hf_split: str | None = None,
    ) -> None:
        missing_rule(missing_variant)
        if counting not in COUNTINGS:
            raise EvaluatorError(f"counting {counting!r}: expected one of {', '.join(COUNTINGS)}")
        self.truncator = truncator
        self.missing_variant = missing_variant
        self.counting = counting
        self.hf_split = hf_split  # which split of Hugging Face data (load_split)

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        group.add_argument(
            "--missing-variant",
            choices=tuple(MISSING_RULES),
            default="kit-b",
            help="crag-mm: which official 'I don't know' rule marks an answer missing (kit-b)",
        )
        group.add_argument(
            "--counting",
            choices=COUNTINGS,
            default="paper",
            help="crag-mm: the paper's definitions (default) or an official kit's counting order",
        )
        group.add_argument(
            "--tokenizer", help="crag-mm: Llama-3.2 tokenizer.json (default: $PODIUM_TOKENIZER)"
        )
        group.add_argument(
            "--hf-split", help="crag-mm: which split, when Hugging Face data holds several"
        )

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> CragMM:
        return cls(
            truncator=load_truncator(args.tokenizer),
            missing_variant=args.missing_variant,
            counting=args.counting,
            hf_split=args.hf_split,
        )

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> CragMM:
        return cls(
            missing_variant=document.get("missing_variant", "kit-b"),
            counting=document.get("counting", "paper"),
        )

    def settings(self) -> dict[str, Any]:
        return {
            "truncation": self.truncator.name if self.truncator else None,
            "missing_variant": self.missing_variant,
            "counting": self.counting,
        }

    def load_split(self, path: str | Path, **options: Any) -> Split:
        return load_split(
            path,
            hf_split=options.get("hf_split", self.hf_split),
            cache_dir=options.get("cache_dir"),
        )

    def load_predictions(
        self, path: str | Path, split: Split
    ) -> tuple[dict[str, Prediction], list[str]]:
        return load_predictions(path, split)

    def bundle_files(self, split: Split) -> list[str]:
        """``sessions.jsonl`` (Podium's format, also for a split read from Hugging Face: the
        loader writes it) and the conversations' images."""
        return [SESSIONS_FILE, *sorted({c.image for c in split.conversations if c.image})]

    def split_counts(self, split: Split) -> tuple[int, int]:
        return len(split.conversations), sum(len(c.turns) for c in split.conversations)

    def split_notes(self, split: Split) -> list[str]:
        return list(split.notes)  # the official data corrections made converting it

    def agent_plan(self, split: Split, task: str, answered: Mapping[str, str]) -> TurnPlan:
        if self.truncator is None:
            self.truncator = load_truncator()
        return TurnPlan(split, task, self.truncator.truncate, answered)

    def split_keys(self, split: Split) -> list[str]:
        return [turn.interaction_id for _, _, turn in split.turns()]

    def stored_prediction(self, split: Split, key: str, response: str) -> Prediction:
        return Prediction(split.session_of[key], key, response)

    def stored_reply(self, prediction: Prediction) -> str:
        return prediction.response

    def prediction_record(self, split: Split, key: str, response: str) -> dict[str, Any]:
        return {"session_id": split.session_of[key], "interaction_id": key, "response": response}

    def item_key(self, item: GradedTurn) -> str:
        return item.interaction_id

    def item_grade(self, item: GradedTurn) -> str:
        return item.verdict.value

    def falls_short(self, grade: str) -> bool:
        return grade in (Verdict.MISSING, Verdict.HALLUCINATED)

    def verdict_menu(self) -> tuple[str, ...]:
        """The judge's correct / hallucinated with missing (decided by the rule) between."""
        first, *rest = self.rubric.menu()
        return (first, Verdict.MISSING.value, *rest)

    def abstains(self, grade: str) -> bool:
        return grade == Verdict.MISSING

    def verdict_value(self, verdict: str) -> float | None:
        # a single-turn split's truthfulness is the turns' mean of these; a multi-turn one's,
        # the conversations' mean of their turns' (after an early stop): calibrated per turn,
        # an approximation there (docs/board-statistics.md)
        values = {Verdict.CORRECT: 1.0, Verdict.MISSING: 0.0, Verdict.HALLUCINATED: -1.0}
        return values.get(Verdict(verdict)) if verdict in set(Verdict) else None

    def item_slices(self, row: Mapping[str, Any]) -> dict[str, str]:
        """Its labels (standard and the split's own), ``is_ego`` and ``turn``, as scored."""
        labels = (*STANDARD_LABELS, *(name for name in row if name not in self.columns))
        slices = {name: str(row[name]) for name in labels if row.get(name) is not None}
        if isinstance(row.get("is_ego"), bool):
            slices[EGO_SLICE] = "true" if row["is_ego"] else "false"
        if isinstance(row.get("turn_idx"), int):
            slices[TURN_SLICE] = str(row["turn_idx"])
        return slices

    def item_image(self, split: Split, key: str) -> Path | None:
        conversation = split.conversation_of.get(key)
        return split.image_path(conversation) if conversation else None

    def summary(self, document: Mapping[str, Any], graded: Sequence[GradedTurn]) -> str:
        return format_summary(document, graded)

    def paired(
        self, a: Sequence[GradedTurn], b: Sequence[GradedTurn], seed: int = 0
    ) -> dict[str, Any]:
        return compare_runs(a, b, self.counting, seed)

    def units(self, graded: Sequence[GradedTurn]) -> np.ndarray | None:
        return run_units(graded, self.counting)

    def unit_slices(self, graded: Sequence[GradedTurn]) -> UnitSlices:
        return run_unit_slices(graded, self.counting)

    def format_comparison(self, result: Mapping[str, Any], a_name: str, b_name: str) -> str:
        return format_comparison(dict(result), a_name, b_name)

    def example_agent(self) -> Path:
        return example_agent_folder("rag-kit-a")

    def write_sample(self, out_dir: str | Path, seed: int = 0) -> None:
        from evaluator.benchmarks.crag_mm.sample import write_sample

        write_sample(out_dir, seed=seed)

    def write_sample_predictions(self, split: Split, path: str | Path, seed: int = 0) -> None:
        rng = random.Random(seed)
        answers = (lambda t: t.ground_truth, lambda t: "I don't know", lambda t: "a rabbit")
        write_predictions(
            path,
            [
                Prediction(c.session_id, t.interaction_id, rng.choice(answers)(t))
                for c, _, t in split.turns()
            ],
        )

    def grade(
        self,
        split: Split,
        predictions: Mapping[str, Prediction],
        judge: Judge,
        cache: JudgmentCache | None,
        progress: bool = True,
        transcript: TranscriptWriter | None = None,
    ) -> list[GradedTurn]:
        if self.truncator is None:
            self.truncator = load_truncator()
        return grade(
            split,
            predictions,
            judge,
            cache,
            self.truncator,
            self.missing_variant,
            progress,
            transcript,
        )

    def never_asked(self, split: Split, keys: Collection[str]) -> set[str]:
        return never_asked(split, keys)

    def aggregate(self, graded: Sequence[GradedTurn], seed: int = 0) -> dict[str, Any]:
        return score_turns(graded, counting=self.counting, seed=seed)

    def score_blocks(self, scores: Mapping[str, Any]) -> list[ScoreBlock]:
        named = [("all", "all", scores["all"])]  # "ego" is the is_ego slice's "true" value
        named += [
            (dimension, value, block)
            for dimension, values in scores["slices"].items()
            for value, block in values.items()
        ]
        return [ScoreBlock(d, str(v), int(block["turns"]), dict(block)) for d, v, block in named]

    def to_row(self, item: GradedTurn) -> dict[str, Any]:
        clash = sorted(set(item.labels) & set(self.columns) - set(STANDARD_LABELS))
        if clash:
            raise EvaluatorError(
                f"turn {item.interaction_id}: label {clash[0]!r} has the name of a column"
            )
        row: dict[str, Any] = {
            "session_id": item.session_id,
            "interaction_id": item.interaction_id,
            "turn_idx": item.turn_idx,
            "is_ego": item.is_ego,
            **{label: item.labels.get(label) for label in STANDARD_LABELS},
            "query": item.query,
            "ground_truth": item.ground_truth,
            "agent_response": item.agent_response,
            "is_exact_match": item.is_exact_match,
            "is_correct": item.is_correct,
            "is_miss": item.is_miss,
            "verdict": item.verdict.value,
            "judge_id": item.judge_id,
            "prompt_version": item.prompt_version,
            "prompt_hash": item.prompt_hash,
            "judge_error": item.judge_error,
        }
        extra = sorted(set(item.labels) - set(STANDARD_LABELS))
        return {column: row[column] for column in self.columns} | {
            label: item.labels[label] for label in extra
        }

    def from_row(self, row: Mapping[str, Any], where: str) -> GradedTurn:
        def field(name: str, kind: type, optional: bool = False) -> Any:
            if name not in row:
                raise EvaluatorError(f"{where}: field '{name}': missing")
            value = row[name]
            if optional and value is None:
                return None
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise EvaluatorError(
                    f"{where}: field '{name}': expected {kind.__name__}, got {value!r}"
                )
            return value

        try:
            verdict = Verdict(field("verdict", str))
        except ValueError:
            known = ", ".join(v.value for v in Verdict)
            raise EvaluatorError(
                f"{where}: field 'verdict': {row['verdict']!r} is not one of {known}"
            ) from None
        if field("is_correct", bool) != (verdict is Verdict.CORRECT):
            raise EvaluatorError(
                f"{where}: field 'is_correct': disagrees with verdict {verdict.value}"
            )
        turn_idx = field("turn_idx", int)
        if turn_idx < 0:
            raise EvaluatorError(f"{where}: field 'turn_idx': negative ({turn_idx})")
        labels = {
            name: field(name, str, optional=True)
            for name in (*STANDARD_LABELS, *(k for k in row if k not in self.columns))
            if name in row
        }
        return GradedTurn(
            **{name: field(name, str) for name in (*_TEXT_FIELDS, *_AUDIT_FIELDS)},
            **{name: field(name, bool) for name in _FLAGS},
            turn_idx=turn_idx,
            labels={name: value for name, value in labels.items() if value is not None},
            verdict=verdict,
            judge_error=field("judge_error", str, optional=True),
        )


BENCHMARK = CragMM
