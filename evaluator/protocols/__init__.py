"""The registry of benchmark protocols, by the name used in scores.json and on the CLI."""

from __future__ import annotations

from typing import Any

from evaluator.protocols.base import Protocol
from evaluator.protocols.crag_mm import CragMM
from evaluator.records import EvaluatorError

PROTOCOLS: dict[str, type[Protocol[Any]]] = {CragMM.name: CragMM}


def get_protocol(name: str, **settings: Any) -> Protocol[Any]:
    """The protocol called ``name``, built with its ``settings`` (see each protocol's class)."""
    try:
        protocol = PROTOCOLS[name]
    except KeyError:
        raise EvaluatorError(
            f"protocol {name!r}: unknown; known protocols: {', '.join(sorted(PROTOCOLS))}"
        ) from None
    return protocol(**settings)
