"""``challenge.yaml`` read safely, with the line of every field.

ruamel.yaml's safe loader builds plain values (no Python objects, no tags beyond YAML's own)
and refuses duplicate keys. Anchors and aliases are refused outright before anything is built:
an alias bomb ("billion laughs") never expands, and a reviewer reads every value where it
stands. Dates written unquoted come back as ISO strings, for the schema to check.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from leaderboard.challenge_bundle.problems import BundleInvalid, Path, Problem, field_name

MAX_NODES = 100_000


class Document:
    """A parsed ``challenge.yaml``: its value and where each field is (1-based lines)."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.lines: dict[Path, int] = {}
        self.value = self._load(text)

    def line(self, path: Path) -> int | None:
        """The line of ``path``, else of its nearest parent written in the file."""
        for end in range(len(path), -1, -1):
            if (found := self.lines.get(tuple(path[:end]))) is not None:
                return found
        return None

    def problem(self, path: Path, message: str) -> Problem:
        return Problem(self.name, self.line(path), field_name(path), message)

    def _load(self, text: str) -> Any:
        yaml = YAML(typ="safe", pure=True)
        try:
            root = yaml.compose(text)
            if root is not None:
                self._walk(root, (), set())
            value = yaml.load(text)
        except MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark is not None else None
            message = " ".join(str(exc.problem or exc.context or exc).split())
            raise BundleInvalid([Problem(self.name, line, "(YAML)", message)]) from None
        except YAMLError as exc:
            raise BundleInvalid([Problem(self.name, None, "(YAML)", str(exc))]) from None
        return _plain(value)

    def _walk(self, node: Node, path: Path, seen: set[int]) -> None:
        if id(node) in seen or getattr(node, "anchor", None):
            raise BundleInvalid(
                [self.problem(path, "YAML anchors and aliases are not allowed: write the value")]
            )
        seen.add(id(node))
        if len(seen) > MAX_NODES:
            raise BundleInvalid([self.problem(path, f"more than {MAX_NODES} YAML nodes")])
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, MappingNode):
            for key, value in node.value:
                name = key.value if isinstance(key, ScalarNode) else repr(key.value)
                self.lines[(*path, name)] = key.start_mark.line + 1
                self._walk(value, (*path, name), seen)
        elif isinstance(node, SequenceNode):
            for index, item in enumerate(node.value):
                self._walk(item, (*path, index), seen)


def _plain(value: Any) -> Any:
    """Dates and times as ISO strings (the schema checks their form), the rest as loaded."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return value
