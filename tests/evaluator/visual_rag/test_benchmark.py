"""Visual-RAG: both split layouts and their errors, predictions, the judge's reading, the rules
judge, metrics and gCUE on hand-computed cases, and the CLI contract with an LLM judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.benchmarks.visual_rag import VisualRAG
from evaluator.benchmarks.visual_rag.judging import VisualRAGRubric, rules_score
from evaluator.benchmarks.visual_rag.metrics import gcue
from evaluator.cli import EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_OK, main
from evaluator.judges import MemoryCache, make_judge
from evaluator.records import EvaluatorError
from tests.fake_openai import FakeOpenAI

RUBRIC = VisualRAGRubric()
PIXEL = bytes.fromhex(  # a 1x1 PNG
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763"
    "f8cfc000000301010018dd8db00000000049454e44ae426082"
)


def podium_split(root: Path, rows: list[dict[str, object]], images: list[str]) -> Path:
    (root / "images").mkdir(parents=True)
    for image in images:
        (root / "images" / f"{image}.png").write_bytes(PIXEL)
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def query(name: str, **changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "query_id": name,
        "question": f"What colour are the wings of species {name}?",
        "answers": ["orange", "bright orange"],
        "candidates": {"a": 1, "b": 0, "c": 1, "d": 0},
        "species": f"species {name}",
        "feature": "wing colour",
    }
    return row | changes


@pytest.fixture
def split_dir(tmp_path: Path) -> Path:
    return podium_split(tmp_path / "split", [query("q1"), query("q2")], ["a", "b", "c", "d"])


def predictions(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_both_layouts_load_the_same_queries(tmp_path: Path, split_dir: Path) -> None:
    podium = VisualRAG().load_split(split_dir)
    released = tmp_path / "released"
    (released / "images").mkdir(parents=True)
    (released / "images" / "a.jpg").write_bytes(PIXEL)
    (released / "images" / "b.png").write_bytes(PIXEL)
    row = {"question": "Q?", "answer": ["orange"], "images": {"a": 1, "b": 0}, "sn": "Danaus"}
    (released / "v1_anno.jsonl").write_text(json.dumps(row) + "\n\n" + json.dumps(row) + "\n")
    loaded = VisualRAG().load_split(released)
    assert [q.query_id for q in loaded.queries] == ["1", "2"]  # 1-based line numbers
    assert loaded.queries[0].labels == {"species": "Danaus"} and loaded.layout == "released"
    assert loaded.images == {"a": "images/a.jpg", "b": "images/b.png"}
    assert podium.queries[0].clues == frozenset({"a", "c"})
    assert podium.queries[0].labels == {"species": "species q1", "feature": "wing colour"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"candidates": {"a": 0, "b": 0}}, "field 'candidates': no clue image"),
        ({"candidates": {"a": 1, "zz": 0}}, "field 'candidates': no image file for 'zz'"),
        ({"answers": []}, "field 'answers': expected a non-empty list"),
        ({"answers": ["", "x"]}, "field 'answers': an answer is ''"),
        ({"candidates": {"a": 2}}, "field 'candidates': 'a' is marked 2, not 0 or 1"),
        ({"question": 3}, "field 'question': expected a non-empty string"),
        ({"Bad Label": "x"}, "field 'Bad Label': not a label name"),
        ({"query_id": "../x"}, "field 'query_id': '../x' is not an id"),
    ],
)
def test_a_bad_query_is_refused_naming_file_line_and_field(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    root = podium_split(tmp_path, [query("q1"), query("q2", **change)], ["a", "b", "c", "d"])
    with pytest.raises(EvaluatorError, match=rf"queries.jsonl:2: {message}"):
        VisualRAG().load_split(root)


def test_duplicate_ids_and_empty_dirs_are_refused(tmp_path: Path) -> None:
    root = podium_split(tmp_path / "d", [query("q1"), query("q1")], ["a", "b", "c", "d"])
    with pytest.raises(EvaluatorError, match=r":2: field 'query_id': 'q1' again"):
        VisualRAG().load_split(root)
    with pytest.raises(EvaluatorError, match=r"no queries.jsonl .Podium. or v1_anno.jsonl"):
        VisualRAG().load_split(tmp_path)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"query_id": "q9", "setting": "zero_shot", "answer": "x"}, "'q9' is not in the split"),
        ({"query_id": "q1", "setting": "top_5", "answer": "x"}, "'top_5' is not a setting"),
        ({"query_id": "q1", "setting": "one_in_1", "answer": "x"}, "'one_in_1' is not a setting"),
        ({"query_id": "q1", "setting": "retrieval", "answer": "x"}, "required in the retrieval"),
        ({"query_id": "q1", "setting": "gt_clue", "answer": 5}, "field 'answer': expected a str"),
        ({"query_id": "q1", "setting": "gt_clue", "ranking": [1]}, "'ranking': expected a list"),
        ({"query_id": "q1", "setting": "gt_clue", "score": 1}, "field 'score': not a prediction"),
    ],
)
def test_bad_predictions_are_refused(
    tmp_path: Path, split_dir: Path, row: dict[str, object], message: str
) -> None:
    split = VisualRAG().load_split(split_dir)
    file = predictions(tmp_path / "p.jsonl", [row])
    with pytest.raises(EvaluatorError, match=message):
        VisualRAG().load_predictions(file, split)


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("Reason: right colour.\nScore: 1", "1"),
        ("Score: 0.5 because of the spots. Score: 1", "0.5"),  # the first number wins
        ("Score: 7", "1"),  # clamped
        ("Score: -2", "0"),
        ("Score: 0.75", "0.75"),
        ("The assistant refused.\nScore: 0 NO_ANSWER", "no_answer"),
        # the paper's judge's mark, and variants of its case, spacing and separator
        ("The assistant refused.\nScore: 0 | No Answer", "no_answer"),
        ("Score: 0|no answer", "no_answer"),
        ("Score: 0 - NO-ANSWER", "no_answer"),
        ("Score: 0 (No Answer)", "no_answer"),
        ("Score:0 | no_answer.", "no_answer"),
        ("Score: 0\nNo answer of the references matches.", "0"),  # prose on a later line
        ("Score: 0 | No Answers given match", "0"),  # not the mark
        ('{"verdict": "Score: 0 NO_ANSWER"}', "no_answer"),
        ('{"verdict": "Score: 0.5"}', "0.5"),
        ("It is correct.", None),
        ("score: 1", None),
    ],
)
def test_the_judge_reply_is_read_as_the_spec_says(reply: str, grade: str | None) -> None:
    assert RUBRIC.read(reply) == grade


@pytest.mark.parametrize(
    ("answer", "choice"),
    [
        ("Orange", "Score: 1"),
        ("The wings are bright orange.", "Score: 1"),
        ("Orange with blue spots", "Score: 0.5"),
        ("bright", "Score: 0.5"),
        ("Green", "Score: 0"),
        ("I don't know", "Score: 0 NO_ANSWER"),
        ("I cannot tell from the images.", "Score: 0 NO_ANSWER"),
    ],
)
def test_rules_judge(answer: str, choice: str) -> None:
    question = "What colour are the wings of the Ember Wingtail?"
    assert rules_score(question, ["orange", "bright orange"], answer)[0] == choice


def test_gcue_defined_negative_and_undefined() -> None:
    def accuracies(**values: float | None) -> dict[str, dict[str, float | None]]:
        return {name: {"accuracy": value} for name, value in values.items()}

    # B = 0.5 * 20 + 0.5 * 40 = 30; (A_5 - B) / (A_GT - B) = (50 - 30) / (70 - 30) = 0.5
    values, undefined = gcue(accuracies(gt_clue=70, zero_shot=20, non_clue=40, one_in_5=50), 0.5)
    assert values == {"gcue@5": 0.5} and undefined == {}
    # lambda 1: B = 20; (10 - 20) / (70 - 20) = -0.2
    values, _ = gcue(accuracies(gt_clue=70, zero_shot=20, non_clue=40, one_in_5=10), 1.0)
    assert values["gcue@5"] == pytest.approx(-0.2)
    # A_GT < B: the sign changes: (50 - 60) / (40 - 60) = 0.5
    values, _ = gcue(accuracies(gt_clue=40, zero_shot=60, non_clue=60, one_in_5=50), 0.5)
    assert values["gcue@5"] == pytest.approx(0.5)
    values, undefined = gcue(accuracies(gt_clue=30, zero_shot=20, non_clue=40, one_in_3=50), 0.5)
    assert values == {"gcue@3": None} and "equals the baseline" in undefined["gcue@3"]
    values, undefined = gcue(accuracies(gt_clue=30, zero_shot=None, one_in_3=50), 0.5)
    assert values == {"gcue@3": None}
    assert "zero_shot, non_clue" in undefined["gcue@3"]


def test_scores_on_a_hand_computed_run(tmp_path: Path, split_dir: Path) -> None:
    rows = [
        {"query_id": "q1", "setting": "retrieval", "answer": "orange", "ranking": ["b", "a"]},
        {"query_id": "q2", "setting": "retrieval", "answer": "", "ranking": ["a", "a", "zz"]},
        {"query_id": "q1", "setting": "zero_shot", "answer": "I don't know"},
        {"query_id": "q2", "setting": "zero_shot", "answer": "green"},
        {"query_id": "q1", "setting": "gt_clue", "answer": "Orange"},
        {"query_id": "q2", "setting": "gt_clue", "answer": "orange with blue spots"},
        {"query_id": "q1", "setting": "non_clue", "answer": "green"},
        {"query_id": "q2", "setting": "non_clue", "answer": "bright"},
        {"query_id": "q1", "setting": "one_in_3", "answer": "orange"},
    ]
    benchmark = VisualRAG()
    split = benchmark.load_split(split_dir)
    loaded, warnings = benchmark.load_predictions(predictions(tmp_path / "p.jsonl", rows), split)
    assert warnings == [
        "setting one_in_3: 1 queries without a prediction (scored as no answer): q2"
    ]
    judge = make_judge("rules", benchmark.rubric)
    graded = benchmark.grade(split, loaded, judge, MemoryCache(), progress=False)
    scores = benchmark.aggregate(graded)
    assert len(graded) == 10 and scores["complete"] is True
    retrieval = scores["retrieval"]
    # q1: clues a, c; ranking b, a -> recall@1 0, recall@5 1/2; q2: a, a (repeat), zz (unknown)
    assert retrieval["recall@1"] == pytest.approx(25.0)  # (0 + 1/2) / 2 x 100
    assert retrieval["recall@5"] == pytest.approx(50.0)
    assert retrieval["hit@1"] == 50.0 and retrieval["hit_count@5"] == 1.0
    # NDCG@5: q1 = (1/log2 3) / (1 + 1/log2 3); q2 = 1 / (1 + 1/log2 3)
    assert retrieval["ndcg@5"] == pytest.approx(50.0)
    assert any("'a' repeated" in w for w in scores["warnings"])
    assert any("'zz' is not a candidate" in w for w in scores["warnings"])
    settings = scores["settings"]
    assert settings["retrieval"]["accuracy"] == 50.0 and settings["retrieval"]["idk_rate"] == 50.0
    assert settings["zero_shot"]["accuracy"] == 0.0 and settings["zero_shot"]["idk_rate"] == 50.0
    assert settings["gt_clue"]["accuracy"] == 75.0  # 1 and 0.5
    assert settings["non_clue"]["accuracy"] == 25.0  # 0 and 0.5
    assert settings["one_in_3"]["accuracy"] == 50.0  # 1, and no answer for q2
    # ROUGE-1 recall is case-sensitive (the rouge package): "Orange" 0, "orange with..." 1
    assert settings["gt_clue"]["rouge1_recall"] == pytest.approx(50.0)
    # B = 0.5 x 0 + 0.5 x 25 = 12.5; (50 - 12.5) / (75 - 12.5) = 0.6
    assert scores["gcue"] == {"gcue@3": pytest.approx(0.6)}
    assert set(scores["slices"]) == {"feature", "species"}
    q1 = scores["slices"]["species"]["species q1"]
    assert q1["settings"]["gt_clue"]["accuracy"] == 100.0 and q1["retrieval"]["count"] == 1


def test_the_idk_rate_counts_podiums_and_the_papers_no_answer_marks(split_dir: Path) -> None:
    benchmark = VisualRAG()
    split = benchmark.load_split(split_dir)
    rows = [
        {"query_id": q, "setting": s, "answer": f"{q} {s}"}
        for q in ("q1", "q2")
        for s in ("zero_shot", "gt_clue", "non_clue")
    ]
    loaded, _ = benchmark.load_predictions(predictions(split_dir.parent / "p.jsonl", rows), split)
    with FakeOpenAI(reply="Score: 0.5") as server:
        server.replies["q1 zero_shot"] = "refusal\nScore: 0 | No Answer"  # the paper's mark
        server.replies["q2 zero_shot"] = "refusal\nScore: 0 NO_ANSWER"  # Podium's
        server.replies["q1 gt_clue"] = "refusal\nScore: 0 | no answer"
        server.replies["q2 gt_clue"] = "right\nScore: 1"
        server.replies["q1 non_clue"] = "Score: 0\nNo answer of the references matches."
        judge = make_judge("openai", benchmark.rubric, base_url=server.url, model="m",
                           api_key="k", structured="none")  # fmt: skip
        graded = benchmark.grade(split, loaded, judge, None, progress=False)
    settings = benchmark.aggregate(graded)["settings"]
    # zero_shot: both marks are no answer: idk 2/2 = 100, accuracy (0 + 0) / 2 = 0
    assert (settings["zero_shot"]["idk_rate"], settings["zero_shot"]["accuracy"]) == (100.0, 0.0)
    # gt_clue: one no answer, one 1: idk 1/2 = 50, accuracy (0 + 1) / 2 = 50
    assert (settings["gt_clue"]["idk_rate"], settings["gt_clue"]["accuracy"]) == (50.0, 50.0)
    # non_clue: "No answer" on the line after the score is prose: 0 and 0.5, idk 0, acc 25
    assert (settings["non_clue"]["idk_rate"], settings["non_clue"]["accuracy"]) == (0.0, 25.0)


def test_cli_with_an_llm_judge_then_replay(tmp_path: Path, split_dir: Path) -> None:
    rows = [
        {"query_id": q, "setting": s, "answer": f"{q} {s}"}
        for q in ("q1", "q2")
        for s in ("gt_clue", "zero_shot", "non_clue", "one_in_5")
    ]
    file = predictions(tmp_path / "p.jsonl", rows)
    with FakeOpenAI(reply="Score: 0.5") as server:
        server.replies["q1 gt_clue"] = "good\nScore: 1"
        server.replies["q2 zero_shot"] = "refusal\nScore: 0 NO_ANSWER"
        server.replies["q1 non_clue"] = "nothing to read"
        argv = ["score", "--protocol", "visual-rag", "--split", str(split_dir)]
        argv += ["--predictions", str(file), "--no-progress", "--no-cache", "--judge", "openai"]
        argv += ["--judge-base-url", server.url, "--judge-model", "m", "--judge-structured", "none"]
        assert main([*argv, "--out", str(tmp_path / "a")]) == EXIT_INCOMPLETE
        user = next(m for m in server.requests[0]["messages"] if m["role"] == "user")["content"]
        assert '<references>["orange", "bright orange"]</references>' in user.replace("&quot;", '"')
        server.replies["q1 non_clue"] = "Score: 0"
        assert main([*argv, "--out", str(tmp_path / "b")]) == EXIT_OK
    scores = json.loads((tmp_path / "b" / "scores.json").read_text())
    assert scores["protocol"] == "visual-rag" and scores["judge"]["kind"] == "llm"
    assert scores["settings"]["gt_clue"]["accuracy"] == 75.0
    assert scores["settings"]["zero_shot"]["idk_rate"] == 50.0
    assert scores["settings"]["non_clue"]["accuracy"] == 25.0
    assert scores["retrieval"] is None and set(scores["gcue"]) == {"gcue@5"}
    calls = [json.loads(line) for line in (tmp_path / "b" / "transcript.jsonl").open()]
    assert sorted(c["key"] for c in calls)[0] == "answer/q1/gt_clue" and len(calls) == 8
    replay = [a if a != "openai" else "replay" for a in argv[: argv.index("--judge-base-url")]]
    replay += ["--transcript", str(tmp_path / "b" / "transcript.jsonl")]
    assert main([*replay, "--out", str(tmp_path / "c")]) == EXIT_OK
    again = json.loads((tmp_path / "c" / "scores.json").read_text())
    assert again["settings"] == scores["settings"] and again["gcue"] == scores["gcue"]
    assert main([*replay[:-1], str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "d")]) == (
        EXIT_BAD_INPUT
    )


def test_ranking_warnings_are_bounded_per_query(tmp_path: Path, split_dir: Path) -> None:
    ranking = ["a", *(f"unknown{i}" for i in range(500))]
    rows = [{"query_id": "q1", "setting": "retrieval", "answer": "", "ranking": ranking}]
    benchmark = VisualRAG()
    split = benchmark.load_split(split_dir)
    loaded, _ = benchmark.load_predictions(predictions(tmp_path / "p.jsonl", rows), split)
    graded = benchmark.grade(split, loaded, make_judge("rules", benchmark.rubric), None, False)
    warnings = benchmark.aggregate(graded)["warnings"]
    mine = [w for w in warnings if w.startswith("query q1:")]
    assert len(mine) == 6 and mine[-1] == "query q1: 495 more ranking warnings"
    assert graded[0].retrieval is not None and graded[0].retrieval["hit@1"] == 1.0


def test_stored_replies_become_predictions(split_dir: Path) -> None:
    benchmark = VisualRAG(("retrieval", "gt_clue"))
    split = benchmark.load_split(split_dir)
    assert benchmark.split_keys(split) == [
        "retrieval/q1", "retrieval/q2", "gt_clue/q1", "gt_clue/q2"
    ]  # fmt: skip
    reply = json.dumps({"answer": "orange", "ranking": ["c", "a"]})
    prediction = benchmark.stored_prediction(split, "retrieval/q1", reply)
    assert (prediction.answer, prediction.ranking) == ("orange", ("c", "a"))
    broken = benchmark.stored_prediction(split, "retrieval/q2", "not json")
    assert (broken.answer, broken.ranking) == ("", ())
    with pytest.raises(EvaluatorError, match="name the settings"):
        VisualRAG().split_keys(split)


def test_the_keys_a_split_never_asks(split_dir: Path) -> None:
    split = VisualRAG().load_split(split_dir)  # queries q1, q2
    keys = ["answer/q1/zero_shot", "answer/q2/topk_7", "answer/q1/one_in_12",  # asked
            "answer/q1/one_in_1", "answer/q9/gt_clue", "turn/q1", "answer/q1"]  # fmt: skip
    assert VisualRAG().never_asked(split, keys) == {
        "answer/q1/one_in_1", "answer/q9/gt_clue", "turn/q1", "answer/q1"}  # fmt: skip
