"""A bundle's pages compared with the live challenge's as text (``difflib``'s unified diff), for
the organiser who checks a bundle before importing it: the lines removed and added, not the
pages' sha256s (``state`` compares pages by digest, which tells only that a page changed).

A page is at most ``loader.MAX_PAGE_BYTES`` (1 MiB); one past ``MAX_LINES`` lines on either
side is not compared line by line (``difflib`` is quadratic at worst): its diff says how many
lines each side has.
"""

from __future__ import annotations

import difflib

from leaderboard.challenge_bundle.loader import Bundle
from leaderboard.challenge_bundle.schema import PAGES
from leaderboard.models import Challenge

MAX_LINES = 5_000
CONTEXT = 2  # unchanged lines shown around each change


def page_diffs(existing: Challenge | None, bundle: Bundle) -> dict[str, list[str]]:
    """Each page that the bundle changes (in ``PAGES``' order): its unified diff's lines, from
    ``live/<page>`` (empty for a new challenge) to ``bundle/<page>``."""
    out = {}
    for page in PAGES:
        old = getattr(existing, page) if existing is not None else ""
        new = bundle.page(page)
        if old != new:
            out[page] = text_diff(old, new, page)
    return out


def text_diff(old: str, new: str, page: str) -> list[str]:
    """``old`` to ``new`` as unified diff lines (``-`` removed, ``+`` added, `` `` context)."""
    before, after = old.splitlines(), new.splitlines()
    if max(len(before), len(after)) > MAX_LINES:
        return [f"{page}: {len(before)} lines -> {len(after)} lines (too long to compare here)"]
    lines = difflib.unified_diff(
        before, after, f"live/{page}", f"bundle/{page}", lineterm="", n=CONTEXT
    )
    return list(lines)


def described(changes: list[str], pages: dict[str, list[str]]) -> list[str]:
    """``changes`` (``state.diff``'s lines) with each changed page's digests replaced by how
    many lines it adds and removes: ``~ challenge.pages.rules: +1 -1 lines``."""
    out = []
    for line in changes:
        sign, _, rest = line.partition(" ")
        key = rest.partition(":")[0]
        page = key.removeprefix("challenge.pages.")
        if page != key and page in pages:
            line = f"{sign} {key}: {_summary(pages[page])}"
        out.append(line)
    return out


def _summary(lines: list[str]) -> str:
    if len(lines) == 1:  # not compared line by line
        return lines[0].partition(": ")[2]
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return f"+{added} -{removed} lines"
