"""Judging M2RAG through real HTTP servers: a text endpoint and a separate vision endpoint."""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evaluator.benchmarks.m2rag import M2RAG
from evaluator.benchmarks.m2rag.items import M2Prediction, M2Split, load_split
from evaluator.benchmarks.m2rag.sample import draw
from evaluator.judges import MemoryCache, make_judge
from evaluator.judges.rubric import UNJUDGED
from evaluator.judges.transcript import ReplayJudge, TranscriptWriter
from tests.fake_openai import FakeOpenAI

ABOVE = " ".join(f"w{i}" for i in range(300))
ANSWER = f"{ABOVE} ![a red circle](image 0)\nThe circle is red.\n![stripes](image 1) End."
REPLIES = {  # a phrase of each system prompt -> the judge's reply
    "fluency": "Reads well.\n7", "how relevant": "8", "coherent": "6", "helps a reader": "9",
    "refers to the image": "4", "Break the answer": '{"statements": ["s1", "s2"]}',
    "contexts support it": '{"verdicts": [1, 0]}',
    "useful in arriving": 'Here: {"verdicts": [1, 0, 1, 0]}',
}  # fmt: skip


def respond(payload: dict[str, Any]) -> str:
    system = payload["messages"][0]["content"]
    return next(reply for phrase, reply in REPLIES.items() if phrase in system)


@pytest.fixture
def split(tmp_path: Path) -> M2Split:
    return load_split(write_split(tmp_path))


def write_split(tmp_path: Path, extra_file: int = 2, extra_score: int = 8) -> Path:
    """One query (two pages, an extra image) in Podium's format in ``tmp_path``; the extra
    image is ``images/<extra_file>.png`` scored ``extra_score``."""
    import random

    (tmp_path / "images").mkdir()
    files = []
    for i in range(3):
        (tmp_path / "images" / f"{i}.png").write_bytes(
            draw("circle", (200, 0, 0), random.Random(i))
        )
        files.append(f"images/{i}.png")
    record = {
        "query_id": "q1", "query": "What colour is the circle?", "topic": "science",
        "pages": [
            {"title": "A", "text": "The circle is red.",
             "images": [{"file": files[0], "score": 9, "caption": "a red circle"}]},
            {"title": "B", "text": "Stripes are grey.",
             "images": [{"file": files[1], "score": 2, "caption": "grey stripes"}]},
        ],
        "extra_images": [{"file": files[extra_file], "score": extra_score,
                          "caption": "another circle"}],
    }  # fmt: skip
    (tmp_path / "queries.jsonl").write_text(json.dumps(record) + "\n")
    return tmp_path


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI(latency_s=0.02) as text, FakeOpenAI(latency_s=0.02) as vision:
        text.respond = vision.respond = respond
        yield text, vision


def judge_for(server: FakeOpenAI, concurrency: int = 2) -> Any:
    return make_judge("openai", M2RAG.rubric, base_url=server.url, model="fake-judge",
                      api_key="k", concurrency=concurrency, max_retries=0)  # fmt: skip


def test_text_and_image_prompts_go_to_their_endpoints_and_score_by_hand(
    split: M2Split, servers: tuple[FakeOpenAI, FakeOpenAI], tmp_path: Path
) -> None:
    text, vision = servers
    benchmark = M2RAG(vision_base_url=vision.url, vision_model="fake-judge")
    predictions = {"q1": M2Prediction("q1", ANSWER)}
    stream = io.StringIO()
    (item,) = benchmark.grade(split, predictions, judge_for(text), MemoryCache(), False,
                             TranscriptWriter(stream))  # fmt: skip
    assert item.placed == (0, 1) and item.grade != UNJUDGED, item.judge_error
    assert (item.fluency, item.relevance, item.faithfulness) == (0.7, 0.8, 0.5)
    assert item.context_precision == pytest.approx(5 / 6)  # contexts: 2 pages, 2 captions
    assert item.image_recall == 0.5  # positives 0 and 2 (scores 9, 8); 0 placed
    assert (item.coherence, item.helpfulness, item.reference) == ((0.6,) * 2, (0.9,) * 2,
                                                                  (0.4,) * 2)  # fmt: skip
    assert text.count == 5 and vision.count == 6  # 4 + verdicts; 3 per placed image
    assert benchmark.calls == {"predicted": 11, "asked": 11, "made": 11}
    assert all("response_format" not in p for p in text.requests + vision.requests)
    assert text.peak_in_flight <= 2
    (first,) = [  # image 0's helpfulness call (the calls arrive in any order)
        p for p in vision.requests if "helps a reader" in p["messages"][0]["content"]
        and "<caption>a red circle</caption>" in p["messages"][1]["content"][0]["text"]
    ]  # fmt: skip
    words, image = first["messages"][1]["content"]
    url = image["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == (split.root / "images/0.png").read_bytes()
    above = re.search(r"<above>(.*)</above>", words["text"], re.S)
    assert above and above.group(1).split() == ABOVE.split()[-256:]
    # the transcript keeps every call by key, the image's hash and not its bytes
    calls = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert {c["key"] for c in calls} >= {"answer/q1/fluency", "answer/q1/verdicts",
                                         "answer/q1/image/1/reference"}  # fmt: skip
    assert len(calls) == 11 and "base64" not in stream.getvalue()
    path = tmp_path / "transcript.jsonl"
    path.write_text(stream.getvalue())
    (again,) = M2RAG().grade(split, predictions, ReplayJudge(path, M2RAG.rubric), None, False)
    assert again == item


@pytest.mark.parametrize(
    ("extra_file", "extra_score", "answer", "recall"),
    [
        # images/0.png listed twice (image 0 on page A scored 9, image 2 the extra scored 9),
        # both placed: positive files [0.png, 0.png], placed {0.png}: 1 / 2 listings = 0.5
        # (by index {0, 2} & {0, 2}: 2 / 2 = 1.0); every case places two images, so the
        # contexts are 2 pages and 2 captions, the 4 verdicts the fake judge gives
        (0, 9, "![a](image 0) and ![b](image 2)", 0.5),
        # images/1.png listed at 1 (scored 2) and 2 (scored 9); the answer places images 0, 1:
        # positives [0.png, 1.png], placed {0.png, 1.png}: 2 / 2 = 1.0 (by index
        # {0, 1} & {0, 2}: 1 / 2)
        (1, 9, "![a](image 0) and ![b](image 1)", 1.0),
        # images/0.png at 0 (scored 9) and 2 (scored 3); the answer places images 1, 2:
        # positives [0.png], placed {1.png, 0.png}: 1 / 1 = 1.0 (by index {1, 2} & {0}: 0.0)
        (0, 3, "![b](image 1) and ![c](image 2)", 1.0),
    ],
)
def test_image_recall_counts_an_image_listed_twice_by_its_file(
    tmp_path: Path, servers: tuple[FakeOpenAI, FakeOpenAI],
    extra_file: int, extra_score: int, answer: str, recall: float,
) -> None:  # fmt: skip
    text, vision = servers
    split = load_split(write_split(tmp_path, extra_file, extra_score))
    benchmark = M2RAG(vision_base_url=vision.url, vision_model="fake-judge")
    (item,) = benchmark.grade(split, {"q1": M2Prediction("q1", answer)}, judge_for(text),
                              None, False)  # fmt: skip
    assert item.grade != UNJUDGED, item.judge_error
    assert item.image_recall == recall


def test_verdicts_are_cached_across_runs(
    split: M2Split, servers: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    text, vision = servers
    cache = MemoryCache()
    predictions = {"q1": M2Prediction("q1", ANSWER)}
    benchmark = M2RAG(vision_base_url=vision.url, vision_model="fake-judge")
    first = benchmark.grade(split, predictions, judge_for(text), cache, False)
    counts = (text.count, vision.count)
    assert benchmark.grade(split, predictions, judge_for(text), cache, False) == first
    assert (text.count, vision.count) == counts
    assert benchmark.calls == {"predicted": 11, "asked": 11, "made": 0}


def test_an_unreadable_reply_leaves_the_answer_unjudged_with_the_reason(
    split: M2Split, servers: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    text, vision = servers
    REPLIES_NOW = dict(REPLIES, fluency="great")
    text.respond = lambda p: next(
        r for k, r in REPLIES_NOW.items() if k in p["messages"][0]["content"]
    )
    predictions = {"q1": M2Prediction("q1", ANSWER)}
    strict = M2RAG("strict", vision.url, "fake-judge")
    (item,) = strict.grade(split, predictions, judge_for(text), None, False)
    assert item.grade == UNJUDGED and item.fluency is None
    assert item.judge_error == "fluency: no score 0-10 alone on the reply's last line"
    # the official parser reads a reply with no digit as 0 (its documented quirk)
    (official,) = M2RAG("official", vision.url, "fake-judge").grade(
        split, predictions, judge_for(text), None, False
    )
    assert official.fluency == 0.0 and official.grade != UNJUDGED


def test_a_failed_or_empty_answer_makes_no_judge_call(
    split: M2Split, servers: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    text, _ = servers
    for prediction in (M2Prediction("q1", "", True), M2Prediction("q1", "  ")):
        (item,) = M2RAG().grade(split, {"q1": prediction}, judge_for(text), None, False)
        assert item.grade == "failed"
    assert text.count == 0


def test_the_forecast_bounds_the_calls_before_any_answer(split: M2Split) -> None:
    """Before a team answers: 4 answer prompts and 3 prompts for each of the query's 3 images
    in round one, the statements' verdicts in round two; the graded run above made 11."""
    forecast = M2RAG().judge_forecast(split)
    assert forecast.rounds == (4 + 3 * 3, 1) and forecast.answers == 1
    assert forecast.calls == 14 >= 11


def test_the_keys_a_split_never_asks(split: M2Split) -> None:
    keys = ["answer/q1/fluency", "answer/q1/verdicts", "answer/q1/image/2/coherence",  # asked
            "answer/q1/image/3/coherence", "answer/q1/image/0/fluency", "answer/q2/relevance",
            "answer/q1/score"]  # fmt: skip
    assert M2RAG().never_asked(split, keys) == {  # 3 images: 0, 1 and 2
        "answer/q1/image/3/coherence", "answer/q1/image/0/fluency", "answer/q2/relevance",
        "answer/q1/score"}  # fmt: skip
