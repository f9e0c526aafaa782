"""The registry of benchmark protocols, by the name used in scores.json and on the CLI.

A new benchmark is one more entry here and its own package (``docs/protocols.md``).
"""

from __future__ import annotations

from typing import Any

from evaluator.protocols.base import Protocol
from evaluator.protocols.crag_mm import CragMM
from evaluator.protocols.m2rag import M2RAG
from evaluator.protocols.mrag_suite import MragSuite
from evaluator.protocols.visual_rag import VisualRAG
from evaluator.records import EvaluatorError

PROTOCOLS: dict[str, type[Protocol[Any, Any, Any]]] = {
    CragMM.name: CragMM,
    M2RAG.name: M2RAG,
    VisualRAG.name: VisualRAG,
    MragSuite.name: MragSuite,
}


def protocol_class(name: str) -> type[Protocol[Any, Any, Any]]:
    """The protocol class called ``name``."""
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise EvaluatorError(
            f"protocol {name!r}: unknown; known protocols: {', '.join(sorted(PROTOCOLS))}"
        ) from None


def get_protocol(name: str, **settings: Any) -> Protocol[Any, Any, Any]:
    """The protocol called ``name``, built with its ``settings`` (see each protocol's class)."""
    return protocol_class(name)(**settings)
