"""Loading a participant's agent class and calling it the way the official evaluators did.

Two official interfaces exist; the kit is read from the signature of ``batch_generate_response``,
so a participant changes nothing in their class:

- kit A (challenge kit): ``Agent(search_pipeline=...)``;
  ``batch_generate_response(queries, images, message_histories)``.
- kit B (post-challenge release): ``Agent(model_name=..., is_multi_turn=...)``;
  ``batch_generate_response(queries, images, message_histories, rag_context_list=...,
  domains=...)``. A method naming ``rag_context_list`` is kit B.

Other benchmarks (protocol v3 ``items``, ``agentkit.items``): a class with ``batch_answer(items)``
instead, constructed as ``Agent(search_pipeline=...)`` when its ``__init__`` names it, else
``Agent()``; it returns one ``{"answer": str, "ranking": [image id]}`` per item.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import operator
import os
from dataclasses import dataclass
from typing import Any

from agentkit.batch import BatchRequest
from agentkit.items import check_item_responses
from agentkit.protocol import ENV_TASK, clip_batch_size
from agentkit.search import SearchPipeline

ENV_MODEL_NAME = "PODIUM_MODEL_NAME"  # kit B: the ``model_name`` keyword, set in the image
MULTI_TURN_TASK = "multi-turn-qa"

KIT_A = "A"
KIT_B = "B"
KIT_ITEMS = "items"


class AgentLoadError(Exception):
    """The agent spec, module or class cannot be used; the message says why."""


class AgentProtocolError(Exception):
    """The agent answered something other than one string per query."""


@dataclass
class LoadedAgent:
    """A constructed agent with its kit and (clipped) batch size."""

    spec: str
    kit: str
    instance: Any
    batch_size: int
    accepts_domains: bool

    def answer(self, batch: BatchRequest) -> list[Any]:
        """Call ``batch_generate_response`` (or ``batch_answer``) for the batch and check it."""
        if (self.kit == KIT_ITEMS) != bool(batch.items):
            wanted = "items (batch_answer)" if self.kit == KIT_ITEMS else "turns"
            raise AgentProtocolError(f"this agent answers {wanted}; the batch holds the other")
        if self.kit == KIT_ITEMS:
            try:
                items = list(batch.items)  # the agent's own list: agentkit clears the batch's
                return check_item_responses(self.instance.batch_answer(items), items)
            except ValueError as exc:
                raise AgentProtocolError(str(exc)) from None
        queries = [turn.query for turn in batch.turns]
        images = [turn.image for turn in batch.turns]
        histories = [turn.message_history for turn in batch.turns]
        if self.kit == KIT_A:
            responses = self.instance.batch_generate_response(queries, images, histories)
        else:
            extra: dict[str, Any] = {
                "rag_context_list": [turn.rag_context or "" for turn in batch.turns]
            }
            if self.accepts_domains:
                extra["domains"] = [turn.domain for turn in batch.turns]
            responses = self.instance.batch_generate_response(queries, images, histories, **extra)
        return check_responses(responses, len(queries))


def check_responses(responses: Any, expected: int) -> list[str]:
    """One ``str`` per query, or :class:`AgentProtocolError` saying what was wrong."""
    if not isinstance(responses, list | tuple):
        raise AgentProtocolError(
            f"batch_generate_response returned {type(responses).__name__}, "
            f"expected a list of {expected} strings"
        )
    if len(responses) != expected:
        raise AgentProtocolError(
            f"batch_generate_response returned {len(responses)} responses for {expected} queries"
        )
    for i, response in enumerate(responses):
        if not isinstance(response, str):
            raise AgentProtocolError(
                f"batch_generate_response: response {i} is {type(response).__name__}, expected str"
            )
    return list(responses)


KIT_ENTRY_POINT = "agents.user_config:UserAgent"  # the CRAG-MM starter kit's


def kit_entry_point() -> str:
    """The agent when none is named: the kit's ``agents/user_config.py`` ``UserAgent``, as the
    original platform loaded it; ``AgentLoadError`` when the image has no such module."""
    try:
        found = importlib.util.find_spec(KIT_ENTRY_POINT.partition(":")[0]) is not None
    except ModuleNotFoundError:  # no agents package at all
        found = False
    if not found:
        raise AgentLoadError(
            "no agent given: set PODIUM_AGENT=module:Class (ENV in the Dockerfile), or ship the "
            "kit's agents/user_config.py naming UserAgent"
        )
    return KIT_ENTRY_POINT


def import_agent_class(spec: str) -> type[Any]:
    """Import ``module:Class``. Errors in the participant's module propagate unchanged."""
    module_name, sep, class_name = spec.partition(":")
    if not sep or not module_name or not class_name:
        raise AgentLoadError(f"the agent must be given as 'module:Class', got {spec!r}")
    module = importlib.import_module(module_name)
    cls: Any = module  # the participant's class: nothing is known of it statically
    for part in class_name.split("."):
        cls = getattr(cls, part, None)
        if cls is None:
            raise AgentLoadError(f"module {module_name!r} has no attribute {class_name!r}")
    if not inspect.isclass(cls):
        raise AgentLoadError(f"{spec} is a {type(cls).__name__}, not a class")
    answers = ("batch_generate_response", "batch_answer")
    if not callable(getattr(cls, "get_batch_size", None)):
        raise AgentLoadError(f"{spec} has no method get_batch_size()")
    if not any(callable(getattr(cls, method, None)) for method in answers):
        raise AgentLoadError(f"{spec} has no method batch_generate_response()")
    return cls


def detect_kit(cls: type[Any]) -> str:
    """Kit B when ``batch_generate_response`` names ``rag_context_list``, else kit A; the items
    kit for a class answering ``batch_answer`` only."""
    if not callable(getattr(cls, "batch_generate_response", None)):
        return KIT_ITEMS
    params = _parameters(cls.batch_generate_response)
    if "rag_context_list" in params:
        return KIT_B
    try:
        inspect.signature(cls.batch_generate_response).bind(None, [], [], [])
    except TypeError:
        raise AgentLoadError(
            f"{cls.__name__}.batch_generate_response must take (queries, images, "
            "message_histories) (kit A) or also rag_context_list (kit B)"
        ) from None
    return KIT_A


def load_agent(spec: str, task: str | None = None, search_socket: str | None = None) -> LoadedAgent:
    """Import, construct and size the agent. The participant's own exceptions propagate."""
    task = task if task is not None else os.environ.get(ENV_TASK)
    cls = import_agent_class(spec)
    kit = detect_kit(cls)
    pipeline = SearchPipeline(search_socket, task=task)
    if kit == KIT_A:
        instance = cls(search_pipeline=pipeline)
    elif kit == KIT_ITEMS:
        named = "search_pipeline" in _parameters(cls.__init__, named_only=True)
        instance = cls(search_pipeline=pipeline) if named else cls()
    else:
        offered: dict[str, Any] = {"is_multi_turn": task == MULTI_TURN_TASK}
        if os.environ.get(ENV_MODEL_NAME):
            offered["model_name"] = os.environ[ENV_MODEL_NAME]
        if "search_pipeline" in _parameters(cls.__init__, named_only=True):
            offered["search_pipeline"] = pipeline
        instance = cls(**_accepted(cls.__init__, offered))
    size = instance.get_batch_size()
    try:
        batch_size = clip_batch_size(operator.index(size))
    except TypeError:
        raise AgentLoadError(
            f"get_batch_size() returned {size!r} ({type(size).__name__}), expected an int"
        ) from None
    accepts_domains = kit == KIT_B and "domains" in _accepted(
        cls.batch_generate_response, {"domains": None}
    )
    return LoadedAgent(spec, kit, instance, batch_size, accepts_domains)


def _parameters(function: Any, named_only: bool = False) -> dict[str, inspect.Parameter]:
    params = dict(inspect.signature(function).parameters)
    if named_only:
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        params = {name: p for name, p in params.items() if p.kind in kinds}
    return params


def _accepted(function: Any, offered: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments ``function`` takes: all with ``**kwargs``, else the named ones."""
    if function is object.__init__:  # a class without __init__ takes no arguments
        return {}
    params = _parameters(function)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(offered)
    named = _parameters(function, named_only=True)
    return {key: value for key, value in offered.items() if key in named}
