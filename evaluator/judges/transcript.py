"""Judge transcripts: every judge call kept with its key, and scores replayed from them.

``transcript.jsonl`` holds one line per judge call (in grading order)::

    {"key": "turn/<interaction_id>", "judge": "<judge id>", "prompt_version": str,
     "prompt_hash": str, "judged": [question, ground truth, truncated answer],
     "request": {...what the judge was sent...}, "reply": str or null, "error": str or null}

``request`` is the judge's own account of the call (the chat-completion body for an LLM judge;
the three texts for the rules judge); ``reply`` is its raw answer (an LLM's message text; the
rules judge's ``{"verdict", "reason"}``). A call answered from the judgment cache is written as
the original call was answered. What each benchmark's keys and ``judged`` hold:
``docs/evaluator.md`` (Writing a transcript).

``ReplayJudge`` re-grades from such a file with no model call: each request is looked up by
its key and its reply gives the grade the way the benchmark's rubric reads it. A line needs
only ``key`` and ``reply`` (an organiser may write a transcript by hand); what else it has is
checked: ``judged``, when present, must be this run's question, ground truth and answer; the
judge fields (``judge``, ``prompt_version``, ``prompt_hash``) come together, name one judge in
the whole file, on every line or on none, and a ``prompt_hash`` must be the rubric's (its
prompt's or its rules'): a line recorded for another prompt is refused. A file whose lines
name no judge replays as the judge ``replay:written``. Refused with ``file:line``: a line
that is not a JSON object, lacks ``key`` or ``reply``, repeats a key with another reply or
answer, or (``refuse_unasked``) has a key the split never asks; a key the run asks and the
file lacks is refused naming the key and what it asks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from evaluator.jsonl import numbered_lines, parse_line
from evaluator.judges.base import Judge
from evaluator.judges.rubric import Rubric
from evaluator.records import EvaluatorError, JudgeRequest, Judgment

TRANSCRIPT = "transcript.jsonl"  # its name in an output directory
NO_CALLS = ("replay:no-judge-calls", "", "")  # the identity replaying an empty transcript
WRITTEN = ("replay:written", "", "")  # replaying a transcript whose lines name no judge
IDENTITY = ("judge", "prompt_version", "prompt_hash")  # the judge fields, all or none


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
        self.calls, self.lines, identity = _read(self.path, rubric)
        # A run that needed no judge call has an empty transcript: its scores owe nothing to a
        # judge, and the report says so instead of naming one.
        if identity is None:
            identity = NO_CALLS if not self.calls else WRITTEN
        self.judge_id, self.prompt_version, self.prompt_hash = identity

    def refuse_unasked(self, unasked: Iterable[str]) -> None:
        """Refuse the file when a key of ``unasked`` (keys of its lines the split never asks,
        ``Grading.never_asked``) has a line, naming the first such line."""
        found = sorted((self.lines[key], key) for key in set(unasked) if key in self.lines)
        if found:
            line, key = found[0]
            raise EvaluatorError(
                f"{self.path}:{line}: key {key!r}: this split never asks such a judge call "
                "(a key of another split, or mistyped)"
            )

    async def judge(self, request: JudgeRequest) -> Judgment:
        call = self.calls.get(request.key)
        if call is None:
            raise EvaluatorError(
                f"{self.path}: no judge call for key {request.key!r} (it asks: "
                f"{_brief([request.query, request.ground_truth, request.response])})"
            )
        judged = call.get("judged")
        if judged is not None and judged != [request.query, request.ground_truth, request.response]:
            raise EvaluatorError(
                f"{self.path}:{self.lines[request.key]}: the call for key {request.key!r} "
                "judged another question, ground truth or answer than this run has"
            )
        reply = call["reply"]
        if reply is None:
            return self.unjudged(call.get("error") or "the original call had no reply")
        grade = self.rubric.read(reply)
        if grade is None:
            return self.unjudged(self.rubric.off_menu, raw=reply)
        return self.judgment(grade, raw=reply)


def _brief(texts: list[str]) -> str:
    return json.dumps([text if len(text) <= 200 else text[:200] + "..." for text in texts],
                      ensure_ascii=False)  # fmt: skip


def _read(
    path: Path, rubric: Rubric
) -> tuple[dict[str, dict[str, Any]], dict[str, int], tuple[str, str, str] | None]:
    """Each key's call, each key's first line, and the judge the lines name (None: none)."""
    calls: dict[str, dict[str, Any]] = {}
    lines: dict[str, int] = {}
    named: tuple[int, tuple[str, str, str]] | None = None  # the first line naming a judge
    unnamed: int | None = None  # the first line naming none
    for line, text in numbered_lines(path):
        where = f"{path}:{line}"
        call = parse_line(text, where)
        if not isinstance(call, dict):
            raise EvaluatorError(f"{where}: expected a JSON object, got {type(call).__name__}")
        _check_fields(call, where)
        identity = _identity(call, where, rubric)
        if identity is None:
            unnamed = unnamed or line
        elif named is None:
            named = (line, identity)
        elif identity != named[1]:
            raise EvaluatorError(
                f"{where}: judge {identity} differs from line {named[0]}'s {named[1]}: one "
                "transcript holds one judge's calls (this line was recorded for another "
                "judge or prompt)"
            )
        if named is not None and unnamed is not None:
            first, other = sorted((named[0], unnamed))
            raise EvaluatorError(
                f"{path}:{other}: line {first} names its judge ({', '.join(IDENTITY)}) and "
                f"this one does not, or the other way round: name it on every line "
                "(a recorded transcript) or on none (a written one)"
            )
        key = call["key"]
        same = (call.get("judged"), call["reply"])
        if key in calls and (calls[key].get("judged"), calls[key]["reply"]) != same:
            raise EvaluatorError(
                f"{where}: key {key!r} again (line {lines[key]}), with another reply or answer"
            )
        calls[key] = call
        lines.setdefault(key, line)
    return calls, lines, None if named is None else named[1]


def _check_fields(call: dict[str, Any], where: str) -> None:
    if not isinstance(call.get("key"), str) or not call["key"]:
        raise EvaluatorError(f"{where}: field 'key' missing or not a non-empty string")
    if "reply" not in call:
        raise EvaluatorError(f"{where}: field 'reply' missing (the judge's reply, or null)")
    if not (isinstance(call["reply"], str) or call["reply"] is None):
        raise EvaluatorError(f"{where}: field 'reply' must be a string or null")
    if "judged" in call and not (
        isinstance(call["judged"], list) and len(call["judged"]) == 3
        and all(isinstance(text, str) for text in call["judged"])
    ):  # fmt: skip
        raise EvaluatorError(
            f"{where}: field 'judged' must be [question, ground truth, answer] (three strings)"
        )
    if not (call.get("error") is None or isinstance(call["error"], str)):
        raise EvaluatorError(f"{where}: field 'error' must be a string or null")


def _identity(call: dict[str, Any], where: str, rubric: Rubric) -> tuple[str, str, str] | None:
    """The judge a line names (None: it names none)."""
    given = [field for field in IDENTITY if field in call]
    if not given:
        return None
    if len(given) < len(IDENTITY) or not all(isinstance(call[f], str) for f in IDENTITY):
        raise EvaluatorError(
            f"{where}: fields {', '.join(IDENTITY)} go together, as strings "
            f"(this line has {', '.join(given)})"
        )
    judge, version, prompt_hash = (call[field] for field in IDENTITY)
    if prompt_hash not in (rubric.prompt_hash, rubric.rules_hash):
        raise EvaluatorError(
            f"{where}: field 'prompt_hash': recorded for another prompt ({version}, "
            f"{prompt_hash[:12]}...), not {rubric.benchmark}'s ({rubric.prompt_version}, "
            f"{rubric.prompt_hash[:12]}...; its rules {rubric.rules_hash[:12]}...): its replies "
            "may not read as they were read"
        )
    return judge, version, prompt_hash
