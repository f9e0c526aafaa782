"""A judge behind any OpenAI-compatible chat-completions endpoint (vLLM, OpenAI, ...).

Transport: ``evaluator.judges.endpoint`` (aiohttp, one connection pool per event loop,
``concurrency`` connections kept alive), the request body and reply as plain JSON. The openai
client cost about 1.2 ms of CPU per turn (typed requests and replies, httpx); this path about
0.3 ms, so one judging process is never the bottleneck of a vLLM server (docs/benchmarks.md,
judge throughput).

Retries: ``evaluator.judges.endpoint`` (tenacity; retryable failures only, ``Retry-After``
honoured). Each attempt is bounded by ``attempt_timeout_s`` and the whole request, retries
included, by ``total_timeout_s``. When they are exhausted the turn is UNJUDGED, with the last
error as its reason.

Structured output (``structured``):

- ``vllm``: ``{"structured_outputs": {"choice": [the rubric's choices]}}`` (CRAG-MM:
  ``["CORRECT", "WRONG"]``), current vLLM's field (the older ``guided_choice`` was removed in
  vLLM 0.12); ``{"json": schema}`` for a request the rubric gives a ``reply_schema``;
- ``openai``: ``response_format`` with a JSON schema whose ``verdict`` is one of the choices,
  or the rubric's ``reply_schema`` for the request (OpenAI, and vLLM too);
- ``auto``: ``openai``'s form, falling back to plain text for the rest of this judge's life
  the first time the server rejects it (400/422);
- ``none``: plain text.

Whatever the mode, the reply is read by the rubric (``Rubric.read``), so a server that ignores
the structured-output field still works: each benchmark's prompt asks for its answer in words.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp

from evaluator.judges.base import STRUCTURED_MODES, Judge, StructuredMode
from evaluator.judges.endpoint import (
    AttemptTimeout,
    EndpointError,
    error_message,
    new_session,
    post_json,
)
from evaluator.judges.rubric import Rubric
from evaluator.records import EvaluatorError, JudgeRequest, Judgment

log = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"  # when no base_url is given


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
        self.max_retries = max_retries
        self.attempt_timeout_s = attempt_timeout_s
        self.total_timeout_s = total_timeout_s
        self.base_url = (base_url or OPENAI_BASE_URL).rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"}
        # The session (its connection pool) and semaphore belong to one event loop; made again
        # for a new loop.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: aiohttp.ClientSession | None = None
        self._semaphore: asyncio.Semaphore | None = None

    def probe(self, timeout_s: float = 5.0) -> str | None:
        """Why the endpoint cannot judge now (it does not answer, or does not serve the model);
        None when it lists the model. One request, no retry; call it outside an event loop."""

        async def models() -> object:
            timeout = aiohttp.ClientTimeout(total=timeout_s)
            async with (
                aiohttp.ClientSession(headers=self._headers, timeout=timeout) as session,
                session.get(f"{self.base_url}/models") as reply,
            ):
                text = await reply.text(errors="replace")
                if reply.status >= 400:
                    raise EndpointError(reply.status, error_message(reply.status, text))
                return json.loads(text)

        try:
            listed = asyncio.run(models())
            data = listed.get("data") if isinstance(listed, dict) else None
            served = [m["id"] for m in data or [] if isinstance(m, dict) and "id" in m]
        except (aiohttp.ClientError, EndpointError, TimeoutError, ValueError) as exc:
            reason = str(exc) or "no reply in time"
            return f"the judge endpoint does not answer ({type(exc).__name__}: {reason})"
        if self.model not in served:
            offered = ", ".join(served[:10]) or "none"
            return f"the judge endpoint does not serve {self.model!r} (it serves {offered})"
        return None

    def verdict_settings(self) -> dict[str, Any]:
        return {"temperature": 0, "seed": self.seed}

    async def _bind_loop(self) -> tuple[aiohttp.ClientSession, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._session is None or self._semaphore is None:
            # A session left by an earlier loop cannot be closed from this one; judge_all and
            # other owners of a loop call aclose() before their loop ends.
            self._session = new_session(self._headers, self.concurrency)
            self._semaphore = asyncio.Semaphore(self.concurrency)
            self._loop = loop
        return self._session, self._semaphore

    def transcript_request(self, request: JudgeRequest) -> dict[str, Any]:
        return self._body(request, self.structured)

    def _body(self, request: JudgeRequest, mode: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": self.rubric.messages(request),
            "temperature": 0,
            "seed": self.seed,
        }
        schema = self.rubric.reply_schema(request)
        if mode == "vllm":
            body["structured_outputs"] = (
                {"choice": list(self.rubric.choices)} if schema is None else {"json": schema}
            )
        elif mode in ("openai", "auto"):
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": verdict_schema(self.rubric.choices)
                if schema is None
                else {"name": "reply", "strict": True, "schema": schema},
            }
        return body

    async def _post(self, session: aiohttp.ClientSession, body: dict[str, Any]) -> object:
        return await post_json(
            session,
            f"{self.base_url}/chat/completions",
            body,
            self.attempt_timeout_s,
            self.max_retries,
        )

    async def _complete(self, session: aiohttp.ClientSession, request: JudgeRequest) -> str:
        mode = self.structured
        try:
            reply = await self._post(session, self._body(request, mode))
        except EndpointError as exc:
            if mode != "auto" or exc.status not in (400, 422):
                raise
            if self.structured == "auto":
                log.warning("%s: structured output rejected (%s); using text", self.judge_id, exc)
                self.structured = "none"
            return await self._complete(session, request)
        return reply_text(reply)

    async def judge(self, request: JudgeRequest) -> Judgment:
        session, semaphore = await self._bind_loop()
        async with semaphore:
            try:
                async with asyncio.timeout(self.total_timeout_s):
                    raw = await self._complete(session, request)
            except TimeoutError:
                return self.unjudged(f"no verdict within total_timeout_s={self.total_timeout_s}")
            except (EndpointError, AttemptTimeout) as exc:
                return self.unjudged(
                    f"{'Timeout: ' if isinstance(exc, AttemptTimeout) else ''}{exc}"
                )
            except aiohttp.ClientError as exc:
                return self.unjudged(f"Connection failed ({type(exc).__name__}): {exc}")
            except ValueError as exc:
                return self.unjudged(f"{type(exc).__name__}: {exc}")
        grade = self.rubric.read(raw)
        if grade is None:
            return self.unjudged(self.rubric.off_menu, raw=raw)
        return self.judgment(grade, raw=raw)

    async def aclose(self) -> None:
        if self._session is not None and self._loop is asyncio.get_running_loop():
            await self._session.close()
        self._session = None
        self._loop = None
