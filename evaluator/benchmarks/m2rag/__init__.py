"""The M2RAG benchmark: answers that interleave text and images, judged on eight metrics.

Items: ``items.py``; the answer's placements: ``answer.py``; the arithmetic: ``scoring.py``;
the judge (prompts, rubric, text / vision routing): ``judging.py``; grading: ``grading.py``;
the table row: ``record.py``; aggregation: ``metrics.py``; the agent: ``agent.py``; the sample:
``sample.py``. Judge keys: ``answer/<query_id>/<prompt>`` and
``answer/<query_id>/image/<N>/<prompt>`` (``docs/m2rag.md``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluator.benchmarks.m2rag import agent, answer, items
from evaluator.benchmarks.m2rag.grading import (
    forecast,
    grade_answers,
    never_asked,
    predicted_calls,
)
from evaluator.benchmarks.m2rag.items import PODIUM_FILE, M2Prediction, M2Split
from evaluator.benchmarks.m2rag.judging import M2RAGRubric, RoutedJudge
from evaluator.benchmarks.m2rag.metrics import (
    METRICS,
    answer_unit_slices,
    answer_units,
    compare_answers,
    score_answers,
)
from evaluator.benchmarks.m2rag.record import (
    COLUMNS,
    FAILED,
    IMAGE_METRICS,
    GradedAnswer,
    from_row,
    to_row,
)
from evaluator.benchmarks.m2rag.summary import format_comparison, summary
from evaluator.judges import make_judge
from evaluator.judges.base import Judge
from evaluator.judges.cache import JudgmentCache
from evaluator.judges.transcript import TranscriptWriter
from evaluator.records import EvaluatorError, JudgeForecast
from evaluator.seam import Benchmark, Metric, ScoreBlock, ShownAnswer
from evaluator.seam.samples import example_agent_folder
from evaluator.seam.scoring import UnitSlices

PARSINGS = ("official", "strict")
LABELS = {"fluency": "Fluency", "relevance": "Relevance", "context_precision":
          "Context precision", "faithfulness": "Faithfulness", "image_recall": "Image recall",
          "coherence": "Image coherence", "helpfulness": "Image helpfulness",
          "reference": "Image reference"}  # fmt: skip


class M2RAG(Benchmark[M2Split, M2Prediction, GradedAnswer]):
    """M2RAG: ``parsing`` of the 0-10 replies (``official``: last integer, clamped; ``strict``:
    the integer alone on the last line); on the CLI, the image prompts' ``vision_*`` endpoint
    (the server gives its task's vision judge endpoint through ``vision_routed``)."""

    name = "m2rag"
    title = "M2RAG"
    rubric = M2RAGRubric()
    table = "answers"
    unit = "answers"
    groups = "topics"
    shown_fields = ("query", "")  # no ground truth: the answer is shown as it reads
    image_prompts = True
    columns = COLUMNS
    metrics = (
        *(Metric(name, LABELS[name], headline=True) for name in METRICS),
        Metric("overall", "Overall", interval=True, headline=True),
        Metric("count", "Answers", scale="count"),
    )
    primary = "overall"
    settings_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "parsing": {"enum": list(PARSINGS), "default": "official", "title": "Judge parsing",
                        "description": "official: the last integer of a reply (the official "
                        "code); strict: the integer alone on its last line"},
        },
        "additionalProperties": False,
    }  # fmt: skip

    def __init__(
        self,
        parsing: str = "official",
        vision_base_url: str | None = None,
        vision_model: str | None = None,
    ) -> None:
        if parsing not in PARSINGS:
            raise EvaluatorError(f"m2rag: parsing {parsing!r}: one of {', '.join(PARSINGS)}")
        self.parsing = parsing
        self.vision_base_url, self.vision_model = vision_base_url, vision_model
        self.calls = {"predicted": 0, "asked": 0, "made": 0}  # the last grading's judge calls

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        group.add_argument(
            "--m2rag-parsing",
            choices=PARSINGS,
            default="official",
            help="m2rag: how a 0-10 judge reply is read (default official)",
        )
        group.add_argument(
            "--m2rag-vision-base-url", help="m2rag: the vision judge's OpenAI-compatible endpoint"
        )
        group.add_argument("--m2rag-vision-model", help="m2rag: the vision judge model")

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> M2RAG:
        return cls(args.m2rag_parsing, args.m2rag_vision_base_url, args.m2rag_vision_model)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> M2RAG:
        return cls(document.get("parsing", "official"))

    def settings(self) -> dict[str, Any]:
        return {"parsing": self.parsing}

    def load_split(self, path: str | Path, **options: Any) -> M2Split:
        if options.get("hf_split") is not None:
            raise EvaluatorError("m2rag: a split has no Hugging Face splits (hf_split)")
        return items.load_split(path)

    def load_predictions(
        self, path: str | Path, split: M2Split
    ) -> tuple[dict[str, M2Prediction], list[str]]:
        return items.load_predictions(path, split)

    def judges(self, judge: Judge) -> RoutedJudge:
        """The judge that grades: ``judge`` as routed (``vision_routed``), else ``judge`` for
        the text prompts and the CLI's vision endpoint for the image prompts when one is set
        and ``judge`` is an LLM (a rules or replay judge serves both)."""
        if isinstance(judge, RoutedJudge):
            return judge
        llm = sys.modules.get("evaluator.judges.openai_judge")  # loaded when one was made
        if self.vision_model and llm is not None and isinstance(judge, llm.OpenAIJudge):
            vision = make_judge("openai", self.rubric, base_url=self.vision_base_url,
                                model=self.vision_model)  # fmt: skip
            return self.vision_routed(judge, vision)
        return RoutedJudge(judge)

    def vision_routed(self, judge: Judge, vision: Judge) -> RoutedJudge:
        return RoutedJudge(judge, vision)

    def grade(
        self,
        split: M2Split,
        predictions: Mapping[str, M2Prediction],
        judge: Judge,
        cache: JudgmentCache | None,
        progress: bool = True,
        transcript: TranscriptWriter | None = None,
    ) -> list[GradedAnswer]:
        self.calls["predicted"] = predicted_calls(split, predictions)
        graded, counted = grade_answers(split, predictions, self.judges(judge), cache,
                                      self.parsing == "official", progress, transcript)  # fmt: skip
        self.calls |= counted
        return graded

    def judge_forecast(self, split: M2Split) -> JudgeForecast:
        return forecast(split)

    def never_asked(self, split: M2Split, keys: Collection[str]) -> set[str]:
        return never_asked(split, keys)

    def bundle_files(self, split: M2Split) -> list[str]:
        files = {image.file for query in split.queries for image in query.images}
        return [PODIUM_FILE, *sorted(files)]

    def split_counts(self, split: M2Split) -> tuple[int, int]:
        return len({query.topic for query in split.queries}), len(split.queries)

    def agent_plan(self, split: M2Split, task: str, answered: Mapping[str, str]) -> agent.QueryPlan:
        return agent.QueryPlan(split)

    def split_keys(self, split: M2Split) -> list[str]:
        return [query.query_id for query in split.queries]

    def stored_prediction(self, split: M2Split, key: str, response: str) -> M2Prediction:
        return agent.stored_prediction(key, response)

    def stored_reply(self, prediction: M2Prediction) -> str:
        return agent.stored_reply(prediction)

    def prediction_record(self, split: M2Split, key: str, response: str) -> dict[str, Any]:
        prediction = agent.stored_prediction(key, response)
        record: dict[str, Any] = {"query_id": key, "answer": prediction.answer}
        return record | ({"failed": True} if prediction.failed else {})

    def item_key(self, item: GradedAnswer) -> str:
        return item.query_id

    def item_grade(self, item: GradedAnswer) -> str:
        return item.grade

    def falls_short(self, grade: str) -> bool:
        """A failed answer, or an answer's own overall below 0.5."""
        if grade == FAILED:
            return True
        try:
            return float(grade) < 0.5
        except ValueError:  # unjudged
            return False

    def abstains(self, grade: str) -> bool:
        return grade == FAILED

    def item_slices(self, row: Mapping[str, Any]) -> dict[str, str]:
        return {k: str(v) for k, v in row.items() if k not in self.columns and v is not None}

    def item_image(self, split: M2Split, key: str) -> Path | None:
        try:
            images = split.query(key).images
        except KeyError:
            return None
        return split.image_path(images[0]) if images else None

    def placed_images(self, split: M2Split, item: GradedAnswer) -> dict[int, Path]:
        images = split.query(item.query_id).images
        return {index: split.image_path(images[index]) for index in item.placed}

    def shown_answer(self, row: Mapping[str, Any]) -> ShownAnswer | None:
        """The answer with its kept placements as images, each with its three scores."""
        placed = [int(index) for index in row.get("placed") or ()]
        notes = {
            index: ", ".join(
                f"{name} {row[name][i] * 10:g}/10"
                for name in IMAGE_METRICS
                if i < len(row.get(name) or ())
            )
            for i, index in enumerate(placed)
        }
        return ShownAnswer(answer.shown_answer(str(row.get("answer") or ""), placed), notes)

    def aggregate(self, graded: Sequence[GradedAnswer], seed: int = 0) -> dict[str, Any]:
        return score_answers(graded, seed) | {"judge_calls": dict(self.calls)}

    def score_blocks(self, scores: Mapping[str, Any]) -> list[ScoreBlock]:
        """One row per slice value: its figures, the official ones as ``skip.<metric>``."""
        named = [("all", "all", scores["all"])] + [
            (label, value, block)
            for label, values in scores["slices"].items()
            for value, block in values.items()
        ]
        rows = []
        for dimension, value, block in named:
            flat = {k: v for k, v in block.items() if k not in ("count", "skip")}
            flat |= {f"skip.{k}": v for k, v in (block.get("skip") or {}).items()}
            rows.append(ScoreBlock(dimension, str(value), block["count"], flat))
        return rows

    def to_row(self, item: GradedAnswer) -> dict[str, Any]:
        return to_row(item)

    def from_row(self, row: Mapping[str, Any], where: str) -> GradedAnswer:
        return from_row(row, where)

    def summary(self, document: Mapping[str, Any], graded: Sequence[GradedAnswer]) -> str:
        return summary(document, graded)

    def paired(
        self, a: Sequence[GradedAnswer], b: Sequence[GradedAnswer], seed: int = 0
    ) -> dict[str, Any]:
        return compare_answers(a, b, seed)

    def units(self, graded: Sequence[GradedAnswer]) -> np.ndarray | None:
        return answer_units(graded)

    def unit_slices(self, graded: Sequence[GradedAnswer]) -> UnitSlices:
        """A unit per answer (the run's order): its topic."""
        return answer_unit_slices(graded)

    def format_comparison(self, result: Mapping[str, Any], a_name: str, b_name: str) -> str:
        return format_comparison(result, a_name, b_name)

    def example_agent(self) -> Path:
        return example_agent_folder("m2rag-text")

    def write_sample_predictions(self, split: M2Split, path: str | Path, seed: int = 0) -> None:
        items.write_sample_predictions(split, path, seed)

    def write_sample(self, out_dir: str | Path, seed: int = 0) -> None:
        from evaluator.benchmarks.m2rag.sample import write_sample

        write_sample(out_dir, seed=seed)


BENCHMARK = M2RAG
