"""An M2RAG answer: markdown that places images by index, parsed as the official code does.

A placement is ``![caption](...N...)``: the official pattern ``!\\[(.*?)\\]\\((.*?)(\\d+)(.*?)\\)``
read left to right, N = the first digit run inside the parentheses. A placement whose N is
out of range (N >= the number of images; they are numbered from 0) or already placed is
dropped (removed from the answer). Quirks kept, as the official code has them:

- the pattern does not cross a line but may run past a ``)`` to the first digit further on
  the line: ``![a](x) see 3)`` places image 3;
- leading zeros are read as a number (``image 007`` is image 7); a caption is stripped.

The text around a placement (what the per-image judge prompts see) is the answer's text with
every placement removed, cut to ``CONTEXT_TOKENS`` whitespace-separated tokens: the last ones
above it, the first ones below it.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

PLACEMENT = re.compile(r"!\[(.*?)\]\((.*?)(\d+)(.*?)\)")
CONTEXT_TOKENS = 256


@dataclass(frozen=True)
class Placement:
    """One kept placement: the image index, the agent's caption, the text around it."""

    index: int
    caption: str
    above: str
    below: str


@dataclass(frozen=True)
class ParsedAnswer:
    text: str  # the answer with every placement removed (what the text prompts judge)
    placements: tuple[Placement, ...]
    dropped: int  # placements out of range or repeated

    @property
    def indices(self) -> tuple[int, ...]:
        return tuple(placement.index for placement in self.placements)


def cut_tokens(text: str, tokens: int, last: bool) -> str:
    """The first (or, with ``last``, the last) ``tokens`` whitespace-separated tokens."""
    words = text.split()
    return " ".join(words[-tokens:] if last else words[:tokens])


def parse_answer(answer: str, images: int, context_tokens: int = CONTEXT_TOKENS) -> ParsedAnswer:
    """``answer`` parsed against ``images`` images (indices 0 to images - 1)."""
    matches = list(PLACEMENT.finditer(answer))
    pieces: list[str] = []
    start = 0
    for match in matches:
        pieces.append(answer[start : match.start()])
        start = match.end()
    pieces.append(answer[start:])
    kept: list[tuple[int, str, int]] = []  # (index, caption, position among the pieces)
    seen: set[int] = set()
    for position, match in enumerate(matches):
        index = int(match.group(3))
        if index < images and index not in seen:
            seen.add(index)
            kept.append((index, match.group(1).strip(), position))
    placements = tuple(
        Placement(
            index,
            caption,
            cut_tokens(" ".join(pieces[: position + 1]), context_tokens, last=True),
            cut_tokens(" ".join(pieces[position + 1 :]), context_tokens, last=False),
        )
        for index, caption, position in kept
    )
    return ParsedAnswer("".join(pieces).strip(), placements, len(matches) - len(kept))


def shown_answer(answer: str, placed: Collection[int]) -> str:
    """The answer as Podium shows it: its kept placements (``placed``, as ``parse_answer``
    kept them: the first placement of each of these indices) written ``![caption](image:N)``,
    the dropped ones removed. Markdown only: a page renders it sanitised, showing image N where
    the link ``image:N`` stands."""
    seen: set[int] = set()
    wanted = set(placed)

    def rewrite(match: re.Match[str]) -> str:
        index = int(match.group(3))
        if index not in wanted or index in seen:
            return ""
        seen.add(index)
        caption = re.sub(r"([\\\[\]])", r"\\\1", match.group(1).strip())
        return f"![{caption}](image:{index})"

    return PLACEMENT.sub(rewrite, answer)
