"""The toy's judge: is the answer the reference capital? The ``rules`` judge decides by exact
match after normalisation (case, accents, punctuation, a leading "the"); an LLM judge is asked
the same. An empty answer or "I don't know" is ``idk``, decided before any judge call."""

from __future__ import annotations

import re
import unicodedata

from evaluator.judges.rubric import Rubric, hash_rule_set, quote, text_hash, verdict_field
from evaluator.records import JudgeRequest

CORRECT, WRONG, IDK = "correct", "wrong", "idk"
IDK_PHRASES = ("i dont know", "i do not know", "not sure", "unknown")
SYSTEM = "Say whether the answer names the reference capital. Reply correct or wrong."
USER = "<question>{q}</question>\n<reference>{r}</reference>\n<answer>{a}</answer>"
RULES_VERSION = "toy-1"  # the rules judge is "rules@toy-1"


def normalised(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    words = re.findall(r"[^\W_]+", text.replace("'", ""))
    return " ".join(words[1:] if words[:1] == ["the"] else words)


def abstains(answer: str) -> bool:
    said = normalised(answer)
    return not said or any(phrase in said for phrase in IDK_PHRASES)


class ToyRubric(Rubric):
    benchmark = "toy"
    prompt_version = "toy-judge-v1"
    prompt_hash = text_hash(SYSTEM, USER)
    choices = (CORRECT, WRONG)
    rules_version = RULES_VERSION
    rules_prompt_version = "toy-rules-v1"
    rules_hash = hash_rule_set({"version": RULES_VERSION, "idk": IDK_PHRASES})
    off_menu = "off-menu reply: neither 'correct' nor 'wrong'"

    def messages(self, request: JudgeRequest) -> list[dict[str, str]]:
        user = USER.format(
            q=quote(request.query), r=quote(request.ground_truth), a=quote(request.response)
        )
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]

    def read(self, reply: str) -> str | None:
        word = (verdict_field(reply) or reply).strip().casefold()
        return word if word in self.choices else None

    def rules(self, request: JudgeRequest) -> tuple[str, str]:
        if normalised(request.response) == normalised(request.ground_truth):
            return CORRECT, f"equal to {request.ground_truth!r}"
        return WRONG, f"not {request.ground_truth!r}"
