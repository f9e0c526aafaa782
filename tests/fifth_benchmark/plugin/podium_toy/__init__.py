"""A fifth benchmark, as a plugin (issue #33): capitals of countries, graded by exact match.

It lives in this package alone and imports only the seam's public parts (``evaluator.seam``,
``evaluator.judges``, ``evaluator.records``, ``evaluator.stats``, ``agentkit.protocol``); it
is registered by an entry point of group ``podium.benchmarks`` (``toy = podium_toy``), as an
installed distribution would be: no edit of Podium, no migration.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from evaluator.judges.base import Judge
from evaluator.judges.cache import JudgmentCache
from evaluator.judges.loop import audit_fields, judge_and_transcribe
from evaluator.judges.rubric import UNJUDGED
from evaluator.judges.transcript import TranscriptWriter
from evaluator.notices import judge_notices
from evaluator.records import JudgeRequest
from evaluator.seam import Benchmark, Metric, ScoreBlock

from . import items, sample, scoring
from .items import GradedQuestion, Prediction, Split
from .judging import IDK, WRONG, ToyRubric, abstains
from .plan import QuestionPlan


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


class Toy(Benchmark[Split, Prediction, GradedQuestion]):
    """Capitals: one question per item, one answer each; no settings."""

    name = "toy"
    title = "Capitals (toy)"
    rubric = ToyRubric()
    table = "questions"
    columns = items.COLUMNS
    unit = "questions"
    groups = "regions"
    shown_fields = ("question", "reference")
    metrics = (
        Metric("accuracy", "Accuracy", interval=True, headline=True),
        Metric("idk_rate", "I don't know", higher_is_better=False, headline=True),
        Metric("count", "Questions", scale="count"),
    )
    primary = "accuracy"
    settings_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }

    # Splits
    def settings(self) -> dict[str, Any]:
        return {}

    def load_split(self, path: str | Path, **options: Any) -> Split:
        return items.load_split(path)

    def bundle_files(self, split: Split) -> list[str]:
        return [items.QUESTIONS]

    def split_counts(self, split: Split) -> tuple[int, int]:
        return len({q.region for q in split.questions}), len(split.questions)

    def split_keys(self, split: Split) -> list[str]:
        return [question.id for question in split.questions]

    # Grading
    def load_predictions(
        self, path: str | Path, split: Split
    ) -> tuple[dict[str, Prediction], list[str]]:
        return items.load_predictions(path, split)

    def grade(
        self,
        split: Split,
        predictions: Mapping[str, Prediction],
        judge: Judge,
        cache: JudgmentCache | None,
        progress: bool = True,
        transcript: TranscriptWriter | None = None,
    ) -> list[GradedQuestion]:
        rows, asked, requests = [], [], []
        for question in split.questions:
            answer = predictions[question.id].answer if question.id in predictions else ""
            grade = IDK if abstains(answer) else UNJUDGED
            if grade == UNJUDGED:
                asked.append(len(rows))
                requests.append(
                    JudgeRequest(question.question, question.reference, answer, f"q/{question.id}")
                )
            rows.append(
                GradedQuestion(
                    question.id, question.region, question.question, question.reference, answer,
                    grade, judge.judge_id, judge.prompt_version, judge.prompt_hash,
                )
            )  # fmt: skip
        judgments = judge_and_transcribe(judge, requests, cache, transcript, progress)
        for index, judgment in zip(asked, judgments, strict=True):
            fields: dict[str, Any] = audit_fields(judgment)
            rows[index] = GradedQuestion(
                **{**items.to_row(rows[index]), "grade": judgment.verdict, **fields}
            )
        return rows

    def item_key(self, item: GradedQuestion) -> str:
        return item.id

    def item_grade(self, item: GradedQuestion) -> str:
        return item.grade

    def falls_short(self, grade: str) -> bool:
        return grade in (WRONG, IDK)

    def abstains(self, grade: str) -> bool:
        return grade == IDK

    def verdict_menu(self) -> tuple[str, ...]:
        """The judge's correct / wrong, and idk (decided before any judge call)."""
        return (*self.rubric.menu(), IDK)

    def to_row(self, item: GradedQuestion) -> dict[str, Any]:
        return items.to_row(item)

    def from_row(self, row: Mapping[str, Any], where: str) -> GradedQuestion:
        return items.from_row(row, where)

    # Scoring
    def aggregate(self, graded: Sequence[GradedQuestion], seed: int = 0) -> dict[str, Any]:
        return scoring.aggregate(graded, seed)

    def score_blocks(self, document: Mapping[str, Any]) -> list[ScoreBlock]:
        def row(dimension: str, value: str, block: Mapping[str, Any]) -> ScoreBlock:
            return ScoreBlock(dimension, value, block["count"], dict(block))

        return [row("all", "all", document["all"])] + [
            row(dimension, value, block)
            for dimension, values in document["slices"].items()
            for value, block in values.items()
        ]

    def paired(
        self, a: Sequence[GradedQuestion], b: Sequence[GradedQuestion], seed: int = 0
    ) -> dict[str, Any]:
        return scoring.paired(a, b, seed)

    # Runs
    def agent_plan(self, split: Split, task: str, answered: dict[str, str]) -> QuestionPlan:
        return QuestionPlan(split)

    def stored_prediction(self, split: Split, key: str, response: str) -> Prediction:
        return Prediction(key, response)

    def stored_reply(self, prediction: Prediction) -> str:
        return prediction.answer

    def prediction_record(self, split: Split, key: str, response: str) -> dict[str, Any]:
        return {"id": key, "answer": response}

    # Pages
    def item_slices(self, row: Mapping[str, Any]) -> dict[str, str]:
        return {"region": str(row["region"])}

    def item_image(self, split: Split, key: str) -> Path | None:
        return None

    def summary(self, document: Mapping[str, Any], graded: Sequence[GradedQuestion]) -> str:
        judge = document["judge"]
        lines = [f"protocol toy  judge {judge['id']} ({judge['kind']})", ""]
        for name, block in [("all", document["all"]), *document["slices"]["region"].items()]:
            lines.append(
                f"{name:<10} {block['count']:>4} questions  accuracy {_shown(block['accuracy'])}"
                f"  idk {_shown(block['idk_rate'])}"
            )
        notices = judge_notices(
            document, (item.judge_error for item in graded), "questions", "accuracies"
        )
        return "\n".join([*lines, "", *notices]).rstrip() + "\n"

    def format_comparison(self, result: Mapping[str, Any], a_name: str, b_name: str) -> str:
        low, high = result["difference_ci95"]
        return (
            f"Accuracy ({result['items']} questions): {a_name} {_shown(result['a'])}, "
            f"{b_name} {_shown(result['b'])}; difference {_shown(result['difference'])} "
            f"(95% CI [{_shown(low)}, {_shown(high)}]), p = {result['p_value']:.4f}"
        )

    # Samples
    def write_sample(self, out_dir: str | Path, seed: int = 0) -> None:
        sample.write_sample(out_dir)

    def write_sample_predictions(self, split: Split, path: str | Path, seed: int = 0) -> None:
        sample.write_sample_predictions(split, path, seed)

    def example_agent(self) -> Path | None:
        return Path(__file__).resolve().parents[2] / "agent"

    # Options
    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        """No option of its own."""

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> Toy:
        return cls()


BENCHMARK = Toy
