"""Grading M2RAG: the judge calls of every answer, and one graded answer per query.

Per answer that is neither failed nor empty: ``fluency``, ``relevance``, ``context_precision``
and ``statements`` (round one), 3 image prompts per kept placement (round one), then
``verdicts`` on the statements (round two; none when there is no statement): at most
``4 + 1 + 3 x placed`` calls, predicted before judging (``predicted_calls``) and counted after.
Keys: ``answer/<query_id>/<prompt>`` and ``answer/<query_id>/image/<N>/<prompt>``. A failed
or empty answer makes no call. An unreadable reply leaves the answer unjudged with the reason.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Mapping
from typing import Any

from evaluator.benchmarks.m2rag.answer import ParsedAnswer, parse_answer
from evaluator.benchmarks.m2rag.items import M2Prediction, M2Query, M2Split
from evaluator.benchmarks.m2rag.judging import register_image
from evaluator.benchmarks.m2rag.prompts import ANSWER_PROMPTS, IMAGE_PROMPTS, SCORE_PROMPTS
from evaluator.benchmarks.m2rag.record import FAILED, GradedAnswer
from evaluator.benchmarks.m2rag.scoring import (
    average_precision,
    faithfulness,
    image_recall,
    official_clamp,
    official_score,
    strict_score,
)
from evaluator.judges.base import Judge
from evaluator.judges.cache import JudgmentCache
from evaluator.judges.loop import Judgments, judge_and_transcribe
from evaluator.judges.rubric import UNJUDGED
from evaluator.judges.transcript import TranscriptWriter
from evaluator.records import JudgeForecast, JudgeRequest, Judgment

CALLS_PER_ANSWER = len(ANSWER_PROMPTS) + 1  # and the verdicts on the statements


def _request(query: M2Query, text: str, key: str, **inputs: Any) -> JudgeRequest:
    ground = json.dumps(inputs, ensure_ascii=False, sort_keys=True)
    return JudgeRequest(query.query, ground, text, key=f"answer/{query.query_id}/{key}")


def contexts(query: M2Query, parsed: ParsedAnswer) -> list[str]:
    """The contexts of the ragas metrics: the page texts, then the placed images' captions."""
    return [page.text for page in query.pages] + [
        query.images[index].caption for index in parsed.indices
    ]


def predicted_calls(split: M2Split, predictions: Mapping[str, M2Prediction]) -> int:
    """The most judge calls grading ``predictions`` makes."""
    total = 0
    for query in split.queries:
        prediction = predictions.get(query.query_id)
        if prediction is not None and not prediction.failed and prediction.answer.strip():
            placed = parse_answer(prediction.answer, len(query.images)).placements
            total += CALLS_PER_ANSWER + len(IMAGE_PROMPTS) * len(placed)
    return total


def never_asked(split: M2Split, keys: Collection[str]) -> set[str]:
    """The keys among ``keys`` no answer to ``split`` asks: all but the answer prompts'
    and, for each image a query offers, the image prompts'."""
    asked = {
        f"answer/{query.query_id}/{call}"
        for query in split.queries
        for call in (*ANSWER_PROMPTS, "verdicts", *(
            f"image/{index}/{prompt}" for index in range(len(query.images))
            for prompt in IMAGE_PROMPTS
        ))
    }  # fmt: skip
    return set(keys) - asked


def forecast(split: M2Split) -> JudgeForecast:
    """The most judge calls one submission's answers to ``split`` can make, before it answers:
    round one, the answer prompts and 3 image prompts for each image a query offers (an answer
    places each at most once); round two, the verdicts on each answer's statements."""
    first = sum(
        len(ANSWER_PROMPTS) + len(IMAGE_PROMPTS) * len(query.images) for query in split.queries
    )
    answers = len(split.queries)
    return JudgeForecast(rounds=(first, answers), answers=answers)


def read_reply(prompt: str, grade: str, official: bool, expected: int = 0) -> Any:
    """A reply's value for ``prompt``: a 0-10 score, a list of statements or of 0/1 verdicts
    (``expected`` of them); ``ValueError`` with the reason when it cannot be read."""
    if prompt in SCORE_PROMPTS:
        score = official_score(grade) if official else strict_score(grade)
        if score is None:
            raise ValueError(f"{prompt}: no score 0-10 alone on the reply's last line")
        return score
    start, end = grade.find("{"), grade.rfind("}")
    try:
        data = json.loads(grade[start : end + 1]) if start >= 0 else None
    except ValueError:
        data = None
    field = "statements" if prompt == "statements" else "verdicts"
    value = data.get(field) if isinstance(data, dict) else None
    if prompt == "statements":
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise ValueError('statements: no JSON object {"statements": [strings]}')
        return [s for s in value if s.strip()]
    if not isinstance(value, list) or any(v not in (0, 1) or isinstance(v, float) for v in value):
        raise ValueError(f'{prompt}: no JSON object {{"verdicts": [0 or 1, ...]}}')
    if len(value) != expected:
        raise ValueError(f"{prompt}: {len(value)} verdicts for {expected} items")
    return [int(v) for v in value]


def _image_requests(query: M2Query, parsed: ParsedAnswer, split: M2Split) -> list[JudgeRequest]:
    requests = []
    for placement in parsed.placements:
        image = query.images[placement.index]
        path = split.image_path(image)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        register_image(digest, path)
        for prompt in IMAGE_PROMPTS:
            requests.append(
                _request(
                    query, parsed.text, f"image/{placement.index}/{prompt}", prompt=prompt,
                    image=digest, caption=placement.caption, above=placement.above,
                    below=placement.below, stored_score=image.score,
                )
            )  # fmt: skip
    return requests


def grade_answers(
    split: M2Split,
    predictions: Mapping[str, M2Prediction],
    judge: Judge,
    cache: JudgmentCache | None,
    official: bool = True,
    progress: bool = True,
    transcript: TranscriptWriter | None = None,
) -> tuple[list[GradedAnswer], dict[str, int]]:
    """Every query of ``split``, in order; and the judge calls ``asked`` (the requests) and
    ``made`` (sent to a model: not answered by the cache)."""
    parsed: dict[str, ParsedAnswer] = {}
    first: list[JudgeRequest] = []
    for query in split.queries:
        prediction = predictions.get(query.query_id)
        if prediction is None or prediction.failed or not prediction.answer.strip():
            continue
        answer = parse_answer(prediction.answer, len(query.images))
        parsed[query.query_id] = answer
        for prompt in ANSWER_PROMPTS:
            inputs = {"contexts": contexts(query, answer)} if prompt == "context_precision" else {}
            first.append(_request(query, answer.text, prompt, prompt=prompt, **inputs))
        first += _image_requests(query, answer, split)
    judged = judge_and_transcribe(judge, first, cache, transcript, progress)
    made = _made(judged)
    replies = {request.key: judgment for request, judgment in zip(first, judged, strict=True)}
    second: list[JudgeRequest] = []
    for query in split.queries:
        kept = parsed.get(query.query_id)
        judgment = replies.get(f"answer/{query.query_id}/statements")
        if kept is None or judgment is None or judgment.verdict == UNJUDGED:
            continue
        try:
            statements = read_reply("statements", judgment.verdict, official)
        except ValueError:
            continue
        if statements:
            inputs = {"contexts": contexts(query, kept), "statements": statements}
            second.append(_request(query, kept.text, "verdicts", prompt="verdicts", **inputs))
    judged = judge_and_transcribe(judge, second, cache, transcript, progress)
    made += _made(judged)
    replies |= {request.key: judgment for request, judgment in zip(second, judged, strict=True)}
    graded = [
        _graded(query, predictions.get(query.query_id), parsed.get(query.query_id), replies,
                judge, official)
        for query in split.queries
    ]  # fmt: skip
    return graded, {"asked": len(first) + len(second), "made": made}


def _made(judgments: list[Judgment]) -> int:
    return judgments.stats.model_calls if isinstance(judgments, Judgments) else 0


def _graded(
    query: M2Query,
    prediction: M2Prediction | None,
    answer: ParsedAnswer | None,
    replies: Mapping[str, Judgment],
    judge: Judge,
    official: bool,
) -> GradedAnswer:
    base: dict[str, Any] = {
        "query_id": query.query_id, "labels": {"topic": query.topic}, "query": query.query,
        "answer": prediction.answer if prediction else "", "judge_id": judge.judge_id,
        "prompt_version": judge.prompt_version, "prompt_hash": judge.prompt_hash,
    }  # fmt: skip
    if answer is None:
        return GradedAnswer(**base, grade=FAILED)
    base |= {"placed": answer.indices, "dropped": answer.dropped}

    def value(key: str, prompt: str, expected: int = 0) -> Any:
        judgment = replies[f"answer/{query.query_id}/{key}"]
        if judgment.verdict == UNJUDGED:
            raise ValueError(f"{key}: {judgment.error}")
        return read_reply(prompt, judgment.verdict, official, expected)

    try:
        scores = {p: value(p, p) / 10 for p in ("fluency", "relevance")}
        verdicts = value("context_precision", "context_precision", len(contexts(query, answer)))
        statements = value("statements", "statements")
        supported = value("verdicts", "verdicts", len(statements)) if statements else []
        coherence, helpfulness, reference = (
            tuple(value(f"image/{i}/{p}", p) / 10 for i in answer.indices) for p in IMAGE_PROMPTS
        )
    except ValueError as exc:
        return GradedAnswer(**base, grade=UNJUDGED, judge_error=str(exc))
    faithful = faithfulness(supported)
    placed_files = [query.images[index].file for index in answer.indices]
    graded = GradedAnswer(
        **base, grade="", **scores, context_precision=average_precision(verdicts),
        faithfulness=official_clamp(faithful), faithfulness_nan=math.isnan(faithful),
        image_recall=image_recall(placed_files, query.positive_files()), coherence=coherence,
        helpfulness=helpfulness, reference=reference,
    )  # fmt: skip
    return graded.with_grade()
