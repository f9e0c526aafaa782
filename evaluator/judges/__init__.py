"""Judges, each on a benchmark's rubric (``evaluator.judges.rubric``):
``make_judge("rules", rubric)`` (deterministic, offline), ``make_judge("openai", rubric, ...)``,
or ``make_judge("replay", rubric, transcript=...)`` (the calls of a transcript, no model call).

Options of the ``openai`` judge, each read from the environment when not passed:

=================  ================================================  ===================
option             environment variable                              default
=================  ================================================  ===================
base_url           PODIUM_JUDGE_BASE_URL, then OPENAI_BASE_URL       OpenAI's API
model              PODIUM_JUDGE_MODEL                                (required)
api_key            PODIUM_JUDGE_API_KEY, then OPENAI_API_KEY (each    "EMPTY" with a base_url
                   only for its own server: see below)
revision           PODIUM_JUDGE_REVISION                             "unspecified"
concurrency        PODIUM_JUDGE_CONCURRENCY                          16
max_retries        PODIUM_JUDGE_MAX_RETRIES                          5
attempt_timeout_s  PODIUM_JUDGE_ATTEMPT_TIMEOUT_S                    60
total_timeout_s    PODIUM_JUDGE_TOTAL_TIMEOUT_S                      300
structured         PODIUM_JUDGE_STRUCTURED (auto|vllm|openai|none)   auto
seed               PODIUM_JUDGE_SEED                                 0
=================  ================================================  ===================

A key from the environment goes only to the server it belongs to: ``PODIUM_JUDGE_API_KEY`` to
``PODIUM_JUDGE_BASE_URL`` (OpenAI's API when that is unset), ``OPENAI_API_KEY`` to
``OPENAI_BASE_URL`` (likewise). A judge pointed at any other server gets only a key passed to it.

``revision`` names the model weights' revision (e.g. a Hugging Face commit) and is part of the
judge id, hence of every recorded verdict and of the cache key.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from evaluator.judges.base import Judge
from evaluator.judges.cache import (
    JudgmentCache,
    MemoryCache,
    SQLiteCache,
    cache_key,
    cache_keys,
)
from evaluator.judges.loop import JudgingStats, Judgments, judge_all, judge_all_async
from evaluator.judges.rubric import UNJUDGED, Rubric
from evaluator.judges.rules import RulesJudge
from evaluator.records import EvaluatorError

__all__ = [
    "JUDGE_NAMES",
    "UNJUDGED",
    "Judge",
    "JudgingStats",
    "JudgmentCache",
    "Judgments",
    "MemoryCache",
    "OpenAIJudge",
    "Rubric",
    "RulesJudge",
    "SQLiteCache",
    "cache_key",
    "cache_keys",
    "judge_all",
    "judge_all_async",
    "make_judge",
]

# The environment's keys, each with the variable naming the server it belongs to.
_KEYS_AND_SERVERS = (
    ("PODIUM_JUDGE_API_KEY", "PODIUM_JUDGE_BASE_URL"),
    ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
)
# option -> (environment variables, in order of preference; type)
_OPENAI_OPTIONS: dict[str, tuple[tuple[str, ...], Callable[[str], Any]]] = {
    "base_url": (("PODIUM_JUDGE_BASE_URL", "OPENAI_BASE_URL"), str),
    "model": (("PODIUM_JUDGE_MODEL",), str),
    "revision": (("PODIUM_JUDGE_REVISION",), str),
    "concurrency": (("PODIUM_JUDGE_CONCURRENCY",), int),
    "max_retries": (("PODIUM_JUDGE_MAX_RETRIES",), int),
    "attempt_timeout_s": (("PODIUM_JUDGE_ATTEMPT_TIMEOUT_S",), float),
    "total_timeout_s": (("PODIUM_JUDGE_TOTAL_TIMEOUT_S",), float),
    "structured": (("PODIUM_JUDGE_STRUCTURED",), str),
    "seed": (("PODIUM_JUDGE_SEED",), int),
}


def _server(url: str | None) -> str | None:
    return url.rstrip("/") if url else None


def _environment_key(base_url: str | None) -> str | None:
    """The environment's key for ``base_url``: only one whose own server it is."""
    for key, server in _KEYS_AND_SERVERS:
        if os.environ.get(key) and _server(os.environ.get(server)) == _server(base_url):
            return os.environ[key]
    return None


def _openai_options(options: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - {*_OPENAI_OPTIONS, "api_key"})
    if unknown:
        raise EvaluatorError(
            f"openai judge: unknown option(s) {unknown}; known: {[*_OPENAI_OPTIONS, 'api_key']}"
        )
    resolved: dict[str, Any] = {}
    for name, (variables, kind) in _OPENAI_OPTIONS.items():
        if options.get(name) is not None:
            resolved[name] = options[name]
            continue
        for variable in variables:
            text = os.environ.get(variable)
            if text:
                try:
                    resolved[name] = kind(text)
                except ValueError:
                    raise EvaluatorError(
                        f"openai judge: environment variable {variable}={text!r}:"
                        f" not a valid {kind.__name__}"
                    ) from None
                break
    if not resolved.get("model"):
        raise EvaluatorError("openai judge: no model: pass model= or set PODIUM_JUDGE_MODEL")
    resolved["api_key"] = options.get("api_key") or _environment_key(resolved.get("base_url"))
    if not resolved.get("api_key"):
        if not resolved.get("base_url"):
            raise EvaluatorError(
                "openai judge: no API key for OpenAI's API: set PODIUM_JUDGE_API_KEY or"
                " OPENAI_API_KEY, or point PODIUM_JUDGE_BASE_URL at a local server"
            )
        resolved["api_key"] = "EMPTY"  # local vLLM servers accept any key
    resolved.setdefault("base_url", None)
    return resolved


def make_judge(name: str, rubric: Rubric, **options: Any) -> Judge:
    """Build the judge called ``name`` for a benchmark's ``rubric``: "rules", "openai", or
    "replay" (``transcript=`` a transcript file: ``evaluator.judges.transcript``)."""
    if name == "replay":
        from evaluator.judges.transcript import ReplayJudge

        extra = sorted(set(options) - {"transcript"})
        if extra or options.get("transcript") is None:
            raise EvaluatorError(f"replay judge: takes transcript= only, got {sorted(options)}")
        return ReplayJudge(options["transcript"], rubric)
    if name == "rules":
        given = sorted(k for k, v in options.items() if v is not None)
        if given:
            raise EvaluatorError(f"rules judge: takes no options, got {given}")
        return RulesJudge(rubric)
    if name == "openai":
        judge: Judge = __getattr__("OpenAIJudge")(rubric=rubric, **_openai_options(options))
        return judge
    raise EvaluatorError(f"unknown judge {name!r}: choose one of {JUDGE_NAMES}")


JUDGE_NAMES: tuple[str, ...] = ("rules", "openai", "replay")


def __getattr__(name: str) -> Any:
    # OpenAIJudge is imported on first use: its HTTP client (aiohttp) takes time to import,
    # which the rules judge (and everything else here) does not need.
    if name == "OpenAIJudge":
        from evaluator.judges.openai_judge import OpenAIJudge

        return OpenAIJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
