"""A challenge's pages: tabs for what its organisers wrote (Markdown, sanitised) and its
leaderboards; the rules accepted before the first submission, and again when they change."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from leaderboard.models import Challenge, TermsAcceptance
from leaderboard.pages import rendered
from leaderboard.submitting import Artifact, MethodInfo, submit
from tests.leaderboard.submit_support import open_splits

__all__ = ["open_splits"]  # a fixture used by name


def test_markdown_is_rendered_and_sanitised():
    html = str(rendered(
        "# Title\n\n**bold** [ok](https://x.org) [bad](javascript:alert(1))\n\n"
        "<script>alert(1)</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    ))  # fmt: skip
    assert "<h1>Title</h1>" in html and "<strong>bold</strong>" in html
    assert 'href="https://x.org"' in html and 'href="javascript' not in html  # left as text
    assert "<script>" not in html and "&lt;script&gt;" in html  # shown as text
    assert "<table>" in html


def test_tabs_show_the_written_pages_then_the_leaderboards(client, challenge, splits):
    Challenge.objects.filter(pk=challenge.pk).update(
        overview="Welcome to **the** challenge.", data="Download the *validation* split."
    )
    url = reverse("leaderboard:challenge", args=[challenge.slug])
    page = client.get(url).content.decode()
    assert "<strong>the</strong>" in page  # the overview is the first tab
    assert 'href="?tab=data"' in page and 'href="?tab=leaderboards"' in page
    assert 'href="?tab=rules"' not in page  # nothing written: no tab
    assert "Multi-turn QA" in client.get(url, {"tab": "leaderboards"}).content.decode()
    assert client.get(url, {"tab": "rules"}).status_code == 404


def test_the_rules_are_accepted_before_submitting_and_again_when_they_change(
    client, challenge, open_splits, make_user, teams
):
    ann = make_user("ann", team=teams["alpha"])
    Challenge.objects.filter(pk=challenge.pk).update(rules="Be fair. No hand labelling.")
    challenge.refresh_from_db()

    def send():
        artifact = Artifact(kind="registry-ref", registry_ref="a/b:1")
        return submit(teams["alpha"], challenge, ann, artifact, MethodInfo(method_name="m"))

    with pytest.raises(ValidationError, match=r"accept the rules of CRAG-MM 2026 first"):
        send()
    client.force_login(ann)
    url = reverse("leaderboard:challenge", args=[challenge.slug])
    page = client.post(f"{url}?tab=rules", follow=True).content.decode()
    assert "You accepted these rules on" in page
    assert send().pk
    Challenge.objects.filter(pk=challenge.pk).update(rules="Be fair. No hand labelling. New: …")
    challenge.refresh_from_db()
    with pytest.raises(ValidationError, match="they changed since you last accepted them"):
        send()
    assert "I accept these rules" in client.get(url, {"tab": "rules"}).content.decode()
    assert TermsAcceptance.objects.filter(user=ann).count() == 1
