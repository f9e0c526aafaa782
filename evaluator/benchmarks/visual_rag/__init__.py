"""The Visual-RAG benchmark: text-to-image retrieval among a query's candidates, and visually
grounded answers, evaluated in named settings (retrieval, zero-shot, GT clue, non-clue, top-k,
1-in-k). Split layouts and predictions: ``items.py``; the judge: ``judging.py``; grading and
the per-item table: ``grading.py``; metrics, gCUE, comparison: ``metrics.py``; the sample:
``sample.py``. Judge calls are keyed ``answer/<query_id>/<setting>``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluator.benchmarks.visual_rag import grading, items
from evaluator.benchmarks.visual_rag.agent import (
    SettingPlan,
    agent_item,
    given_images,
    read_response,
    stored_reply,
)
from evaluator.benchmarks.visual_rag.grading import RETRIEVAL_METRICS, GradedQuery
from evaluator.benchmarks.visual_rag.items import (
    PODIUM_FILE,
    RELEASED_FILE,
    SETTING_PATTERN,
    VisualPrediction,
    VisualSplit,
    check_setting,
    prediction_key,
)
from evaluator.benchmarks.visual_rag.judging import NO_ANSWER, VisualRAGRubric, grade_score
from evaluator.benchmarks.visual_rag.metrics import (
    compare_queries,
    gcue,
    query_unit_slices,
    query_units,
    score_queries,
)
from evaluator.judges.base import Judge
from evaluator.judges.cache import JudgmentCache
from evaluator.judges.transcript import TranscriptWriter
from evaluator.notices import judge_notices
from evaluator.records import EvaluatorError
from evaluator.seam import Benchmark, Metric, ScoreBlock
from evaluator.seam.samples import example_agent_folder
from evaluator.seam.scoring import UnitSlices
from evaluator.seam.setting_scores import flat_settings, slice_blocks

DEFAULT_LAMBDA = 0.5
DEFAULT_SETTINGS = ("retrieval", "zero_shot", "gt_clue", "non_clue", "one_in_5")
HEADLINE_RETRIEVAL = ("recall@5", "recall@30", "ndcg@5", "hit@5")
SAMPLE_SETTINGS = ("retrieval", "zero_shot", "gt_clue", "non_clue", "one_in_3", "one_in_5")


def _settings_list(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    try:
        return tuple(check_setting(name) for name in names)
    except EvaluatorError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _retrieval_label(name: str) -> str:
    """``ndcg@5`` -> ``NDCG@5``, ``hit_count@5`` -> ``Hit count@5``."""
    base, _, k = name.partition("@")
    words = {"recall": "Recall", "ndcg": "NDCG", "hit": "Hit", "hit_count": "Hit count"}
    return f"{words[base]}@{k}"


def _number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


class VisualRAG(Benchmark[VisualSplit, VisualPrediction, GradedQuery]):
    """Visual-RAG: ``evaluated`` settings (default: those the predictions name), gCUE's
    ``gcue_lambda`` (0.5)."""

    name = "visual-rag"
    title = "Visual-RAG"
    rubric = VisualRAGRubric()
    table = "queries"
    groups = "species"
    shown_fields = ("question", "answers")
    unit = "queries"
    searches = True  # image search among a query's candidates (retrieval, top-k settings)
    search_corpus = False
    columns = grading.COLUMNS
    metrics = (
        Metric("accuracy", "Accuracy", scale="percent", where="settings", interval=True,
               headline=True),
        Metric("idk_rate", "I don't know", False, scale="percent", where="settings",
               headline=True),
        Metric("rouge1_recall", "ROUGE-1 recall", scale="percent", where="settings",
               headline=True),
        *(
            Metric(
                name,
                _retrieval_label(name),
                scale="ratio" if name.startswith("hit_count") else "percent",
                where="retrieval",
                interval=name.startswith("recall@"),
                headline=name in HEADLINE_RETRIEVAL,
            )
            for name in RETRIEVAL_METRICS
        ),
        Metric("count", "Queries", scale="count", where="settings"),
        Metric("gcue", "gCUE", scale="ratio", where="gcue"),
    )  # fmt: skip
    primary = "accuracy"
    passing_unit = 100.0  # a query answered fully right (units are x100)
    settings_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "evaluated": {
                "type": "array",
                "items": {"type": "string", "pattern": SETTING_PATTERN},
                "minItems": 1,
                "uniqueItems": True,
                "default": list(DEFAULT_SETTINGS),
                "title": "Settings",
                "description": "one run per setting: retrieval, zero_shot, gt_clue, non_clue, "
                "topk_<k>, one_in_<k>",
            },
            "gcue_lambda": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "default": DEFAULT_LAMBDA,
                "title": "gCUE lambda",
                "description": "B = lambda x zero-shot + (1 - lambda) x non-clue accuracy",
            },
        },
        "additionalProperties": False,
    }

    def __init__(
        self, evaluated: Sequence[str] | None = None, gcue_lambda: float = DEFAULT_LAMBDA
    ) -> None:
        if not 0.0 <= gcue_lambda <= 1.0:
            raise EvaluatorError(f"gcue_lambda {gcue_lambda}: must be between 0 and 1")
        self.evaluated = None if evaluated is None else tuple(map(check_setting, evaluated))
        self.gcue_lambda = gcue_lambda
        self.warnings: list[str] = []  # the last grading's ranking warnings

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        group.add_argument(
            "--settings",
            type=_settings_list,
            help="visual-rag: settings to score, comma-separated (default: the predictions')",
        )
        group.add_argument(
            "--gcue-lambda",
            type=float,
            default=DEFAULT_LAMBDA,
            help=f"visual-rag: gCUE's lambda (default {DEFAULT_LAMBDA})",
        )

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> VisualRAG:
        return cls(args.settings, args.gcue_lambda)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> VisualRAG:
        return cls(document.get("evaluated"), document.get("gcue_lambda", DEFAULT_LAMBDA))

    def settings(self) -> dict[str, Any]:
        return {"evaluated": list(self.evaluated or ()), "gcue_lambda": self.gcue_lambda}

    def load_split(self, path: str | Path, **options: Any) -> VisualSplit:
        if options.get("hf_split") is not None:
            raise EvaluatorError("visual-rag: a split has no Hugging Face splits (hf_split)")
        return items.load_split(path)

    def load_predictions(
        self, path: str | Path, split: VisualSplit
    ) -> tuple[dict[str, VisualPrediction], list[str]]:
        return items.load_predictions(path, split, self.evaluated)

    def grade(
        self,
        split: VisualSplit,
        predictions: Mapping[str, VisualPrediction],
        judge: Judge,
        cache: JudgmentCache | None,
        progress: bool = True,
        transcript: TranscriptWriter | None = None,
    ) -> list[GradedQuery]:
        if self.evaluated is None:
            self.evaluated = tuple(sorted({p.setting for p in predictions.values()}))
        if not self.evaluated:
            raise EvaluatorError("no setting to score: the predictions name none")
        graded, self.warnings = grading.grade_queries(
            split, predictions, self.evaluated, judge, cache, progress, transcript
        )
        return graded

    def never_asked(self, split: VisualSplit, keys: Collection[str]) -> set[str]:
        return grading.never_asked(split, keys)

    def bundle_files(self, split: VisualSplit) -> list[str]:
        """The query file as it came (either layout) and every candidate's image."""
        named = PODIUM_FILE if split.layout == "podium" else RELEASED_FILE
        candidates = {image for query in split.queries for image in query.candidates}
        return [named, *sorted(split.images[image] for image in candidates)]

    def split_counts(self, split: VisualSplit) -> tuple[int, int]:
        return len({query.labels.get("species") for query in split.queries}), len(split.queries)

    def run_settings(self) -> tuple[str, ...]:
        return self.evaluated or DEFAULT_SETTINGS

    def for_setting(self, setting: str) -> VisualRAG:
        """One run of ``setting``: one of the evaluated settings (any valid one when none were
        named)."""
        check_setting(setting)
        if self.evaluated is not None and setting not in self.evaluated:
            raise EvaluatorError(
                f"visual-rag: setting {setting!r} is not evaluated here "
                f"({', '.join(self.run_settings())})"
            )
        return VisualRAG((setting,), self.gcue_lambda)

    def derived(self, settings: Mapping[str, Mapping[str, Any]]) -> dict[str, float | None]:
        """gCUE for every ``one_in_<k>`` run, from the runs' accuracies (null: undefined)."""
        return gcue(settings, self.gcue_lambda)[0]

    def undefined(self, settings: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
        return gcue(settings, self.gcue_lambda)[1]

    def in_setting(self, metric: Metric, setting: str) -> bool:
        if metric.where == "retrieval":
            return setting in ("", "retrieval")
        return metric.where != "gcue" or setting == ""

    def agent_plan(self, split: VisualSplit, task: str, answered: Mapping[str, str]) -> SettingPlan:
        if self.evaluated is None or len(self.evaluated) != 1:
            raise EvaluatorError("visual-rag: a run evaluates one setting (for_setting)")
        return SettingPlan(split, self.evaluated[0])

    def split_keys(self, split: VisualSplit) -> list[str]:
        if not self.evaluated:
            raise EvaluatorError("visual-rag: name the settings to evaluate")
        return [prediction_key(s, q.query_id) for s in self.evaluated for q in split.queries]

    def stored_prediction(self, split: VisualSplit, key: str, response: str) -> VisualPrediction:
        """``response``: the agent's reply as stored (JSON text); one that is not a valid reply
        is an empty answer (no answer)."""
        setting, query_id = key.split("/", 1)
        item = agent_item(split.query(query_id), setting)
        try:
            reply = json.loads(response)
        except ValueError:
            reply = None
        return read_response(item, reply)[0]

    def stored_reply(self, prediction: VisualPrediction) -> str:
        return stored_reply(prediction)

    def prediction_record(self, split: VisualSplit, key: str, response: str) -> dict[str, Any]:
        prediction = self.stored_prediction(split, key, response)
        record: dict[str, Any] = {
            "query_id": prediction.query_id,
            "setting": prediction.setting,
            "answer": prediction.answer,
        }
        if prediction.ranking is not None:
            record["ranking"] = list(prediction.ranking)
        return record

    def item_key(self, item: GradedQuery) -> str:
        return prediction_key(item.setting, item.query_id)

    def item_grade(self, item: GradedQuery) -> str:
        return item.grade

    def falls_short(self, grade: str) -> bool:
        """Below full score (1), or no answer."""
        if grade == NO_ANSWER:
            return True
        try:
            return float(grade) < 1.0
        except ValueError:  # unjudged
            return False

    def abstains(self, grade: str) -> bool:
        return grade == NO_ANSWER

    def verdict_value(self, verdict: str) -> float | None:
        # accuracy (x100) is the (setting, query) items' mean of these (``query_units``)
        return grade_score(verdict) * 100 if verdict in self.verdict_menu() else None

    def item_slices(self, row: Mapping[str, Any]) -> dict[str, str]:
        """Its labels (``species`` and the split's own), as scored."""
        return {
            name: str(value)
            for name, value in row.items()
            if name not in self.columns and value is not None
        }

    def item_image(self, split: VisualSplit, key: str) -> Path | None:
        """The first image the setting gives (none in zero-shot and retrieval)."""
        setting, _, query_id = key.partition("/")
        try:
            given = given_images(split.query(query_id), setting)
        except KeyError:
            return None
        return split.image_path(given[0]) if given else None

    def aggregate(self, graded: Sequence[GradedQuery], seed: int = 0) -> dict[str, Any]:
        scores = score_queries(graded, self.gcue_lambda, seed)
        return scores | {"warnings": list(self.warnings)}

    def score_blocks(self, scores: Mapping[str, Any]) -> list[ScoreBlock]:
        """One row per slice value: the retrieval metrics and the settings' metrics in one flat
        dict (a single setting's unprefixed, as in a server run; else ``<setting>.<metric>``),
        and the gCUE values."""
        rows = []
        for dimension, value, block in slice_blocks(scores):
            flat = {k: v for k, v in (block["retrieval"] or {}).items() if k != "count"}
            metrics, count = flat_settings(block["settings"])
            rows.append(ScoreBlock(dimension, value, count, flat | metrics | block["gcue"]))
        return rows

    def to_row(self, item: GradedQuery) -> dict[str, Any]:
        return grading.to_row(item)

    def from_row(self, row: Mapping[str, Any], where: str) -> GradedQuery:
        return grading.from_row(row, where)

    def summary(self, document: Mapping[str, Any], graded: Sequence[GradedQuery]) -> str:
        judge = document["judge"]
        lines = [f"protocol visual-rag  judge {judge['id']} ({judge['kind']}, prompt "
                 f"{judge['prompt_version']})", ""]  # fmt: skip
        retrieval = document.get("retrieval")
        if retrieval:
            lines.append(f"retrieval ({retrieval['count']} queries, rates in %)")
            for name in ("recall", "ndcg", "hit", "hit_count"):
                cells = "  ".join(
                    f"@{k} {_number(retrieval[f'{name}@{k}'], 2 if name == 'hit_count' else 1)}"
                    for k in (1, 5, 10, 20, 30)
                )
                lines.append(f"  {name:<10} {cells}")
        lines.append(f"{'setting':<14} {'count':>6} {'accuracy':>9} {'idk':>6} {'rouge1':>7}")
        for setting, block in document["settings"].items():
            lines.append(
                f"{setting:<14} {block['count']:>6} {_number(block['accuracy']):>9} "
                f"{_number(block['idk_rate']):>6} {_number(block['rouge1_recall']):>7}"
            )
        for name, value in document["gcue"].items():
            reason = document["gcue_undefined"].get(name, "")
            lines.append(f"{name}: {_number(value, 3)} {reason}".rstrip())
        lines += [f"warning: {warning}" for warning in document.get("warnings", ())]
        notices = judge_notices(
            document, (item.judge_error for item in graded), "answers", "accuracies"
        )
        return "\n".join([*lines, "", *notices]).rstrip() + "\n"

    def paired(
        self, a: Sequence[GradedQuery], b: Sequence[GradedQuery], seed: int = 0
    ) -> dict[str, Any]:
        return compare_queries(a, b, seed)

    def units(self, graded: Sequence[GradedQuery]) -> np.ndarray | None:
        found = query_units(graded)
        return np.array([found[key] for key in sorted(found)]) if found else None

    def unit_slices(self, graded: Sequence[GradedQuery]) -> UnitSlices:
        """A unit per (setting, query) item, by key: its query's labels."""
        return query_unit_slices(graded)

    def format_comparison(self, result: Mapping[str, Any], a_name: str, b_name: str) -> str:
        low, high = result["difference_ci95"]
        verdict = (
            f"separable: {a_name if result['difference'] > 0 else b_name} is more accurate"
            if result["separable"]
            else "not separable at the 95% level"
        )
        return "\n".join(
            [
                f"Accuracy ({result['items']} (setting, query) items, x100)",
                f"  {a_name}: {result['a']:.2f}",
                f"  {b_name}: {result['b']:.2f}",
                f"  difference {a_name} - {b_name}: {result['difference']:+.2f} "
                f"(95% CI [{low:+.2f}, {high:+.2f}], paired bootstrap over items)",
                f"  paired sign-flip test: p = {result['p_value']:.4f}",
                f"  {verdict}",
            ]
        )

    def example_agent(self) -> Path:
        return example_agent_folder("visual-rag-colour")

    def write_sample_predictions(self, split: VisualSplit, path: str | Path, seed: int = 0) -> None:
        items.write_sample_predictions(split, path, self.evaluated or SAMPLE_SETTINGS, seed)

    def write_sample(self, out_dir: str | Path, seed: int = 0) -> None:
        from evaluator.benchmarks.visual_rag.sample import write_sample

        write_sample(out_dir, seed=seed)


BENCHMARK = VisualRAG
