"""Podium's CRAG-MM judge prompt: versioned, hashed, with the agent's answer quoted.

The rule list follows the CRAG-MM paper's grading rules; the worked examples are Podium's own.
The agent's answer is untrusted: it is placed between ``<answer>`` tags with ``<``, ``>`` and
``&`` escaped, so it can neither close the block nor plant a verdict outside it.
"""

from __future__ import annotations

import json
import re
from importlib import resources

from evaluator.benchmarks.crag_mm.records import Verdict
from evaluator.benchmarks.crag_mm.rules import RULE_SET, RULES_VERSION, grade
from evaluator.judges.rubric import Rubric, hash_rule_set, quote, text_hash
from evaluator.records import JudgeRequest

PROMPT_VERSION = "crag-mm-judge-v1"

# The verdict words offered to the model, and what each means.
VERDICT_WORDS: dict[str, Verdict] = {"CORRECT": Verdict.CORRECT, "WRONG": Verdict.HALLUCINATED}

SYSTEM_PROMPT: str = (
    resources.files("evaluator.benchmarks.crag_mm")
    .joinpath("prompts/judge_v1.md")
    .read_text("utf-8")
)

USER_TEMPLATE = (
    "<question>{query}</question>\n"
    "<ground_truth>{ground_truth}</ground_truth>\n"
    "<answer>{response}</answer>\n"
    "Is the answer CORRECT or WRONG?"
)

PROMPT_HASH: str = text_hash(SYSTEM_PROMPT, USER_TEMPLATE)


def render_messages(request: JudgeRequest) -> list[dict[str, str]]:
    """The chat messages for one turn."""
    user = USER_TEMPLATE.format(
        query=quote(request.query),
        ground_truth=quote(request.ground_truth),
        response=quote(request.response),
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


_VERDICT_RE = re.compile(r"\b(" + "|".join(VERDICT_WORDS) + r")\b")


def parse_verdict(text: str) -> str | None:
    """The verdict word in a judge's reply, or None when it offers none of ours.

    A JSON object's ``verdict`` field is read when the reply is JSON; otherwise a reply that
    is exactly one verdict word (any case) counts, else the LAST upper-case verdict word wins,
    so that prose quoting the answer ("it says CORRECT but is WRONG") ends on the decision.
    """
    stripped = text.strip()
    try:
        data = json.loads(stripped)
    except ValueError:
        data = None
    if isinstance(data, dict):
        value = data.get("verdict")
        return value.upper() if isinstance(value, str) and value.upper() in VERDICT_WORDS else None
    bare = stripped.strip(" .!\"'`*").upper()
    if bare in VERDICT_WORDS:
        return bare
    found = _VERDICT_RE.findall(stripped)
    return found[-1] if found else None


class CragMMRubric(Rubric):
    """CRAG-MM's judge: CORRECT or WRONG (hallucinated), the paper's rules as the rules judge."""

    benchmark = "crag-mm"
    prompt_version = PROMPT_VERSION
    prompt_hash = PROMPT_HASH
    choices = tuple(VERDICT_WORDS)
    rules_version = RULES_VERSION
    rules_prompt_version = f"crag-mm-rules-v{RULES_VERSION}"
    rules_hash = hash_rule_set(RULE_SET)
    off_menu = "off-menu reply: no CORRECT or WRONG verdict"

    def messages(self, request: JudgeRequest) -> list[dict[str, str]]:
        return render_messages(request)

    def read(self, reply: str) -> str | None:
        word = parse_verdict(reply)
        return None if word is None else VERDICT_WORDS[word].value

    def rules(self, request: JudgeRequest) -> tuple[str, str]:
        correct, reason = grade(request.query, request.ground_truth, request.response)
        return ("CORRECT" if correct else "WRONG"), reason
