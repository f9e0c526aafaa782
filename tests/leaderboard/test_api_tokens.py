"""API tokens: kept as a digest and shown once, several named ones per account, expiring, each
use noted (at most once a minute), all revoked when the password changes by any road."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from django.core import mail
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from tests.leaderboard.test_settings import settings_in_process

PASSWORD = "pw-secret-123"
NEW_PASSWORD = "a-new-Secret-456"


def new_token(username: str, password: str = PASSWORD, **fields: str) -> dict:
    answer = APIClient().post(
        reverse("api:token"), {"username": username, "password": password, **fields}
    )
    assert answer.status_code == 200, answer.content
    return answer.json()


def answers(key: str) -> int:
    """The status of an API call that needs a signed-in user, made with this key."""
    return Client(HTTP_AUTHORIZATION=f"Token {key}").get("/api/submissions/").status_code


def tables_holding(text: str) -> list[str]:
    """Every table of the database with ``text`` in any column of any row."""
    found = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            if any(text in str(value) for row in cursor.fetchall() for value in row):
                found.append(table)
    return found


def account_page(client: Client) -> str:
    return client.get(reverse("leaderboard:account")).content.decode()


def tokens_table(client: Client) -> str:
    """The account page's list of tokens."""
    shown = re.search(r'<table id="api-tokens">.*?</table>', account_page(client), re.DOTALL)
    assert shown is not None
    return shown[0]


def test_a_token_authenticates_and_its_key_is_stored_nowhere(make_user):
    make_user("ann")
    key = new_token("ann")["token"]
    assert answers(key) == 200
    assert answers(key[:-1] + ("0" if key[-1] != "0" else "1")) == 401
    assert tables_holding(key) == []  # only its digest (and its first characters) are kept
    assert tables_holding(key[:20]) == []


def test_each_token_request_makes_another_named_token(client, make_user):
    ann = make_user("ann")
    first = new_token("ann", name="laptop")
    second = new_token("ann")
    assert first["token"] != second["token"]
    assert answers(first["token"]) == answers(second["token"]) == 200
    assert first["name"] == "laptop" and second["name"].startswith("API ")
    expiry = datetime.fromisoformat(first["expiry"])
    assert abs(expiry - (timezone.now() + timedelta(days=90))) < timedelta(minutes=1)
    client.force_login(ann)
    page = account_page(client)
    assert "laptop" in page and second["name"] in page
    assert first["token"] not in page and second["token"] not in page


def test_an_expired_token_is_refused(make_user, monkeypatch):
    make_user("ann")
    key = new_token("ann")["token"]
    now = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: now + timedelta(days=89, hours=23))
    assert answers(key) == 200
    monkeypatch.setattr(timezone, "now", lambda: now + timedelta(days=90, minutes=1))
    refused = Client(HTTP_AUTHORIZATION=f"Token {key}").get("/api/submissions/")
    assert refused.status_code == 401 and "expired" in refused.json()["detail"]


def test_the_lifetime_is_a_setting(tmp_path):
    show = "import django; django.setup(); from knox.settings import knox_settings as k; "
    done = settings_in_process(
        tmp_path, code=show + "print(k.TOKEN_TTL)", PODIUM_API_TOKEN_TTL_DAYS="7"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "7 days, 0:00:00"
    done = settings_in_process(tmp_path, code=show, PODIUM_API_TOKEN_TTL_DAYS="0")
    assert done.returncode != 0 and "PODIUM_API_TOKEN_TTL_DAYS='0': expected at least 1" in (
        done.stderr
    )


def test_a_password_change_on_the_account_page_revokes_every_token(client, make_user):
    ann = make_user("ann")
    keys = [new_token("ann")["token"] for _ in range(2)]
    client.force_login(ann)
    changed = client.post(
        reverse("account_change_password"),
        {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert changed.status_code == 302
    assert [answers(key) for key in keys] == [401, 401]
    assert answers(new_token("ann", NEW_PASSWORD)["token"]) == 200


def test_a_password_reset_revokes_every_token(client, make_user):
    make_user("ann")
    key = new_token("ann")["token"]
    client.post(reverse("account_reset_password"), {"email": "ann@example.org"})
    link = re.search(r"https?://[^/\s]+(/accounts/password/reset/key/\S+/)", mail.outbox[-1].body)
    assert link is not None, mail.outbox[-1].body
    form = client.get(link[1], follow=True)
    done = client.post(
        form.redirect_chain[-1][0] if form.redirect_chain else link[1],
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert done.status_code == 302, done.content.decode()[:2000]
    assert User.objects.get(username="ann").check_password(NEW_PASSWORD)
    assert answers(key) == 401


def test_an_organiser_setting_a_password_in_the_admin_revokes_every_token(client, make_user):
    ann = make_user("ann")
    key = new_token("ann")["token"]
    client.force_login(User.objects.create_superuser("root", "root@example.org", "x"))
    changed = client.post(
        reverse("admin:auth_user_password_change", args=[ann.pk]),
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
    )
    assert changed.status_code == 302
    assert answers(key) == 401


def test_the_same_password_hashed_again_revokes_nothing(make_user, settings):
    """Django re-hashes a password at a sign-in when its hasher is no longer the first one."""
    make_user("ann")  # hashed with MD5 (the tests' hasher)
    key = new_token("ann")["token"]
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
        "django.contrib.auth.hashers.MD5PasswordHasher",
    ]
    second = new_token("ann")["token"]  # the sign-in upgrades the stored hash
    assert User.objects.get(username="ann").password.startswith("pbkdf2_sha1$")
    assert answers(key) == answers(second) == 200


@pytest.mark.parametrize(
    "change",
    [
        lambda user: user.set_password("something-else-789"),
        lambda user: user.set_unusable_password(),
        lambda user: setattr(user, "password", make_password("written-by-hand")),
    ],
    ids=["set_password", "set_unusable_password", "a hash written by hand"],
)
def test_any_new_password_saved_by_any_code_revokes_every_token(make_user, change):
    ann = make_user("ann")
    keys = [new_token("ann", name=name)["token"] for name in ("one", "two")]
    assert [answers(key) for key in keys] == [200, 200]
    ann = User.objects.get(pk=ann.pk)
    change(ann)
    ann.save()
    assert [answers(key) for key in keys] == [401, 401]


def test_a_token_made_on_the_account_page_is_shown_once(client, make_user):
    from leaderboard.models import ApiToken

    client.force_login(make_user("ann"))
    made = client.post(reverse("leaderboard:account"), {"token": "create", "name": "CI job"})
    assert made.status_code == 302, "post, redirect: a reload does not make another token"
    shown = client.get(made["Location"])
    key = re.search(r'id="new-token">[^<]*<code>([0-9a-f]+)</code>', shown.content.decode())
    assert key is not None and "no-store" in shown["Cache-Control"]
    assert key[1] not in account_page(client), "shown once: a reload shows it no more"
    assert ApiToken.objects.filter(user__username="ann").count() == 1
    assert "CI job" in tokens_table(client) and "never" in tokens_table(client)  # not used yet
    assert answers(key[1]) == 200
    assert key[1] not in account_page(client)
    assert "never" not in tokens_table(client)  # its last use is shown
    refused = client.post(reverse("leaderboard:account"), {"token": "create", "name": "  "})
    assert "give the token a name" in client.get(refused["Location"]).content.decode()


def test_one_token_or_all_are_revoked_on_the_account_page(client, make_user):
    from leaderboard.models import ApiToken

    ann = make_user("ann")
    bob = make_user("bob")
    keys = [new_token("ann", name=name)["token"] for name in ("one", "two", "three")]
    bobs = new_token("bob")["token"]
    client.force_login(ann)
    two = ApiToken.objects.get(user=ann, name="two").digest
    client.post(reverse("leaderboard:account"), {"token": "revoke", "digest": two})
    assert [answers(key) for key in keys] == [200, 401, 200]
    bob_digest = ApiToken.objects.get(user=bob).digest
    refused = client.post(reverse("leaderboard:account"), {"token": "revoke", "digest": bob_digest})
    assert "No such token of yours" in client.get(refused["Location"]).content.decode()
    client.post(reverse("leaderboard:account"), {"token": "revoke-all"})
    assert [answers(key) for key in keys] == [401, 401, 401]
    assert answers(bobs) == 200
    assert "No tokens yet" in account_page(client)


def test_last_use_is_written_at_most_once_a_minute(make_user, monkeypatch):
    from leaderboard.models import ApiToken

    make_user("ann")
    key = new_token("ann")["token"]
    token = ApiToken.objects.get(user__username="ann")
    assert token.last_used is None
    start = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: start)
    assert answers(key) == 200
    token.refresh_from_db()
    assert token.last_used == start
    monkeypatch.setattr(timezone, "now", lambda: start + timedelta(seconds=59))
    assert answers(key) == 200
    token.refresh_from_db()
    assert token.last_used == start  # not written again within the minute
    monkeypatch.setattr(timezone, "now", lambda: start + timedelta(seconds=61))
    assert answers(key) == 200
    token.refresh_from_db()
    assert token.last_used == start + timedelta(seconds=61)


def test_an_account_holds_a_bounded_number_of_tokens(make_user, settings):
    settings.REST_KNOX = {**settings.REST_KNOX, "TOKEN_LIMIT_PER_USER": 2}
    make_user("ann")
    new_token("ann")
    new_token("ann")
    third = APIClient().post(reverse("api:token"), {"username": "ann", "password": PASSWORD})
    assert third.status_code == 400
    assert "the most it may hold: revoke one on your account page" in third.json()["detail"]


@pytest.mark.parametrize("header", ["Token", "Token a b", "Token \xe9t\xe9", "Bearer x"])
def test_a_malformed_token_header_is_refused_with_401(db, header):
    answer = Client(HTTP_AUTHORIZATION=header).get("/api/submissions/")
    assert answer.status_code == 401
