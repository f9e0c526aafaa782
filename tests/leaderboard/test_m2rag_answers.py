"""An M2RAG answer on the run page: its markdown rendered with the images it places, beside
each image's scores, and nothing of what the team wrote executed or fetched from elsewhere."""

from __future__ import annotations

import time
from html.parser import HTMLParser

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse

from evaluator.benchmarks.m2rag import M2RAG
from evaluator.benchmarks.m2rag.record import GradedAnswer, to_row
from evaluator.seam import ShownAnswer
from leaderboard.answer_markdown import rendered_answer
from leaderboard.models import ItemAnswer, ItemVerdict, Task

from .test_run_page import jpeg

HOSTILE = "\n".join(
    [
        "# Colours",
        "The **circle** is red. ![a red circle](image 0)",
        "<script>alert('x')</script> <img src=x onerror=\"window.__pwned=1\">",
        "[click](javascript:alert(1)) [docs](https://example.org/docs)",
        "![tracker](https://evil.example/pixel.png)",
        "![inline](data:image/png;base64,AAAA)",  # a placement (the digits of base64): image 64
        '![caption" onerror="alert(1)](image 2) and again ![same](image 0)',
        "![out of range](image 9) ![huge](image 99999999999999999999999999)",
    ]
)


def graded(answer: str, placed: tuple[int, ...]) -> GradedAnswer:
    return GradedAnswer(
        query_id="q1", labels={"topic": "science"}, query="What colour is the circle?",
        answer=answer, grade="0.7", judge_id="j", prompt_version="1", prompt_hash="h",
        placed=placed, coherence=(0.6, 0.3)[: len(placed)],
        helpfulness=(0.9, 0.2)[: len(placed)], reference=(0.4, 0.1)[: len(placed)],
    )  # fmt: skip


def shown(answer: str, placed: tuple[int, ...]) -> ShownAnswer:
    shown = M2RAG().shown_answer(to_row(graded(answer, placed)))
    assert shown is not None
    return shown


class Tags(HTMLParser):
    """Every tag and attribute of a piece of HTML, as a browser reads them."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_a_hostile_answer_renders_as_text_with_only_podiums_images():
    html = str(rendered_answer(shown(HOSTILE, (0, 2)), lambda n: f"/img/{n}.jpg"))
    tags = Tags(html).tags
    assert {tag for tag, _ in tags} == {"h1", "p", "strong", "span", "img", "a"}
    assert {name for _, attrs in tags for name in attrs} == {"class", "src", "alt", "loading",
                                                             "href", "rel"}  # fmt: skip
    assert [a["src"] for tag, a in tags if tag == "img"] == ["/img/0.jpg", "/img/2.jpg"]
    assert [a["href"] for tag, a in tags if tag == "a"] == ["https://example.org/docs"]
    assert "&lt;script&gt;alert" in html and "&lt;img src=x onerror" in html  # shown as text
    assert "[click](javascript:alert(1))" in html  # a javascript: link is no link
    assert "[image: tracker]" in html  # a remote image is its caption, never fetched
    for dropped in ("AAAA", "out of range", "huge", "same"):  # out of range or repeated
        assert dropped not in html, dropped
    assert "coherence 6/10, helpfulness 9/10, reference 4/10" in html  # beside image 0
    assert ("img", {"src": "/img/2.jpg", "alt": 'caption" onerror="alert(1)',
                    "loading": "lazy"}) in tags  # fmt: skip


def test_an_image_podium_has_not_stored_shows_its_caption():
    html = str(rendered_answer(shown("See ![a red circle](image 0).", (0,)), lambda n: None))
    assert "<img" not in html and "[image: a red circle]" in html


def test_ten_thousand_placements_render_once_per_image_quickly():
    answer = " ".join(f"![c{i}](image {i % 50})" for i in range(10_000))
    started = time.monotonic()
    html = str(rendered_answer(shown(answer, (0, 1)), lambda n: f"/img/{n}.jpg"))
    assert time.monotonic() - started < 5
    assert html.count("<img") == 2 and "c2" not in html


@pytest.fixture
def m2rag_run(teams, splits, make_entry, make_user):
    Task.objects.filter(pk=splits["public-test"].task_id).update(
        benchmark="m2rag", primary_metric="overall"
    )
    run = make_entry(teams["alpha"], splits["public-test"], 0.3)
    stored = default_storage.save("thumbnails/x/placed-480.jpg", ContentFile(jpeg()))
    answer = ItemAnswer.objects.create(
        run=run, group="science", item_key="q1", position=0, images={"0": stored},
        response='{"answer": "raw reply", "failed": false}',
    )  # fmt: skip
    ItemVerdict.objects.create(
        answer=answer, verdict="0.7", judge_id="j", detail=to_row(graded(HOSTILE, (0, 2)))
    )
    return {"run": run, "answer": answer, "alice": make_user("alice", team=teams["alpha"]),
            "bob": make_user("bob", team=teams["beta"])}  # fmt: skip


def test_the_run_page_shows_the_answer_as_it_reads_with_its_images(client, m2rag_run):
    run, answer = m2rag_run["run"], m2rag_run["answer"]
    client.force_login(m2rag_run["alice"])
    html = client.get(reverse("leaderboard:run", args=[run.pk])).content.decode()
    image = reverse("leaderboard:answer-image", args=[run.pk, answer.pk, 0])
    assert f'<img src="{image}"' in html and "raw reply" not in html
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    # image 2 has no stored copy: its caption, as text
    assert '<span class="image-missing">[image: caption" onerror="alert(1)]</span>' in html
    response = client.get(image)
    assert response.status_code == 200 and response["Content-Type"] == "image/jpeg"
    assert b"".join(response.streaming_content) == jpeg()
    missing = reverse("leaderboard:answer-image", args=[run.pk, answer.pk, 2])
    assert client.get(missing).status_code == 404
    client.force_login(m2rag_run["bob"])
    assert client.get(image).status_code == 404  # another team's run
