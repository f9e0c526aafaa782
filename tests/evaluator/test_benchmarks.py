"""The conformance suite: every registered benchmark, through the Benchmark interface only.

A new benchmark inherits these tests by being registered: sample data, its made-up predictions,
grading with the rules judge, scores carrying every declared metric, the per-item table read
back unchanged, a transcript replayed to the same scores with no judge call, a paired
comparison of a run with itself, and the summary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluator.benchmarks import get_benchmark, names
from evaluator.benchmarks.crag_mm.truncation import FallbackTruncator
from evaluator.cli import EXIT_OK, main
from evaluator.judges import MemoryCache, make_judge
from evaluator.judges.rubric import UNJUDGED
from evaluator.report import read_items, read_scores, scores_document, write_report
from evaluator.seam import Benchmark, Comparison, Score
from tests.fifth_benchmark import install

# The split of each benchmark's sample the suite scores (``validation`` when not named here).
SAMPLE_SPLIT = {"crag-mm": "single-source-augmentation/validation"}
PLUGINS = ("toy",)  # installed for their tests only, as a distribution would be


def build(name: str) -> Benchmark[Any, Any, Any]:
    if name == "crag-mm":  # the exact tokenizer is not what this suite checks
        return get_benchmark(name, truncator=FallbackTruncator("conformance"))
    return get_benchmark(name)


@pytest.fixture(scope="module", params=[*names(), *PLUGINS])
def scored(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    name = request.param
    root = tmp_path_factory.mktemp(name)
    if name in PLUGINS:
        with install(tmp_path_factory.mktemp("site")):
            yield _scored(name, root)
    else:
        yield _scored(name, root)


def _scored(name: str, root: Path) -> Any:
    benchmark = build(name)
    benchmark.write_sample(root / "sample", seed=3)
    split_dir = root / "sample" / SAMPLE_SPLIT.get(name, "validation")
    split = benchmark.load_split(split_dir)
    predictions_file = root / "predictions.jsonl"
    benchmark.write_sample_predictions(split, predictions_file, seed=1)
    predictions, warnings = benchmark.load_predictions(predictions_file, split)
    judge = make_judge("rules", benchmark.rubric)
    graded = benchmark.grade(split, predictions, judge, MemoryCache(), progress=False)
    scores = benchmark.aggregate(graded, seed=0)
    document = scores_document(benchmark, scores, judge, warnings, 0)
    write_report(root / "run", benchmark, graded, document)
    return name, benchmark, split_dir, predictions_file, graded, document, root


def test_a_benchmark_declares_itself(scored: Any) -> None:
    name, benchmark, *_ = scored
    assert benchmark.name == name and benchmark.title and benchmark.table
    assert benchmark.primary in {metric.name for metric in benchmark.metrics}
    assert len({metric.name for metric in benchmark.metrics}) == len(benchmark.metrics)
    assert benchmark.rubric.benchmark == name
    assert set(benchmark.rubric.grades()) >= {UNJUDGED} and len(benchmark.rubric.choices) >= 2


def test_every_declared_metric_is_in_the_scores(scored: Any) -> None:
    _, benchmark, _, _, graded, document, _ = scored
    assert document["protocol"] == benchmark.name and document["complete"] is True
    assert document["unjudged"] == 0 and graded
    for metric in benchmark.metrics:
        block = document[metric.where]
        if metric.where == "settings":  # one block per setting
            assert block and all(metric.name in values for values in block.values()), metric
        elif metric.where == "gcue":
            assert block and all(name.startswith("gcue@") for name in block), metric
        else:
            assert metric.name in block, metric
        if metric.interval and metric.where != "settings":
            assert f"{metric.name}_ci95" in block, metric
    assert document["slices"], "every protocol slices its scores by its labels"


def test_the_table_reads_back_unchanged(scored: Any) -> None:
    _, benchmark, _, _, graded, _, root = scored
    assert read_items(root / "run") == graded
    assert (root / "run" / f"{benchmark.table}.csv").is_file()
    assert read_scores(root / "run")["protocol"] == benchmark.name


def test_the_cli_scores_and_replays_with_no_judge_call(scored: Any, tmp_path: Path) -> None:
    name, _, split_dir, predictions_file, _, _, _ = scored
    common = ["score", "--protocol", name, "--split", str(split_dir)]
    common += ["--predictions", str(predictions_file), "--no-progress"]
    first, again = tmp_path / "first", tmp_path / "again"
    assert main([*common, "--judge", "rules", "--no-cache", "--out", str(first)]) == EXIT_OK
    transcript = first / "transcript.jsonl"
    calls = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert calls and len({call["key"] for call in calls}) == len(calls)
    argv = [*common, "--judge", "replay", "--transcript", str(transcript), "--out", str(again)]
    assert main(argv) == EXIT_OK
    assert read_scores(again) == read_scores(first)
    # a transcript missing a call is refused, naming the key
    transcript.write_text("\n".join(json.dumps(call) for call in calls[1:]) + "\n")
    assert main([*argv[:-1], str(tmp_path / "third")]) == 2


def test_a_written_transcript_of_keys_and_replies_replays_to_the_same_scores(
    scored: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An organiser's transcript: only each call's key and reply (no judge, prompt, judged)."""
    name, _, split_dir, predictions_file, _, _, _ = scored
    common = ["score", "--protocol", name, "--split", str(split_dir)]
    common += ["--predictions", str(predictions_file), "--no-progress"]
    first, again = tmp_path / "first", tmp_path / "again"
    assert main([*common, "--judge", "rules", "--no-cache", "--out", str(first)]) == EXIT_OK
    calls = [json.loads(line) for line in (first / "transcript.jsonl").read_text().splitlines()]
    written = tmp_path / "written.jsonl"
    written.write_text("".join(json.dumps({"key": c["key"], "reply": c["reply"]}) + "\n"
                               for c in reversed(calls)))  # fmt: skip
    argv = [*common, "--judge", "replay", "--transcript", str(written)]
    assert main([*argv, "--out", str(again)]) == EXIT_OK
    expected, replayed = read_scores(first), read_scores(again)
    assert replayed["judge"]["id"] == "replay:written" and replayed["judge"]["kind"] == "written"
    assert {**replayed, "judge": expected["judge"]} == expected
    # a line under a key this split never asks is refused, naming its line
    if name not in PLUGINS:  # a plugin may leave its keys unchecked (``never_asked``)
        with written.open("a") as stream:
            stream.write(json.dumps({"key": "answer/no-such-item/x", "reply": "1"}) + "\n")
        capsys.readouterr()
        assert main([*argv, "--out", str(tmp_path / "third")]) == 2
        error = capsys.readouterr().err
        assert f"written.jsonl:{len(calls) + 1}: key 'answer/no-such-item/x'" in error


def test_a_run_compared_with_itself_is_not_separable(scored: Any) -> None:
    _, benchmark, _, _, graded, _, root = scored
    result = benchmark.compare(graded, read_items(root / "run"), seed=0)
    assert isinstance(result, Comparison) and result.metric == benchmark.primary
    assert result.difference == 0 and result.separable is False
    assert result.a == result.b and result.difference_ci95[0] <= 0 <= result.difference_ci95[1]
    assert 0 <= result.p_value <= 1 and result.document["metric"] == benchmark.primary
    assert benchmark.format_comparison(result.document, "A", "B")


def test_the_units_are_what_the_paired_comparison_averages(scored: Any) -> None:
    # the units a board's rank intervals resample (Scoring.units) have the compared mean, and
    # a run's units come in the same order as another run's
    _, benchmark, _, _, graded, _, root = scored
    units = benchmark.units(graded)
    if benchmark.name in PLUGINS:  # a plugin that does not say: the seam's default
        assert units is None
        return
    assert units is not None and units.ndim == 1 and units.size >= 2
    result = benchmark.compare(graded, read_items(root / "run"), seed=0)
    assert float(units.mean()) == pytest.approx(result.a)
    assert benchmark.units(read_items(root / "run")).tolist() == units.tolist()


def test_the_typed_score_is_the_document_and_its_stored_rows(scored: Any) -> None:
    _, benchmark, _, _, graded, document, _ = scored
    score = benchmark.score(graded, seed=0)
    assert isinstance(score, Score) and score.complete and score.unjudged == 0
    assert {k: v for k, v in score.document.items() if k != "warnings"}.items() <= document.items()
    assert (score.headline.dimension, score.headline.value) == ("all", "all")
    assert score.headline.count == len(graded) or benchmark.run_settings() != ("",)
    assert [b.dimension for b in score.blocks[1:]] and "all" not in {
        b.dimension for b in score.blocks[1:]
    }
    assert score == benchmark.read_score(score.document)


def test_the_summary_names_the_benchmark_and_the_rules_judge(scored: Any) -> None:
    _, benchmark, _, _, graded, document, _ = scored
    summary = benchmark.summary(document, graded)
    assert benchmark.name in summary and "NOT an LLM" in summary


def test_what_the_server_stores_reads_back(scored: Any) -> None:
    _, benchmark, split_dir, _, graded, _, _ = scored
    split = benchmark.load_split(split_dir)
    keys = benchmark.split_keys(split)
    assert keys == [benchmark.item_key(item) for item in graded]  # every answer, split order
    assert all(benchmark.item_grade(item) != UNJUDGED for item in graded)
    # a verdict's detail is the table row: aggregation rebuilds the item from it alone
    rows = [json.loads(json.dumps(benchmark.to_row(item))) for item in graded]
    assert [benchmark.from_row(row, "verdict") for row in rows] == graded
    assert benchmark.stored_prediction(split, keys[0], "") is not None
    # the server's verdict rows take their audit fields from the table's (verdict_row)
    for row in rows:
        audit = [row.get(name) for name in ("judge_id", "prompt_version", "prompt_hash")]
        assert all(isinstance(value, str) and value for value in audit), row


def test_a_bundle_holds_what_loading_the_split_needs(scored: Any, tmp_path: Path) -> None:
    _, benchmark, split_dir, *_ = scored
    split = benchmark.load_split(split_dir)
    for name in benchmark.bundle_files(split):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes((split_dir / name).read_bytes())
    again = benchmark.load_split(tmp_path)
    assert benchmark.split_counts(again) == benchmark.split_counts(split)
    groups, items = benchmark.split_counts(split)
    assert 0 < groups <= items


def test_each_run_setting_plans_exactly_its_keys(scored: Any) -> None:
    _, benchmark, split_dir, *_ = scored
    split = benchmark.load_split(split_dir)
    per_run = []
    for setting in benchmark.run_settings():
        run = benchmark.for_setting(setting)
        plan = run.agent_plan(split, "multi-turn-qa", {})
        keys = run.split_keys(split)
        asked = [plan.key(ref) for batch in plan.batches(16, ()) for ref in batch]
        assert sorted(asked) == sorted(keys) == sorted(plan.keys()), setting
        assert all(path.is_file() for batch in plan.batches(16, ()) for ref in batch
                   for path in plan.image_files(ref))  # fmt: skip
        per_run += keys
    assert len(per_run) == len(set(per_run)), "a key belongs to one run"


def test_wrong_answers_are_named_in_the_benchmarks_own_grades(scored: Any) -> None:
    _, benchmark, _, _, graded, _, _ = scored
    grades = [benchmark.item_grade(item) for item in graded]
    wrong = [grade for grade in grades if benchmark.falls_short(grade)]
    assert wrong and len(wrong) < len(grades), "the sample has right and wrong answers"
    assert not benchmark.falls_short(UNJUDGED) and not benchmark.abstains(UNJUDGED)
    abstained = [grade for grade in grades if benchmark.abstains(grade)]
    assert abstained, "the sample's made-up predictions say I don't know"
    assert all(benchmark.falls_short(grade) for grade in abstained)


def test_each_items_slices_are_the_scored_slices(scored: Any) -> None:
    _, benchmark, _, _, graded, document, _ = scored
    seen: set[tuple[str, str]] = set()
    for item in graded:
        row = json.loads(json.dumps(benchmark.to_row(item)))  # as stored in a verdict
        for dimension, value in benchmark.item_slices(row).items():
            assert value in document["slices"][dimension], (dimension, value)
            seen.add((dimension, value))
    scored_values = {
        (dimension, value)
        for dimension, values in document["slices"].items()
        for value in values
        if value != "(unlabelled)"
    }
    assert seen == scored_values


def test_an_item_image_is_a_file_the_agent_was_shown(scored: Any) -> None:
    _, benchmark, split_dir, *_ = scored
    split = benchmark.load_split(split_dir)
    shown = files = 0
    for setting in benchmark.run_settings():
        run = benchmark.for_setting(setting)
        plan = run.agent_plan(split, "multi-turn-qa", {})
        for ref in (ref for batch in plan.batches(16, ()) for ref in batch):
            image = benchmark.item_image(split, plan.key(ref))
            files += len(plan.image_files(ref))
            if image is not None:
                assert image in plan.image_files(ref)
                shown += 1
    assert shown or not files, "a benchmark that shows the agent images shows pages one"
    assert benchmark.item_image(split, "no/such-item") is None
