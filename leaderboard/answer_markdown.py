"""A team's markdown answer as a run page shows it (``Benchmark.shown_answer``: M2RAG).

What the team wrote is never trusted: CommonMark without raw HTML (tags are shown as text),
links kept only for http, https and mailto (``javascript:`` and the like are text), and no
image but those Podium serves: an image link ``image:N`` becomes Podium's scaled copy of image N
of the item (``answer_url(N)``, None when it has none: its caption is shown in its place), any
other image (a remote one, which would tell its host who reads the page) is its caption as text.
What the renderer makes is sanitised again (nh3) before it reaches the page.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.token import Token

from evaluator.seam import ShownAnswer

PODIUM_IMAGE = re.compile(r"image:(\d+)")
TAGS = {
    "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
    "img", "li", "ol", "p", "pre", "span", "strong", "table", "tbody", "td", "th", "thead",
    "tr", "ul",
}  # fmt: skip
ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "loading"}, "span": {"class"}}


def rendered_answer(shown: ShownAnswer, image_url: Callable[[int], str | None]) -> SafeString:
    """``shown`` as safe HTML, image ``image:N`` links served from ``image_url(N)``, each image
    followed by its note."""
    markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")

    def image(renderer: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
        token = tokens[idx]
        caption = escape(token.content)
        found = PODIUM_IMAGE.fullmatch(str(token.attrGet("src") or ""))
        url = image_url(int(found.group(1))) if found else None
        if found is None or url is None:
            return f'<span class="image-missing">[image: {caption}]</span>'
        note = shown.image_notes.get(int(found.group(1)), "")
        return (
            f'<span class="placed-image"><img src="{escape(url)}" alt="{caption}" '
            f'loading="lazy"><span class="image-note">{escape(note)}</span></span>'
        )

    markdown.add_render_rule("image", image)
    html = markdown.render(shown.markdown)
    return mark_safe(
        nh3.clean(
            html,
            tags=TAGS,
            attributes=ATTRIBUTES,
            url_schemes={"http", "https", "mailto"},
        )
    )
