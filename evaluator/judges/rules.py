"""The ``rules`` judge: a benchmark's deterministic rules (its rubric's ``rules``), offline.

Its id says "rules" (``rules@<version>``) so no report mistakes it for an LLM. Its reply is the
JSON an LLM's structured reply has, ``{"verdict": <a choice>, "reason": ...}``, read by the
rubric like any other judge's, so a transcript of it replays alike.
"""

from __future__ import annotations

import json

from evaluator.judges.base import Judge
from evaluator.judges.rubric import Rubric
from evaluator.records import EvaluatorError, JudgeRequest, Judgment


class RulesJudge(Judge):
    concurrency = 1

    def __init__(self, rubric: Rubric) -> None:
        self.rubric = rubric
        self.judge_id = f"rules@{rubric.rules_version}"
        self.prompt_version = rubric.rules_prompt_version
        self.prompt_hash = rubric.rules_hash

    async def judge(self, request: JudgeRequest) -> Judgment:
        choice, reason = self.rubric.rules(request)
        raw = json.dumps({"verdict": choice, "reason": reason})
        grade = self.rubric.read(raw)
        if grade is None:
            raise EvaluatorError(f"{self.judge_id}: the rules chose {choice!r}, not a choice")
        return self.judgment(grade, raw=raw)
