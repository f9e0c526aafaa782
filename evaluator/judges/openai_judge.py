"""A judge behind any OpenAI-compatible chat-completions endpoint (vLLM, OpenAI, ...).

Retries: the openai client's own, exponential backoff with jitter, on retryable failures only
(connection errors, time-outs, 408/409/429 and 5xx; never 400/401/403/404/422), honouring
``Retry-After``. Each attempt is bounded by ``attempt_timeout_s`` and the whole request,
retries included, by ``total_timeout_s``. When they are exhausted the turn is UNJUDGED.

Structured output (``structured``):

- ``vllm``: ``{"structured_outputs": {"choice": [the rubric's choices]}}`` (CRAG-MM:
  ``["CORRECT", "WRONG"]``), current vLLM's field (the older ``guided_choice`` was removed in
  vLLM 0.12);
- ``openai``: ``response_format`` with a JSON schema whose ``verdict`` is one of the choices
  (OpenAI, and vLLM too);
- ``auto``: ``openai``'s form, falling back to plain text for the rest of this judge's life
  the first time the server rejects it (400/422);
- ``none``: plain text.

Whatever the mode, the reply is read by the rubric (``Rubric.read``), so a server that ignores
the structured-output field still works: each protocol's prompt asks for its answer in words.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Literal

import openai

from evaluator.judges.base import Judge
from evaluator.judges.rubric import Rubric
from evaluator.records import EvaluatorError, JudgeRequest, Judgment

log = logging.getLogger(__name__)

StructuredMode = Literal["auto", "vllm", "openai", "none"]
STRUCTURED_MODES: tuple[str, ...] = ("auto", "vllm", "openai", "none")


def verdict_schema(choices: tuple[str, ...]) -> dict[str, Any]:
    """The verdict as a JSON schema (OpenAI's response_format and vLLM both accept it)."""
    return {
        "name": "verdict",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"verdict": {"type": "string", "enum": list(choices)}},
            "required": ["verdict"],
            "additionalProperties": False,
        },
    }


def reply_text(reply: object) -> str:
    """The message text of a chat-completion reply; ValueError naming what is malformed."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError(f"malformed reply: field choices: {str(reply)[:200]!r}")
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if content is not None and not isinstance(content, str):
        raise ValueError(f"malformed reply: field choices[0].message.content: {content!r:.200}")
    return content or ""


class OpenAIJudge(Judge):
    def __init__(
        self,
        *,
        rubric: Rubric,
        base_url: str | None,
        model: str,
        api_key: str,
        revision: str = "unspecified",
        concurrency: int = 16,
        max_retries: int = 5,
        attempt_timeout_s: float = 60.0,
        total_timeout_s: float = 300.0,
        structured: StructuredMode = "auto",
        seed: int = 0,
    ) -> None:
        if structured not in STRUCTURED_MODES:
            raise EvaluatorError(
                f"openai judge: option structured: {structured!r} is not one of {STRUCTURED_MODES}"
            )
        for name, value in (
            ("concurrency", concurrency),
            ("attempt_timeout_s", attempt_timeout_s),
            ("total_timeout_s", total_timeout_s),
        ):
            if value <= 0:
                raise EvaluatorError(f"openai judge: option {name}: must be > 0, got {value}")
        if max_retries < 0:
            raise EvaluatorError(
                f"openai judge: option max_retries: must be >= 0, got {max_retries}"
            )
        self.judge_id = f"openai:{model}@{revision}"
        self.rubric = rubric
        self.prompt_version = rubric.prompt_version
        self.prompt_hash = rubric.prompt_hash
        self.model = model
        self.seed = seed
        self.concurrency = concurrency
        # a free-text rubric's replies are not one of its choices: never constrained
        self.structured: StructuredMode = "none" if rubric.free_text else structured
        self.total_timeout_s = total_timeout_s
        self._client_options: dict[str, Any] = dict(
            base_url=base_url, api_key=api_key, max_retries=max_retries, timeout=attempt_timeout_s
        )
        # The client and semaphore belong to one event loop; made again for a new loop.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: openai.AsyncOpenAI | None = None
        self._semaphore: asyncio.Semaphore | None = None

    def probe(self, timeout_s: float = 5.0) -> str | None:
        """Why the endpoint cannot judge now (it does not answer, or does not serve the model);
        None when it lists the model. One request, no retry."""
        options = {**self._client_options, "max_retries": 0, "timeout": timeout_s}
        try:
            with openai.OpenAI(**options) as client:
                served = [model.id for model in client.models.list()]
        except openai.OpenAIError as exc:
            return f"the judge endpoint does not answer ({type(exc).__name__}: {exc})"
        if self.model not in served:
            offered = ", ".join(served[:10]) or "none"
            return f"the judge endpoint does not serve {self.model!r} (it serves {offered})"
        return None

    def verdict_settings(self) -> dict[str, Any]:
        return {"temperature": 0, "seed": self.seed}

    async def _bind_loop(self) -> tuple[openai.AsyncOpenAI, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._client is None or self._semaphore is None:
            # A client left by an earlier loop cannot be closed from this one; judge_all and
            # other owners of a loop call aclose() before their loop ends.
            self._client = openai.AsyncOpenAI(**self._client_options)
            self._semaphore = asyncio.Semaphore(self.concurrency)
            self._loop = loop
        return self._client, self._semaphore

    def transcript_request(self, request: JudgeRequest) -> dict[str, Any]:
        return self._body(request, self.structured)

    def _body(self, request: JudgeRequest, mode: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": self.rubric.messages(request),
            "temperature": 0,
            "seed": self.seed,
        }
        if mode == "vllm":
            body["structured_outputs"] = {"choice": list(self.rubric.choices)}
        elif mode in ("openai", "auto"):
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": verdict_schema(self.rubric.choices),
            }
        return body

    async def _complete(self, client: openai.AsyncOpenAI, request: JudgeRequest) -> str:
        mode = self.structured
        try:
            # The client's plain POST (its documented way to send fields it does not type, such
            # as vLLM's) keeps its retries and time-outs and skips the typed-parameter transform
            # and the typed reply, which together measured as over half of its CPU per turn.
            reply = await client.post(
                "/chat/completions", body=self._body(request, mode), cast_to=object
            )
        except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
            if mode != "auto":
                raise
            if self.structured == "auto":
                log.warning("%s: structured output rejected (%s); using text", self.judge_id, exc)
                self.structured = "none"
            return await self._complete(client, request)
        return reply_text(reply)

    async def judge(self, request: JudgeRequest) -> Judgment:
        client, semaphore = await self._bind_loop()
        async with semaphore:
            try:
                async with asyncio.timeout(self.total_timeout_s):
                    raw = await self._complete(client, request)
            except TimeoutError:
                return self.unjudged(f"no verdict within total_timeout_s={self.total_timeout_s}")
            except openai.APIStatusError as exc:
                return self.unjudged(f"HTTP {exc.status_code}: {exc.message}")
            except (openai.OpenAIError, ValueError) as exc:
                return self.unjudged(f"{type(exc).__name__}: {exc}")
        grade = self.rubric.read(raw)
        if grade is None:
            return self.unjudged(self.rubric.off_menu, raw=raw)
        return self.judgment(grade, raw=raw)

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.close()
        self._client = None
        self._loop = None
