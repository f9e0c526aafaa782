"""MRAG-Suite through its benchmark: predictions and their errors, the agent's request and
replies, scores withheld while unjudged, the GPD - GO gap, settings, and the CLI with an LLM
judge (the fake OpenAI-compatible server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.benchmarks import get_benchmark
from evaluator.benchmarks.mrag_suite import MragSuite
from evaluator.benchmarks.mrag_suite.metrics import GAP, gap
from evaluator.benchmarks.mrag_suite.modes import MAX_LONG_ANSWER_CHARS
from evaluator.cli import EXIT_OK, main
from evaluator.judges import make_judge
from evaluator.judges.rubric import UNJUDGED
from evaluator.records import EvaluatorError
from evaluator.report import read_scores
from evaluator.seam.agent_plan import RequestContext
from tests.evaluator.mrag_suite.split_data import record, write_split
from tests.fake_openai import FakeOpenAI

BENCHMARK = MragSuite()


def answer_line(mode: str = "GO", item: str = "q1", **changes: object) -> str:
    row = {"item_id": item, "mode": mode, "short_answer": "12 million",
           "long_answer": "Revenue reached 12 million in 2021."} | changes  # fmt: skip
    return json.dumps(row) + "\n"


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (answer_line(item="q9"), "'q9' is not an item of the split"),
        (answer_line(mode="ALL"), "'ALL' is not a retrieval mode"),
        (answer_line() * 2, "answered twice in mode GO"),
        (answer_line(long_answer="x" * 1_000_000), f"longer than {MAX_LONG_ANSWER_CHARS}"),
        (answer_line(short_answer=None), "short_answer is missing or not a string"),
    ],
)
def test_bad_predictions_are_refused_naming_the_line(
    tmp_path: Path, lines: str, message: str
) -> None:
    split = BENCHMARK.load_split(write_split(tmp_path / "split", [record()]))
    (tmp_path / "p.jsonl").write_text(lines)
    with pytest.raises(EvaluatorError, match=r"p\.jsonl:\d") as error:
        BENCHMARK.load_predictions(tmp_path / "p.jsonl", split)
    assert message in str(error.value)


def test_a_predictions_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    split = BENCHMARK.load_split(write_split(tmp_path / "split", [record()]))
    (tmp_path / "p.jsonl").write_bytes(answer_line().encode()[:-3] + b"\xff\xfe\n")
    with pytest.raises(EvaluatorError, match="not UTF-8 text"):
        BENCHMARK.load_predictions(tmp_path / "p.jsonl", split)


def test_missing_answers_are_warned_about_and_graded_empty(tmp_path: Path) -> None:
    split = BENCHMARK.load_split(write_split(tmp_path / "split", [record()]))
    (tmp_path / "p.jsonl").write_text(answer_line())
    answers, warnings = BENCHMARK.load_predictions(tmp_path / "p.jsonl", split)
    assert warnings == ["2 answer(s) missing, graded as empty: GPD/q1, DO/q1"]
    graded = BENCHMARK.grade(split, answers, make_judge("rules", BENCHMARK.rubric), None, False)
    assert [item.grade for item in graded] == ["correct", "no_answer", "no_answer"]


def test_the_agent_sees_the_modes_items_never_the_gold_or_captions(tmp_path: Path) -> None:
    split = BENCHMARK.load_split(write_split(tmp_path, [record()]))
    plan = BENCHMARK.for_setting("GPD").agent_plan(split, "t", {})
    (batch,) = plan.batches(8, ())
    paths = [[f"/podium/images/{n}" for n, _ in enumerate(plan.image_files(ref))] for ref in batch]
    body = plan.requests(batch, paths, RequestContext("items"))
    (item,) = body["items"]
    assert body["protocol"] == "mrag-suite" and item["item_id"] == "GPD/q1"
    # x2's text is p1's: retrieved twice, as RAGChecker counts (once when counted distinct)
    assert len(item["images"]) == 3 and len(item["passages"]) == 4
    distinct = MragSuite(counting="distinct").for_setting("GPD").agent_plan(split, "t", {})
    assert [len(ref.retrieved) for ref in next(iter(distinct.batches(8, ())))] == [6]
    text = json.dumps(body)
    assert "gold" not in text and "revenue chart" not in text  # nor a caption
    assert "short_answer" not in text and "The chart shows growth" not in text  # nor the answer
    replies = plan.read_replies(batch, [{"short_answer": "x", "long_answer": "y" * 20_000}], 0)
    assert replies[0].problem is not None and "longer than" in replies[0].problem
    assert BENCHMARK.stored_prediction(split, "GPD/q1", replies[0].text).long_answer == ""


def test_an_unjudged_answer_withholds_its_modes_judged_figures(tmp_path: Path) -> None:
    split = BENCHMARK.load_split(write_split(tmp_path / "split", [record(), record("q2")]))
    (tmp_path / "p.jsonl").write_text(answer_line() + answer_line(item="q2", short_answer="12"))
    answers, _ = BENCHMARK.load_predictions(tmp_path / "p.jsonl", split)
    with FakeOpenAI(reply="no idea") as fake:  # no reply is JSON: every call is unjudged
        judge = make_judge("openai", BENCHMARK.rubric, base_url=fake.url, model="fake-judge",
                           api_key="k", structured="none")  # fmt: skip
        graded = MragSuite(("GO",)).grade(split, answers, judge, None, False)
    assert {item.grade for item in graded} == {UNJUDGED}
    assert all("not the JSON its prompt asks for" in (item.judge_error or "") for item in graded)
    scores = MragSuite(("GO",)).aggregate(graded)
    block = scores["settings"]["GO"]
    assert scores["complete"] is False and block["unjudged"] == 2
    assert block["accuracy"] is None and block["faithfulness"] is None
    assert block["exact_match"] == 50.0  # rules figures are never withheld
    assert scores["gap"] == {"gpd_go_gap": None}


def test_the_gap_is_gpd_minus_go_accuracy_or_says_why_not() -> None:
    assert gap({"GO": {"accuracy": 80.0}, "GPD": {"accuracy": 62.5}}) == ({"gpd_go_gap": -17.5}, {})
    assert BENCHMARK.derived({"GO": {"accuracy": 80.0}}) == {"gpd_go_gap": None}
    assert "needs the accuracy of GPD" in BENCHMARK.undefined({"GO": {"accuracy": 80.0}})[GAP]


def test_settings_name_modes_and_depth() -> None:
    assert MragSuite.check_settings({}) == {
        "modes": ["GO", "GPD", "DO"],
        "passages": 5,
        "images": 5,
        "counting": "ragchecker",
    }
    benchmark = MragSuite.from_settings({"modes": ["GO", "GPD"], "passages": 2, "images": 2})
    assert benchmark.run_settings() == ("GO", "GPD") and benchmark.settings()["depth"] == [2, 2]
    with pytest.raises(EvaluatorError, match="passages"):
        MragSuite.check_settings({"passages": -1})
    with pytest.raises(EvaluatorError, match="'DO' is not evaluated here"):
        benchmark.for_setting("DO")
    # Podium's counting is a named setting, carried by each run and by scores.json
    distinct = MragSuite.from_settings({"counting": "distinct"})
    assert distinct.for_setting("GPD").counting == "distinct"
    assert distinct.settings() == {"modes": ["GO", "GPD", "DO"], "depth": [5, 5],
                                   "counting": "distinct"}  # fmt: skip
    assert MragSuite.from_document(distinct.settings()).counting == "distinct"
    assert MragSuite.from_document({}).counting == "ragchecker"
    with pytest.raises(EvaluatorError, match="counting: 'once' is not one of"):
        MragSuite.check_settings({"counting": "once"})
    with pytest.raises(EvaluatorError, match="counting 'once': expected one of ragchecker"):
        MragSuite(counting="once")


def test_captionless_images_are_noted_on_import(tmp_path: Path) -> None:
    split = BENCHMARK.load_split(write_split(tmp_path, [record()]))
    assert BENCHMARK.split_notes(split) == [
        "2 image(s) have no caption: the text-only claim checker finds no claim in them "
        "(they count as retrieved, never as relevant)"
    ]


def test_the_cli_scores_with_an_llm_judge_and_counts_its_calls(tmp_path: Path) -> None:
    get_benchmark("mrag-suite").write_sample(tmp_path / "sample", seed=1)
    split_dir = tmp_path / "sample" / "validation"
    benchmark = get_benchmark("mrag-suite")
    benchmark.write_sample_predictions(benchmark.load_split(split_dir), tmp_path / "p.jsonl")
    with FakeOpenAI() as fake:
        fake.replies["<text>"] = json.dumps({"claims": [["revenue", "was", "12 million"]]})
        fake.replies["<claims>"] = json.dumps({"labels": ["Entailment"] * 5})
        fake.reply = "correct"
        argv = ["score", "--protocol", "mrag-suite", "--split", str(split_dir), "--predictions",
                str(tmp_path / "p.jsonl"), "--judge", "openai", "--judge-base-url", fake.url,
                "--judge-model", "fake-judge", "--no-cache", "--no-progress",
                "--out", str(tmp_path / "run")]  # fmt: skip
        assert main(argv) == EXIT_OK
        calls = read_scores(tmp_path / "run")["judge_calls"]
        assert calls["requested"] == fake.count <= calls["predicted"]
    lines = (tmp_path / "run" / "transcript.jsonl").read_text().splitlines()
    assert len(lines) == fake.count
