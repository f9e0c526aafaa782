"""Visual-RAG's judge: Podium's text-only prompt, the 0 / 0.5 / 1 scale, the no-answer mark.

A judge call is keyed ``answer/<query_id>/<setting>``; it is sent the question, every
annotator answer as an alternative (``JudgeRequest.ground_truth`` holds them as a JSON list)
and the prediction. The reply is read as the spec says: the score is the first number after
``Score:``, clamped to [0, 1]; a no-answer mark right after it marks no answer (an "I don't
know": scored 0 and counted in ``idk_rate``); a reply with no score leaves the answer unjudged.
The mark is Podium's ``NO_ANSWER`` (what its prompt asks for) or the paper's judge's wording,
``Score: 0 | No Answer``: on the score's line, in any case, its two words joined by a space,
``_`` or ``-`` (or none), after an optional ``|``, ``,``, ``;``, ``:``, ``/`` or dash and an
optional ``(`` or ``[``. "No answer" on a later line is the judge's prose, not the mark.
Grades: ``"no_answer"``, or the score written shortest (``"1"``, ``"0.5"``, ``"0"``).

The ``rules`` judge (offline, deterministic, NOT an LLM): an empty answer or one holding a
phrase of ``IDK_PHRASES`` -> no answer; after normalisation (case, accents, punctuation,
articles) an answer equal to a reference, or holding all of a reference's words with no other
content word than the question's -> 1; holding all of a reference's words and more, or some of
them -> 0.5; else 0.
"""

from __future__ import annotations

import json
import re
import unicodedata
from importlib import resources

from evaluator.judges.rubric import Rubric, hash_rule_set, quote, text_hash, verdict_field
from evaluator.records import JudgeRequest

NO_ANSWER = "no_answer"
PROMPT_VERSION = "visual-rag-judge-v1"
SYSTEM_PROMPT: str = (
    resources.files("evaluator.benchmarks.visual_rag")
    .joinpath("prompts/judge_v1.md")
    .read_text("utf-8")
)
USER_TEMPLATE = (
    "<question>{question}</question>\n"
    "<references>{references}</references>\n"
    "<answer>{answer}</answer>\n"
    "Score the answer."
)
RULES_VERSION = "visual-rag-1"
# fmt: off
IDK_PHRASES = (
    "i dont know", "i do not know", "dont know", "not sure", "unsure", "cannot tell",
    "cant tell", "cannot determine", "cant determine", "cannot be determined", "unable to",
    "no information", "not enough information", "cannot answer", "cant answer", "cannot see",
    "cant see", "not visible", "unknown",
)
STOPWORDS = frozenset((
    "a", "an", "the", "is", "are", "was", "were", "be", "of", "in", "on", "at", "to", "its",
    "it", "this", "that", "they", "their", "has", "have", "with", "and", "or", "colour",
    "color", "coloured", "colored", "mostly", "mainly", "usually",
))
# fmt: on
_SCORE = re.compile(
    r"Score:\s*([-+]?\d+(?:\.\d+)?)"
    r"(\s*NO_ANSWER|[ \t]*(?:[|,;:/\u2013\u2014-][ \t]*)?[(\[]?[ \t]*(?i:no[ \t_-]*answer)\b)?"
)
_WORD = re.compile(r"[^\W_]+")


def references(request: JudgeRequest) -> list[str]:
    """The annotator answers a request carries."""
    return list(json.loads(request.ground_truth))


def words(text: str) -> list[str]:
    """Lower-case, accent-free words without apostrophes, articles dropped."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    return [w for w in _WORD.findall(re.sub(r"['’`]", "", text)) if w not in ("a", "an", "the")]


def _has(haystack: list[str], phrase: str) -> bool:
    needle = phrase.split()
    return any(haystack[i : i + len(needle)] == needle for i in range(len(haystack)))


def rules_score(question: str, answers: list[str], answer: str) -> tuple[str, str]:
    """The rules judge's choice (``Score: ...``) and reason."""
    said = words(answer)
    if not said:
        return "Score: 0 NO_ANSWER", "empty answer"
    refusal = next((phrase for phrase in IDK_PHRASES if _has(said, phrase)), None)
    if refusal:
        return "Score: 0 NO_ANSWER", f"no answer: {refusal!r}"
    asked = set(words(question)) | STOPWORDS
    best = 0.0
    for reference in answers:
        wanted = words(reference)
        if said == wanted:
            return "Score: 1", f"equal to {reference!r}"
        content = [w for w in wanted if w not in STOPWORDS] or wanted
        found = [w for w in content if w in said]
        if content and len(found) == len(content):
            extra = [w for w in said if w not in asked and w not in wanted]
            if not extra:
                return "Score: 1", f"states {reference!r}"
            best = max(best, 0.5)
        elif found:
            best = max(best, 0.5)
    if best:
        return "Score: 0.5", "partly matches a reference, or adds features none gives"
    return "Score: 0", "matches no reference"


class VisualRAGRubric(Rubric):
    benchmark = "visual-rag"
    prompt_version = PROMPT_VERSION
    prompt_hash = text_hash(SYSTEM_PROMPT, USER_TEMPLATE)
    choices = ("Score: 1", "Score: 0.5", "Score: 0", "Score: 0 NO_ANSWER")
    rules_version = RULES_VERSION
    rules_prompt_version = f"visual-rag-rules-v{RULES_VERSION}"
    rules_hash = hash_rule_set(
        {"version": RULES_VERSION, "idk": IDK_PHRASES, "stopwords": sorted(STOPWORDS)}
    )
    off_menu = "off-menu reply: no 'Score: <number>'"

    def messages(self, request: JudgeRequest) -> list[dict[str, str]]:
        user = USER_TEMPLATE.format(
            question=quote(request.query),
            references=quote(json.dumps(references(request), ensure_ascii=False)),
            answer=quote(request.response),
        )
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def read(self, reply: str) -> str | None:
        match = _SCORE.search(verdict_field(reply) or reply)
        if match is None:
            return None
        if match.group(2):
            return NO_ANSWER
        return f"{min(1.0, max(0.0, float(match.group(1)))):g}"

    def rules(self, request: JudgeRequest) -> tuple[str, str]:
        return rules_score(request.query, references(request), request.response)


def grade_score(grade: str) -> float:
    """The score of a grade: 0 for no answer, else the number."""
    return 0.0 if grade == NO_ANSWER else float(grade)
