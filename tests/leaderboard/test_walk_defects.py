"""Small defects found walking the site as a newcomer (issue 35): the 404 page's words, the
favicon, where the sign-up mail is when the console backend prints it, the demo's pages naming
links that exist, one breadcrumb separator."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "leaderboard" / "templates"
CONSOLE = "django.core.mail.backends.console.EmailBackend"
PASSWORD = "a-long-pass-phrase-9"


@pytest.mark.django_db
def test_a_mistyped_address_says_there_is_nothing_there_not_the_resolvers_class(client):
    response = client.get("/chalenges/typo/")
    page = response.content.decode()
    assert response.status_code == 404
    assert "There is nothing at /chalenges/typo/." in page
    assert "Resolver404" not in page and '<a class="brand"' in page


@pytest.mark.django_db
def test_a_views_own_404_words_are_kept(client, make_user):
    client.force_login(make_user("ann"))
    response = client.get(reverse("leaderboard:challenge", args=["absent"]))
    assert response.status_code == 404
    assert "No Challenge matches the given query." in response.content.decode()


@pytest.mark.django_db
def test_the_favicon_is_podiums_svg(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"].endswith("/leaderboard/favicon.svg")
    assert 'rel="icon" href="/static/leaderboard/favicon.svg"' in client.get("/").content.decode()
    assert (ROOT / "leaderboard/static/leaderboard/favicon.svg").read_text().startswith("<svg")


def _signed_up(client: Client) -> str:
    response = client.post(
        reverse("account_signup"),
        {"username": "zoe", "email": "zoe@example.org", "password1": PASSWORD,
         "password2": PASSWORD},
        follow=True,
    )  # fmt: skip
    assert response.redirect_chain[-1][0] == reverse("account_email_verification_sent")
    return response.content.decode()


@pytest.mark.django_db
def test_with_mail_on_the_console_sign_up_points_to_the_terminal_not_a_spam_folder(
    client, settings, capsys
):
    settings.EMAIL_BACKEND = CONSOLE
    page = _signed_up(client)
    assert "confirm-email" in capsys.readouterr().out, "the demo's mail, on the console"
    assert 'id="mail-on-console"' in page and "in the terminal where Podium runs" in page
    assert "spam" not in page
    reset = client.post(reverse("account_reset_password"), {"email": "zoe@example.org"})
    done = client.get(reset["Location"]).content.decode()
    assert "the password reset link in the terminal where Podium runs" in done
    assert "spam" not in done


@pytest.mark.django_db
def test_with_mail_sent_sign_up_mentions_the_spam_folder(client, settings, mailoutbox):
    page = _signed_up(client)  # the tests' backend keeps the mail: it is sent, not printed
    assert len(mailoutbox) == 1 and 'id="mail-sent"' in page and "spam folder" in page
    assert "terminal" not in page


@pytest.mark.parametrize("challenge", ["crag-mm-demo", "visual-rag-demo"])
def test_the_demos_participate_page_names_links_the_challenge_page_has(challenge):
    text = (ROOT / "examples/challenges" / challenge / "pages/participate.md").read_text()
    detail = (TEMPLATES / "leaderboard/challenge_detail.html").read_text()
    named = re.findall(r'the "([^"]+)" link', text)
    assert named == ["Starter kit", "Submit an agent"]
    assert all(f">{name}</a>" in detail for name in named)
    assert " tab)" not in text and " tab:" not in text


def test_breadcrumbs_are_separated_by_one_sign():
    crumbs = [
        (path.name, line)
        for path in TEMPLATES.rglob("*.html")
        for line in path.read_text().splitlines()
        if 'class="crumbs"' in line
    ]
    assert len(crumbs) > 10
    slashed = [name for name, line in crumbs if re.search(r"</a>\s*/\s*<a", line)]
    assert slashed == [], "breadcrumbs use › between their links"
