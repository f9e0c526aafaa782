"""A team's Dockerfile, checked before it is built: it may start only from Podium's base images.

Every image reference a build can read (``FROM`` in every stage, ``COPY --from``,
``RUN --mount=...,from=``, and the same inside ``ONBUILD``) must be an allowed base image, an
earlier stage of the same file, or ``scratch``. References are written out: a build argument or
variable in one is refused, as it could expand into any name. An allowed base is pinned: the line
is rewritten to the image ID the engine has for it now, so what is built is what Podium checked.
Anything else is refused before building, naming the line and the allowed bases.

``check_base_images`` is the same check where no engine is at hand (a submission's upload): the
references are matched by name only; an image ID written out is left to the build, which knows
the allowed bases' IDs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from workers.images import full_reference

# Dockerfile parser directives (before any instruction): only ``escape`` changes parsing here.
_DIRECTIVE = re.compile(r"#\s*(\w+)\s*=\s*(\S+)\s*$")
_STAGE_NAME = re.compile(r"[a-z][a-z0-9_.-]*")
_QUOTES = "\"'"
# Docker's reader: lines end at "\n" only (a "\r" before it is dropped), a continuation is the
# escape character followed by spaces or tabs only, words are split at ASCII white space, and a
# UTF-8 byte-order mark before the first line is dropped.
_WORDS = re.compile(r"[ \t\v\f\r]+")
_BOM = "\ufeff"
_IMAGE_ID = re.compile(r"(sha256:)?[0-9a-f]{64}")


class DockerfileError(Exception):
    """A Dockerfile Podium will not build; the message names the line."""


@dataclass
class _Stages:
    names: list[str] = field(default_factory=list)  # "" for an unnamed stage
    allowed: Sequence[str] = ()  # the allowed bases, as the messages name them

    def known(self, ref: str, by_index: bool) -> bool:
        """``ref`` names an earlier stage (by name, or by index where ``by_index``)."""
        if ref.isdigit() and by_index:
            return int(ref) < len(self.names)
        return bool(ref) and ref.lower() in self.names


@dataclass(frozen=True)
class _Line:
    first: int  # line numbers, from 1; a continued instruction spans first..last
    last: int
    text: str


def _logical_lines(text: str) -> list[_Line]:
    """Instructions with their continuations joined; comments and blank lines dropped."""
    escape = "\\"
    lines = _lines(text)
    for raw in lines:  # parser directives come first, before anything else
        match = _DIRECTIVE.match(raw.strip())
        if not match:
            break
        if match[1].lower() == "escape" and match[2] in ("\\", "`"):
            escape = match[2]
    result: list[_Line] = []
    pending, first = "", 0
    continued = re.compile(re.escape(escape) + r"[ \t]*$")
    for number, raw in enumerate(lines, 1):
        stripped = raw.lstrip()
        if stripped.startswith("#") or (not stripped.strip() and not pending):
            continue
        if not pending:
            first = number
        if ending := continued.search(stripped):
            pending += stripped[: ending.start()] + " "
            continue
        result.append(_Line(first, number, pending + stripped))
        pending = ""
    if pending.strip():
        result.append(_Line(first, len(lines), pending))
    return result


def _lines(text: str) -> list[str]:
    """``text``'s lines as Docker reads them."""
    return [line.removesuffix("\r") for line in text.removeprefix(_BOM).split("\n")]


def _words(text: str) -> list[str]:
    return [word for word in _WORDS.split(text) if word]


def _flags(words: list[str]) -> list[str]:
    """The leading ``--flag`` words of an instruction's arguments."""
    flags = []
    for word in words:
        if not word.startswith("--"):
            break
        flags.append(word)
    return flags


def _pin_flag(flag: str, pin: Callable[[str], str]) -> str:
    """``flag`` with the image references it reads (``--from=X``, ``--mount=...,from=X``)
    replaced by ``pin(X)``; any other flag as it is."""
    option, _, value = flag[2:].partition("=")
    if option.lower() == "from":
        return f"--{option}={pin(value.strip(_QUOTES))}"
    if option.lower() != "mount":
        return flag
    parts = []
    for part in value.split(","):
        key, equals, item = part.partition("=")
        if key.strip().lower() == "from":
            part = f"{key}{equals}{pin(item.strip().strip(_QUOTES))}"
        parts.append(part)
    return f"--{option}={','.join(parts)}"


def check_base_images(text: str, allowed: Sequence[str]) -> None:
    """Raise ``DockerfileError`` (naming the line and the ``allowed`` bases) when ``text`` reads
    an image that is none of ``allowed`` (by name, as Docker normalises it), no earlier stage
    and not ``scratch``. An image ID is left to the build."""
    names = {full_reference(name) for name in allowed}

    def named(ref: str) -> str | None:
        return ref if _IMAGE_ID.fullmatch(ref) or full_reference(ref) in names else None

    pin_base_images(text, named, allowed=allowed)


def pin_base_images(
    text: str,
    resolve: Callable[[str], str | None],
    stage_args: Sequence[str] = (),
    allowed: Sequence[str] = (),
) -> str:
    """``text`` with every base image reference pinned to an image ID, and ``ARG <name>``
    declared for each of ``stage_args`` at the start of every stage (so build arguments Podium
    passes reach the stage's ``RUN`` steps).

    ``resolve(reference)`` gives the image ID of an allowed base image, or None when the
    reference is not one. Raises ``DockerfileError`` naming the line of any other reference
    and the ``allowed`` bases.
    """
    stages = _Stages(allowed=allowed)
    out = _lines(text)
    for line in _logical_lines(text):
        words = _words(line.text)
        if words[0].upper() == "ONBUILD":
            words = words[1:] or [""]
        keyword, args = words[0].upper(), words[1:]
        if keyword == "FROM":
            rewritten = _from(line.first, args, stages, resolve)
            rewritten += "".join(f"\nARG {name}" for name in stage_args)
        elif keyword in ("COPY", "ADD", "RUN"):
            rewritten = line.text
            pin = partial(_check, line.first, keyword, stages=stages, resolve=resolve)
            for flag in _flags(args):
                rewritten = rewritten.replace(flag, _pin_flag(flag, pin), 1)
        else:
            continue
        if rewritten != line.text:
            out[line.first - 1 : line.last] = [rewritten] + [""] * (line.last - line.first)
    if not stages.names:
        raise DockerfileError("Dockerfile: no FROM instruction")
    return "\n".join(out).rstrip("\n") + "\n"


def _from(
    number: int, args: list[str], stages: _Stages, resolve: Callable[[str], str | None]
) -> str:
    flags = _flags(args)
    rest = args[len(flags) :]
    if len(rest) == 3 and rest[1].upper() == "AS":
        ref, name = rest[0], rest[2].lower()
        if not _STAGE_NAME.fullmatch(name):
            raise DockerfileError(f"Dockerfile line {number}: {name!r} is not a stage name")
    elif len(rest) == 1:
        ref, name = rest[0], ""
    else:
        raise DockerfileError(f"Dockerfile line {number}: FROM <image> [AS <name>] expected")
    image = _check(number, "FROM", ref, stages=stages, resolve=resolve, by_index=False)
    stages.names.append(name)
    return " ".join(["FROM", *flags, image]) + (f" AS {name}" if name else "")


def _check(
    number: int,
    keyword: str,
    ref: str,
    *,
    stages: _Stages,
    resolve: Callable[[str], str | None],
    by_index: bool = True,
) -> str:
    """``ref`` as it may be built: a stage, ``scratch``, or an allowed base's image ID."""
    if "$" in ref:
        raise DockerfileError(
            f"Dockerfile line {number}: {keyword} {ref!r}: write image references out "
            "(no build arguments or variables in them)"
        )
    if ref.lower() == "scratch" or stages.known(ref, by_index):
        return ref
    image_id = resolve(ref)
    if image_id is None:
        bases = f"; the allowed bases are {', '.join(stages.allowed)}" if stages.allowed else ""
        raise DockerfileError(
            f"Dockerfile line {number}: {keyword} {ref!r} is not one of the base images this "
            f"challenge allows (or an earlier stage of this Dockerfile){bases}"
        )
    return image_id
