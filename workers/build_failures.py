"""What a failed build tells the team: sentences, never a terminal's bytes.

A build step's output is a terminal's: colours, cursor moves, window titles (ECMA-48 control
sequences) and carriage returns. ``plain`` removes them, from the build log's lines and from
the engine's error, before either is shown (the submission's reason, its build log).

A step that failed the way an unreachable network fails (a name that does not resolve, a
connection refused or unreachable, pip finding no version of a package, a destination the index
gate refused) gets ``network_hint``: builds have no network, only the challenge's package index
where it names one; the hint says whether this challenge does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from workers.package_index import PackageIndex

# ECMA-48: CSI (ESC [ ... final byte, or its 8-bit form), OSC / DCS / SOS / PM / APC strings
# (ended by BEL or ST), and the other two-byte escapes; then any C0/C1 control but tab and
# newline (a carriage return rewrites a line: the line is cut there).
_CONTROL_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]P^_X]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# What a step prints when it tried to reach a host it cannot (pip, apt, curl, Python's socket).
NETWORK_FAILURE = re.compile(
    "|".join(
        (
            r"Temporary failure in name resolution",
            r"Name or service not known",
            r"No address associated with hostname",
            r"nodename nor servname",
            r"getaddrinfo failed",
            r"Could not resolve (?:host|proxy|'[^']*')",
            r"Temporary failure resolving",
            r"Connection refused",
            r"Network is unreachable",
            r"No route to host",
            r"Failed to establish a new connection",
            r"Cannot connect to proxy",
            r"ProxyError",
            r"No matching distribution found for",
            r"Could not find a version that satisfies the requirement",
        )
    ),
    re.IGNORECASE,
)
_STEP = re.compile(r"^Step \d+/\d+ : ")


def plain(text: str) -> str:
    """``text`` without terminal control sequences or control characters (tabs and newlines
    kept; a carriage return ends a line)."""
    text = _CONTROL_SEQUENCE.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", text)


def plain_lines(text: str) -> list[str]:
    """``text``'s lines, each ``plain``."""
    return plain(text).rstrip("\n").splitlines()


def failing_step(tail: Sequence[str]) -> list[str]:
    """The lines of ``tail`` the last step printed (from its ``Step N/M`` line on)."""
    lines = list(tail)
    starts = [i for i, line in enumerate(lines) if _STEP.match(line)]
    return lines[starts[-1] :] if starts else lines


def looks_like_network(lines: Iterable[str]) -> bool:
    return any(NETWORK_FAILURE.search(line) for line in lines)


def network_hint(index: PackageIndex | None, refused: Sequence[str] = ()) -> str:
    """The sentence a build that failed reaching the network gets: builds have no network, but
    the challenge's package index where it names one (``refused``: the hosts the gate refused)."""
    asked = f" This build asked for {', '.join(refused)}." if refused else ""
    if index is None:
        return (
            "Builds have no network, and this challenge names no package index: nothing can "
            "be downloaded while your image builds. Put what it installs (wheels, model files) "
            "in your build context, or ask the organisers for a package index." + asked
        )
    return (
        f"Builds have no network but this challenge's package index, {index.url}: pip installs "
        "from it (a package it does not serve cannot be installed), and every other host is "
        "out of reach." + asked
    )


def build_failure(
    tar_path: Path,
    why: str,
    tail: Sequence[str],
    index: PackageIndex | None = None,
    refused: Sequence[str] = (),
) -> str:
    """The reason a build failed, in plain text: the engine's error, the network hint when the
    failing step looks like it could not reach a host, and the last lines of the build log."""
    why = " ".join(plain(why).split())
    if refused or looks_like_network([why, *failing_step(tail)]):
        why = f"{why.rstrip('.')}. {network_hint(index, refused)}"
    log = "\n".join(plain(line) for line in tail) or "(empty)"
    return f"{tar_path}: build failed: {why}\n--- last lines of the build log ---\n{log}"
