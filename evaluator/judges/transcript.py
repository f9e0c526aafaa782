"""Judge transcripts: every judge call kept with its key, and scores replayed from them.

``transcript.jsonl`` holds one line per judged item (in grading order)::

    {"key": "turn/<interaction_id>", "judge": "<judge id>", "prompt_version": str,
     "prompt_hash": str, "judged": [question, ground truth, truncated answer],
     "request": {...what the judge was sent...}, "reply": str or null, "error": str or null}

``request`` is the judge's own account of the call (the chat-completion body for an LLM judge;
the three texts for the rules judge); ``reply`` is its raw answer (an LLM's message text; the
rules judge's ``{"verdict", "reason"}``). A call answered from the judgment cache is written as
the original call was answered. ``ReplayJudge`` re-grades from such a file with no model call:
each request is looked up by its key, must be for the same question, ground truth and answer,
and its reply gives the grade the way the original judge read it (the benchmark's rubric). A
key the file lacks, or a line for another answer, is an ``EvaluatorError`` naming it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from evaluator.jsonl import json_objects
from evaluator.judges.base import Judge
from evaluator.judges.rubric import Rubric
from evaluator.records import EvaluatorError, JudgeRequest, Judgment

TRANSCRIPT = "transcript.jsonl"  # its name in an output directory
NO_CALLS = ("replay:no-judge-calls", "", "")  # the identity replaying an empty transcript


class TranscriptWriter:
    """Appends the judge calls of a grading to ``transcript.jsonl``."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.lines = 0

    def write(
        self, judge: Judge, requests: Sequence[JudgeRequest], judgments: Sequence[Judgment]
    ) -> None:
        for request, judgment in zip(requests, judgments, strict=True):
            if not request.key:
                raise EvaluatorError("a judge request without a key cannot be transcribed")
            line = {
                "key": request.key,
                "judge": judgment.judge_id,
                "prompt_version": judgment.prompt_version,
                "prompt_hash": judgment.prompt_hash,
                "judged": [request.query, request.ground_truth, request.response],
                "request": judge.transcript_request(request),
                "reply": judgment.raw,
                "error": judgment.error,
            }
            self.stream.write(json.dumps(line, ensure_ascii=False) + "\n")
            self.lines += 1


class ReplayJudge(Judge):
    """The judge of a transcript, answering from it: same identity, zero model calls."""

    concurrency = 1

    def __init__(self, path: str | Path, rubric: Rubric) -> None:
        self.path = Path(path)
        self.rubric = rubric
        self.calls = _read(self.path)
        judges = {(c["judge"], c["prompt_version"], c["prompt_hash"]) for c in self.calls.values()}
        if len(judges) > 1:
            raise EvaluatorError(f"{self.path}: more than one judge in one transcript: {judges}")
        # A run that needed no judge call has an empty transcript: its scores owe nothing to a
        # judge, and the report says so instead of naming one.
        ((self.judge_id, self.prompt_version, self.prompt_hash),) = judges or {NO_CALLS}

    async def judge(self, request: JudgeRequest) -> Judgment:
        call = self.calls.get(request.key)
        if call is None:
            raise EvaluatorError(f"{self.path}: no judge call for key {request.key!r}")
        if call["judged"] != [request.query, request.ground_truth, request.response]:
            raise EvaluatorError(
                f"{self.path}: the call for key {request.key!r} judged another question, "
                "ground truth or answer than this run has"
            )
        reply = call["reply"]
        if reply is None:
            return self.unjudged(call.get("error") or "the original call had no reply")
        grade = self.rubric.read(reply)
        if grade is None:
            return self.unjudged(self.rubric.off_menu, raw=reply)
        return self.judgment(grade, raw=reply)


def _read(path: Path) -> dict[str, dict[str, Any]]:
    calls: dict[str, dict[str, Any]] = {}
    for where, call in json_objects(path):
        for field, kind in _FIELDS.items():
            if not isinstance(call.get(field), kind):
                raise EvaluatorError(f"{where}: field {field!r} missing or not {kind.__name__}")
        if not (isinstance(call.get("reply"), str) or call.get("reply") is None):
            raise EvaluatorError(f"{where}: field 'reply' must be a string or null")
        if call["key"] in calls and calls[call["key"]]["judged"] != call["judged"]:
            raise EvaluatorError(f"{where}: key {call['key']!r} twice, for different answers")
        calls[call["key"]] = call
    return calls


_FIELDS: dict[str, type] = {
    "key": str,
    "judge": str,
    "prompt_version": str,
    "prompt_hash": str,
    "judged": list,
}
