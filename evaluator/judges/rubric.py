"""A rubric: what one benchmark asks of its judge, so every judge kind serves every benchmark.

A benchmark gives its judges a rubric (``Benchmark.rubric``): the prompt (chat messages for one
request, with its version and hash), the words a structured judge may answer (``choices``),
how a reply is read into a grade (``read``: ``None`` for an off-menu reply, which leaves the
item unjudged), and the deterministic rules behind the offline ``rules`` judge. Grades are the
benchmark's own strings (CRAG-MM: ``correct`` / ``hallucinated``; Visual-RAG: ``1``, ``0.5``,
``0``, ``no_answer``); ``UNJUDGED`` is the one grade every benchmark shares.

The ``rules`` judge's reply is the JSON an LLM's structured reply has
(``{"verdict": <one of choices>, "reason": ...}``), so ``read`` decides every judge kind's
grade, and a transcript of any judge replays through the same ``read``.
"""

from __future__ import annotations

import hashlib
import html
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from evaluator.records import JudgeRequest

UNJUDGED = "unjudged"  # the grade of an item no judge decided (never counted as wrong)


def quote(text: str) -> str:
    """Escape an untrusted field (an agent's answer) so that no tag or delimiter inside it is
    taken as the prompt's own."""
    return html.escape(text, quote=False)


def text_hash(*parts: str) -> str:
    """sha256 of the parts, NUL-separated: a prompt's or a rule set's hash."""
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def hash_rule_set(rule_set: Any) -> str:
    """The hash of a rule set (everything that changes a rules judge's verdict)."""
    return hashlib.sha256(json.dumps(rule_set, sort_keys=True).encode()).hexdigest()


class Rubric(ABC):
    """The judge's side of one benchmark."""

    benchmark: str  # the benchmark's name, for messages
    prompt_version: str
    prompt_hash: str
    choices: tuple[str, ...]  # what a structured-output judge may answer
    rules_version: str  # the rules judge's id is "rules@<rules_version>"
    rules_prompt_version: str
    rules_hash: str
    off_menu: str  # the reason an unreadable reply leaves an item unjudged
    # True: replies are free text read by the benchmark (M2RAG's statements and verdict lists),
    # so an LLM judge sends no structured-output field constraining them to ``choices``
    free_text: ClassVar[bool] = False

    @abstractmethod
    def messages(self, request: JudgeRequest) -> Sequence[Mapping[str, object]]:
        """The chat messages an LLM judge is sent for ``request`` (a message's content is a
        string, or a list of parts: text and ``image_url`` data URLs for a vision model)."""

    @abstractmethod
    def read(self, reply: str) -> str | None:
        """The grade in a judge's reply (its text, or a JSON object whose ``verdict`` is one of
        ``choices``), or None when the reply offers none."""

    @abstractmethod
    def rules(self, request: JudgeRequest) -> tuple[str, str]:
        """The rules judge's decision: one of ``choices`` and the reason."""

    def reply_schema(self, request: JudgeRequest) -> dict[str, Any] | None:
        """The JSON schema a structured judge's reply to ``request`` must follow, for requests
        whose answer is not one of ``choices`` (MRAG-Suite's claim extraction and checking:
        lists); None (the default): a verdict among ``choices``."""
        return None

    def menu(self) -> tuple[str, ...]:
        """The grades a judge's ``choices`` read as, in the choices' order, each once: what a
        person auditing the judge may answer (``Benchmark.verdict_menu`` adds the benchmark's
        own); empty for a free-text rubric, whose grades are not a menu."""
        if self.free_text:
            return ()
        found = (self.read(choice) for choice in self.choices)
        return tuple(dict.fromkeys(grade for grade in found if grade is not None))

    def grades(self) -> frozenset[str]:
        """Every grade ``read`` can return, plus ``UNJUDGED``."""
        found = {self.read(choice) for choice in self.choices}
        return frozenset(grade for grade in found if grade is not None) | {UNJUDGED}


def verdict_field(reply: str) -> str | None:
    """A structured reply's ``verdict`` string; None when the reply is not such JSON."""
    try:
        data = json.loads(reply.strip())
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("verdict"), str):
        return str(data["verdict"])
    return None
