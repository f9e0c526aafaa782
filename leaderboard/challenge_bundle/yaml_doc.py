"""``challenge.yaml`` read safely, with the line of every field.

Its size is capped before it is read (``source.MAX_MANIFEST_BYTES``). Before anything is built,
libyaml (PyYAML's C parser) reads it as a stream of events and refuses more than ``MAX_NODES``
nodes or nesting deeper than ``MAX_DEPTH``: milliseconds whatever the text, where building a
document of 700,000 nodes took minutes and 10,000 levels overflowed the stack. ``outline``
reads the challenge's slug so, to decide who may import the bundle before the rest is read.

Then ruamel.yaml's safe loader builds plain values (no Python objects, no tags beyond YAML's
own) and refuses duplicate keys. Anchors and aliases are refused outright before anything is
built: an alias bomb ("billion laughs") never expands, and a reviewer reads every value where it
stands. Dates written unquoted come back as ISO strings, for the schema to check.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from leaderboard.challenge_bundle.problems import BundleInvalid, Path, Problem, field_name

MAX_NODES = 3_000  # the demo challenges have 49 to 172 (about 50 a task)
MAX_DEPTH = 32  # they nest 5 deep
_EVENTS: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's


@dataclass(frozen=True)
class Outline:
    """What is read of a manifest before deciding who may import it: its challenge's slug as
    written (None where it is not a plain value) and its line."""

    slug: str | None
    line: int | None


def outline(name: str, text: str) -> Outline:
    """The slug of ``text``, read within the limits (``BundleInvalid`` past them)."""
    found = Outline(None, None)
    for path, event in _events(name, text):
        if path == ("challenge", "slug") and isinstance(event, yaml.ScalarEvent):
            found = found if found.slug is not None else Outline(event.value, _line(event))
    return found


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
        for _ in _events(self.name, text):  # the limits first
            pass
        reader = YAML(typ="safe", pure=True)
        try:
            root = reader.compose(text)
            if root is None:
                return None
            self._walk(root, (), set())
            value = reader.constructor.construct_document(root)
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
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, MappingNode):
            for key, value in node.value:
                name = key.value if isinstance(key, ScalarNode) else repr(key.value)
                self.lines[(*path, name)] = key.start_mark.line + 1
                self._walk(value, (*path, name), seen)
        elif isinstance(node, SequenceNode):
            for index, item in enumerate(node.value):
                self._walk(item, (*path, index), seen)


@dataclass
class _Collection:
    """A mapping or sequence being read: its place and the nodes read in it so far."""

    path: Path
    mapping: bool
    count: int = 0
    key: str = ""

    def child(self) -> Path:
        if not self.mapping:
            return (*self.path, self.count)
        return (*self.path, self.key if self.count % 2 else "(key)")

    def read(self, event: yaml.Event | None) -> None:
        """A node read in it (``event``: a scalar or alias; None: a collection)."""
        if self.mapping and self.count % 2 == 0:
            self.key = event.value if isinstance(event, yaml.ScalarEvent) else "(complex key)"
        self.count += 1


def _events(name: str, text: str) -> Iterator[tuple[Path, yaml.NodeEvent]]:
    """Each node of ``text`` with its place, as libyaml reads it; ``BundleInvalid`` at the first
    node past ``MAX_NODES`` or ``MAX_DEPTH`` (nothing after it is read) or where it is not
    YAML."""
    open_: list[_Collection] = []
    nodes = 0
    try:
        for event in yaml.parse(text, Loader=_EVENTS):
            if isinstance(event, yaml.CollectionEndEvent):
                open_.pop()
                if open_:
                    open_[-1].read(None)
                continue
            if not isinstance(event, yaml.NodeEvent):  # the stream's and documents' marks
                continue
            path = open_[-1].child() if open_ else ()
            nodes += 1
            if nodes > MAX_NODES:
                raise _refused(name, event, path, f"more than {MAX_NODES} YAML nodes")
            yield path, event
            if isinstance(event, yaml.CollectionStartEvent):
                if len(open_) == MAX_DEPTH:
                    raise _refused(name, event, path, f"nested more than {MAX_DEPTH} deep")
                open_.append(_Collection(path, isinstance(event, yaml.MappingStartEvent)))
            elif open_:
                open_[-1].read(event)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = " ".join(str(exc.problem or exc.context or exc).split())
        line = mark.line + 1 if mark else None
        raise BundleInvalid([Problem(name, line, "(YAML)", message)]) from None
    except yaml.YAMLError as exc:
        raise BundleInvalid([Problem(name, None, "(YAML)", str(exc))]) from None


def _line(event: yaml.Event) -> int | None:
    return event.start_mark.line + 1 if event.start_mark else None


def _refused(name: str, event: yaml.Event, path: Path, message: str) -> BundleInvalid:
    return BundleInvalid([Problem(name, _line(event), field_name(path), message)])


def _plain(value: Any) -> Any:
    """Dates and times as ISO strings (the schema checks their form), the rest as loaded."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return value
