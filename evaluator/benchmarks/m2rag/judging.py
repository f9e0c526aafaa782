"""M2RAG's judge: one rubric for its eight prompts, and the text / vision routing.

Every judge call is a ``JudgeRequest`` whose ``ground_truth`` is a JSON object naming the
prompt (``{"prompt": "fluency", ...}`` and what that prompt needs: the contexts, the
statements, or for an image prompt the image's sha256, the agent's caption and the text above
and below it); ``query`` is the user's query and ``response`` the answer's text. The image
itself is sent as a data URL, read from the file registered under its sha256
(``register_image``), so the cache and the transcript key on the image's content, never on
where the split lies, and the transcript keeps the hash, not the bytes.

``read`` keeps a reply's text (a structured reply's ``verdict``); the benchmark reads it per
prompt (``grading.read_reply``), so an unreadable reply leaves its answer unjudged with the
reason, never a 0 (official parsing excepted: a 0-10 reply with no digit reads 0 there).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evaluator.benchmarks.m2rag.prompts import IMAGE_PROMPTS, LIST_PROMPTS, SCORE_PROMPTS
from evaluator.judges.base import Judge
from evaluator.judges.rubric import Rubric, hash_rule_set, quote, text_hash, verdict_field
from evaluator.records import EvaluatorError, JudgeRequest, Judgment

PROMPT_VERSION = "m2rag-judge-v1"
RULES_VERSION = "m2rag-1"
_IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
                ".webp": "image/webp", ".gif": "image/gif"}  # fmt: skip
_DATA_URL = re.compile(r"data:image/[a-z]+;base64,[A-Za-z0-9+/=]+")
_WORD = re.compile(r"[^\W_]{3,}")
IMAGE_FILES: dict[str, Path] = {}  # sha256 -> a file with that content (register_image)


def register_image(digest: str, path: Path) -> None:
    IMAGE_FILES[digest] = path


def call(request: JudgeRequest) -> dict[str, Any]:
    """The prompt and inputs a request carries."""
    data = json.loads(request.ground_truth)
    if not isinstance(data, dict) or data.get("prompt") not in (*SCORE_PROMPTS, *LIST_PROMPTS):
        raise EvaluatorError(f"m2rag judge request {request.key!r}: no known prompt")
    return data


def data_url(digest: str) -> str:
    path = IMAGE_FILES.get(digest)
    if path is None:
        raise EvaluatorError(f"m2rag judge: no image file registered for sha256 {digest}")
    kind = _IMAGE_TYPES.get(path.suffix.lower(), "image/png")
    return f"data:{kind};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _numbered(texts: Sequence[str]) -> str:
    return "\n".join(f"<{i}>{quote(text)}</{i}>" for i, text in enumerate(texts, start=1))


def _user(request: JudgeRequest, data: Mapping[str, Any]) -> str:
    head = f"<query>{quote(request.query)}</query>\n"
    prompt = data["prompt"]
    if prompt in IMAGE_PROMPTS:
        return (f"{head}<above>{quote(data['above'])}</above>\n<caption>{quote(data['caption'])}"
                f"</caption>\n<below>{quote(data['below'])}</below>")  # fmt: skip
    answer = f"<answer>{quote(request.response)}</answer>"
    if prompt == "verdicts":
        return (f"<contexts>\n{_numbered(data['contexts'])}\n</contexts>\n"
                f"<statements>\n{_numbered(data['statements'])}\n</statements>")  # fmt: skip
    if prompt == "context_precision":
        return f"{head}{answer}\n<contexts>\n{_numbered(data['contexts'])}\n</contexts>"
    return f"{head}{answer}"


def _words(text: str) -> set[str]:
    return {word.casefold() for word in _WORD.findall(text)}


def rules_reply(request: JudgeRequest) -> tuple[str, str]:
    """The rules judge (offline, deterministic, NOT an LLM): word overlaps standing in for
    each prompt; its 0-10 replies are the score alone, its lists the JSON the prompts ask."""
    data = call(request)
    prompt, answer = data["prompt"], _words(request.response)
    if prompt == "fluency":
        sentences = [s for s in re.split(r"[.!?]\s", request.response) if len(s.split()) >= 3]
        return ("10" if sentences else "0"), "a sentence of three words or more"
    if prompt == "relevance":
        asked = _words(request.query)
        share = len(asked & answer) / len(asked) if asked else 1.0
        return str(round(10 * share)), "share of the query's words in the answer"
    if prompt in IMAGE_PROMPTS:
        around = _words(f"{data['above']} {data['below']}")
        caption = _words(data["caption"])
        if prompt == "helpfulness":
            return str(data["stored_score"]), "the image's stored relevance score"
        share = len(caption & around) / len(caption) if caption else 0.5
        return str(round(10 * share)), "share of the caption's words in the text around it"
    if prompt == "statements":
        found = [s.strip() for s in re.split(r"(?<=[.!?])\s+", request.response) if _words(s)]
        return json.dumps({"statements": found}), "the answer's sentences"
    texts = data["statements"] if prompt == "verdicts" else data["contexts"]
    against = set().union(*map(_words, data["contexts"])) if prompt == "verdicts" else answer
    verdicts = [int(len(_words(t) & against) >= max(1, len(_words(t)) // 2)) for t in texts]
    return json.dumps({"verdicts": verdicts}), "half of the words found"


class M2RAGRubric(Rubric):
    benchmark = "m2rag"
    prompt_version = PROMPT_VERSION
    prompt_hash = text_hash(*SCORE_PROMPTS.values(), *LIST_PROMPTS.values())
    choices = tuple(str(score) for score in range(11))
    rules_version = RULES_VERSION
    rules_prompt_version = f"m2rag-rules-v{RULES_VERSION}"
    rules_hash = hash_rule_set({"version": RULES_VERSION, "word": _WORD.pattern})
    off_menu = "empty reply"
    free_text = True

    def messages(self, request: JudgeRequest) -> list[dict[str, object]]:
        data = call(request)
        prompt = data["prompt"]
        system = SCORE_PROMPTS.get(prompt) or LIST_PROMPTS[prompt]
        user: object = _user(request, data)
        if prompt in IMAGE_PROMPTS:
            image = {"type": "image_url", "image_url": {"url": data_url(data["image"])}}
            user = [{"type": "text", "text": user}, image]
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def read(self, reply: str) -> str | None:
        return (verdict_field(reply) or reply).strip() or None

    def rules(self, request: JudgeRequest) -> tuple[str, str]:
        return rules_reply(request)


def is_image_prompt(request: JudgeRequest) -> bool:
    return bool(call(request)["prompt"] in IMAGE_PROMPTS)


class RoutedJudge(Judge):
    """The text judge for the text prompts, the vision judge for the image prompts; one
    identity (both ids) so a transcript replays as one judge."""

    def __init__(self, text: Judge, vision: Judge | None = None) -> None:
        self.text, self.vision = text, vision or text
        same = self.vision is text
        self.judge_id = text.judge_id if same else f"{text.judge_id}+vision:{self.vision.judge_id}"
        self.prompt_version, self.prompt_hash = text.prompt_version, text.prompt_hash
        self.concurrency = text.concurrency + (0 if same else self.vision.concurrency)

    def _for(self, request: JudgeRequest) -> Judge:
        return self.vision if is_image_prompt(request) else self.text

    async def judge(self, request: JudgeRequest) -> Judgment:
        judgment = await self._for(request).judge(request)
        return self.judgment(judgment.verdict, error=judgment.error, raw=judgment.raw)

    def verdict_settings(self) -> dict[str, Any]:
        return {"text": self.text.verdict_settings(), "vision": self.vision.verdict_settings()}

    def transcript_request(self, request: JudgeRequest) -> dict[str, Any]:
        return elide_images(self._for(request).transcript_request(request))

    async def aclose(self) -> None:
        await self.text.aclose()
        if self.vision is not self.text:
            await self.vision.aclose()


def elide_images(body: dict[str, Any]) -> dict[str, Any]:
    """A request body with each data URL replaced by ``data:...;sha256`` (a transcript keeps
    the image's hash, which its judged fields already name, not its bytes)."""
    text = _DATA_URL.sub("data:image;elided", json.dumps(body, ensure_ascii=False))
    return dict(json.loads(text))
