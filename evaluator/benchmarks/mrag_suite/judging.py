"""MRAG-Suite's judge: three kinds of call on one rubric, with Podium's own prompts.

What a request asks is the tag its ``query`` starts with (so the judgment cache never mixes
kinds): ``[extract]`` (the claims of ``response``: an answer's or the reference's long answer),
``[check]`` (labels for the claims in ``response``, a JSON list of at most five triplets,
against the one reference text in ``ground_truth``), ``[accuracy]`` (the short answer in
``response`` against the reference in ``ground_truth``). Every call is at temperature 0 (the
judges' own setting). A grade is the reply read as data: ``correct`` / ``incorrect``, or the
canonical JSON ``{"claims": [...]}`` / ``{"labels": [...]}``.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from evaluator.benchmarks.mrag_suite.answers import exact_match
from evaluator.benchmarks.mrag_suite.claims import (
    MAX_CLAIMS,
    Claim,
    claim_text,
    json_reply,
    read_claims,
    read_labels,
    rules_claims,
    rules_label,
)
from evaluator.benchmarks.mrag_suite.ragchecker import LABELS
from evaluator.judges.rubric import Rubric, hash_rule_set, quote, text_hash
from evaluator.records import JudgeRequest

EXTRACT, CHECK, ACCURACY = "[extract] ", "[check] ", "[accuracy] "
CORRECT, INCORRECT = "correct", "incorrect"
PROMPT_VERSION = "mrag-suite-v1"
RULES_VERSION = "mrag-suite-1"


def _prompt(name: str) -> str:
    path = resources.files("evaluator.benchmarks.mrag_suite").joinpath(f"prompts/{name}_v1.md")
    return path.read_text("utf-8")


PROMPTS = {EXTRACT: _prompt("extract"), CHECK: _prompt("check"), ACCURACY: _prompt("accuracy")}
TEMPLATES = {
    EXTRACT: "<question>{query}</question>\n<text>{response}</text>\nList the text's claims.",
    CHECK: "<reference>{ground_truth}</reference>\n<claims>\n{response}\n</claims>\n"
    "Label each of the {count} claims.",
    ACCURACY: "<question>{query}</question>\n<reference>{ground_truth}</reference>\n"
    "<answer>{response}</answer>\nIs the answer correct?",
}
_CLAIMS_SCHEMA = {
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            "maxItems": MAX_CLAIMS,
            "items": {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3},
        }
    },
    "required": ["claims"],
    "additionalProperties": False,
}
_LABELS_SCHEMA = {
    "type": "object",
    "properties": {"labels": {"type": "array", "items": {"enum": list(LABELS)}}},
    "required": ["labels"],
    "additionalProperties": False,
}


def kind(request: JudgeRequest) -> str:
    """The request's kind: its tag (``EXTRACT``, ``CHECK`` or ``ACCURACY``)."""
    return next((tag for tag in PROMPTS if request.query.startswith(tag)), ACCURACY)


def check_claims(request: JudgeRequest) -> list[Claim]:
    """The claims a ``[check]`` request carries (Podium wrote them: JSON triplets)."""
    return [(s, p, o) for s, p, o in json.loads(request.response)]


def claims_grade(claims: list[Claim]) -> str:
    return json.dumps({"claims": [list(claim) for claim in claims]}, ensure_ascii=False)


def labels_grade(labels: list[str]) -> str:
    return json.dumps({"labels": labels})


class MragRubric(Rubric):
    benchmark = "mrag-suite"
    prompt_version = PROMPT_VERSION
    prompt_hash = text_hash(*PROMPTS.values(), *TEMPLATES.values())
    choices = (CORRECT, INCORRECT)
    rules_version = RULES_VERSION
    rules_prompt_version = f"mrag-suite-rules-v{RULES_VERSION}"
    rules_hash = hash_rule_set({"version": RULES_VERSION, "max_claims": MAX_CLAIMS})
    off_menu = (
        "the judge's reply is not the JSON its prompt asks for ({claims}, {labels} or a verdict)"
    )

    def messages(self, request: JudgeRequest) -> list[dict[str, str]]:
        tag = kind(request)
        response = request.response
        count = 0
        if tag == CHECK:
            claims = check_claims(request)
            count = len(claims)
            response = "\n".join(f"{n}. {claim_text(c)}" for n, c in enumerate(claims, 1))
        user = TEMPLATES[tag].format(
            query=quote(request.query.removeprefix(tag)),
            ground_truth=quote(request.ground_truth),
            response=quote(response),
            count=count,
        )
        return [{"role": "system", "content": PROMPTS[tag]}, {"role": "user", "content": user}]

    def reply_schema(self, request: JudgeRequest) -> dict[str, Any] | None:
        return {EXTRACT: _CLAIMS_SCHEMA, CHECK: _LABELS_SCHEMA}.get(kind(request))

    def read(self, reply: str) -> str | None:
        word = reply.strip().strip('"').lower()
        if word in self.choices:
            return word
        data = json_reply(reply)
        if data is None:
            return None
        verdict = data.get("verdict")
        if isinstance(verdict, str) and verdict.strip().lower() in self.choices:
            return verdict.strip().lower()
        claims = read_claims(data)
        if claims is not None:
            return claims_grade(claims[:MAX_CLAIMS])
        labels = read_labels(data)
        return None if labels is None else labels_grade(labels)

    def rules(self, request: JudgeRequest) -> tuple[str, str]:
        tag = kind(request)
        if tag == EXTRACT:
            claims = rules_claims(request.response)
            return claims_grade(claims), f"{len(claims)} sentences"
        if tag == CHECK:
            labels = [rules_label(c, request.ground_truth) for c in check_claims(request)]
            return labels_grade(labels), "entailed: every word of the claim in the reference"
        same = exact_match(request.response, request.ground_truth)
        return (CORRECT, "exact match") if same else (INCORRECT, "no exact match")
