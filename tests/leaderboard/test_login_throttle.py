"""Sign-in throttling: a username is locked from the address that kept failing (web form, admin
and API token alike), says when to try again, and an organiser lifts the lock. The API is rate
limited, and a forged X-Forwarded-For escapes neither."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.core.management import call_command
from django.http import HttpRequest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.throttling import SimpleRateThrottle

PASSWORD = "pw-secret-123"  # make_user's
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ann(make_user):
    return make_user("ann")


@pytest.fixture
def organiser(make_user):
    user = make_user("root", staff=True)
    user.is_superuser = True
    user.save()
    client = Client()
    client.force_login(user)
    return client


def _form(client, password, address="10.1.1.1", url=None, **headers):
    url = url or reverse("account_login")
    field = "login" if url == reverse("account_login") else "username"  # allauth's, the admin's
    data = {field: "ann", "password": password}
    return client.post(url, data, REMOTE_ADDR=address, **headers)


def _token(client, password, address="10.1.1.1", **headers):
    data = {"username": "ann", "password": password}
    return client.post(reverse("api:token"), data, REMOTE_ADDR=address, **headers)


def _lock(client, settings, send=_form, **kwargs):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = send(client, "wrong", **kwargs)
    assert response.status_code == 429
    return response


def test_a_normal_sign_in_works_on_the_form_and_the_token_endpoint(client, ann):
    response = _form(client, PASSWORD)
    assert response.status_code == 302 and response["Location"] == reverse("leaderboard:challenges")
    answer = _token(Client(), PASSWORD)
    assert answer.status_code == 200 and answer.json()["token"]
    assert not AccessAttempt.objects.exists()
    assert AccessLog.objects.filter(username="ann", ip_address="10.1.1.1").exists()


def test_tests_can_still_sign_in_with_client_login(client, ann):
    assert client.login(request=HttpRequest(), username="ann", password=PASSWORD)
    assert client.get(reverse("leaderboard:my-submissions")).status_code == 200


def test_the_sign_in_form_locks_after_the_limit_and_says_when_to_retry(client, ann, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _form(client, "wrong").status_code == 200  # the form again, with its error
    locked = _form(client, "wrong")
    assert locked.status_code == 429 and locked["Retry-After"] == "900"
    page = locked.content.decode()
    assert "<h1>Sign-in locked</h1>" in page and "locked for 15 minutes" in page
    until = (timezone.now() + timedelta(minutes=15)).strftime("%H:")
    assert re.search(rf"until {until}\d\d UTC\. Try again after that", page), page
    assert "ask an organiser to lift the lock" in page
    right = _form(client, PASSWORD)
    assert right.status_code == 429, "the right password is refused while locked"
    # Another address is not locked out of the same account.
    assert _form(client, PASSWORD, address="10.2.2.2").status_code == 302


def test_the_admin_sign_in_is_locked_too(client, make_user, settings):
    make_user("ann", staff=True)
    url = reverse("admin:login")
    _lock(client, settings, url=url)
    assert _form(client, PASSWORD, url=url).status_code == 429


def test_the_api_token_locks_with_a_json_429(client, ann, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _token(client, "wrong").status_code == 400
    locked = _token(client, "wrong")
    assert locked.status_code == 429 and int(locked["Retry-After"]) == 900
    body = locked.json()
    assert "locked for 15 minutes" in body["detail"]
    until = datetime.fromisoformat(body["locked_until"]) - timezone.now()
    assert timedelta(minutes=14) < until <= timedelta(minutes=15)
    assert _token(client, PASSWORD).status_code == 429


def test_an_organiser_lifts_the_lock_on_the_command_line(client, ann, settings):
    _lock(client, settings, send=_token)
    assert _token(client, PASSWORD).status_code == 429
    call_command("axes_reset_username", "ann")
    answer = _token(client, PASSWORD)
    assert answer.status_code == 200 and answer.json()["token"]


def test_an_organiser_lifts_the_lock_in_the_admin(client, ann, organiser, settings):
    _lock(client, settings)
    attempt = AccessAttempt.objects.get(username="ann", ip_address="10.1.1.1")
    listing = organiser.get(reverse("admin:axes_accessattempt_changelist"), {"locked_out": "yes"})
    assert "Locked Out" in listing.content.decode() and "10.1.1.1" in listing.content.decode()
    done = organiser.post(
        reverse("admin:axes_accessattempt_changelist"),
        {"action": "delete_selected", "_selected_action": [attempt.pk], "post": "yes"},
    )
    assert done.status_code == 302 and not AccessAttempt.objects.exists()
    assert _form(client, PASSWORD).status_code == 302


def test_every_failure_stays_listed_for_organisers_after_the_lock_is_lifted(
    client, ann, organiser, settings
):
    _lock(client, settings, send=_token)
    call_command("axes_reset_username", "ann")
    failures = AccessFailureLog.objects.filter(username="ann", ip_address="10.1.1.1")
    assert failures.count() == settings.AXES_FAILURE_LIMIT
    assert failures.filter(locked_out=True).count() == 1
    page = organiser.get(reverse("admin:axes_accessfailurelog_changelist")).content.decode()
    assert "ann" in page and "10.1.1.1" in page


def test_a_success_resets_the_count(client, ann, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _form(client, "wrong")
    assert _form(client, PASSWORD).status_code == 302
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _form(client, "wrong").status_code == 200


def test_the_limit_and_cool_off_are_settings(client, ann, settings):
    settings.AXES_FAILURE_LIMIT = 2
    settings.AXES_COOLOFF_TIME = timedelta(minutes=1)
    assert _token(client, "wrong").status_code == 400
    locked = _token(client, "wrong")
    assert locked.status_code == 429 and locked["Retry-After"] == "60"
    assert "locked for 1 minutes" in locked.json()["detail"]


def test_the_token_endpoint_and_the_api_are_rate_limited(client, ann, monkeypatch):
    monkeypatch.setitem(SimpleRateThrottle.THROTTLE_RATES, "token", "3/min")
    monkeypatch.setitem(SimpleRateThrottle.THROTTLE_RATES, "anon", "4/min")
    answers = [_token(client, PASSWORD, address="10.3.3.3") for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert 0 < int(answers[-1]["Retry-After"]) <= 60
    assert "throttled" in answers[-1].json()["detail"].lower()
    codes = [client.get(reverse("api:challenge-list")).status_code for _ in range(5)]
    assert codes == [200, 200, 200, 200, 429]


def test_a_forged_forwarded_for_escapes_neither_the_lock_nor_the_throttle(
    client, ann, settings, monkeypatch
):
    monkeypatch.setitem(SimpleRateThrottle.THROTTLE_RATES, "token", "3/min")
    codes = [
        _token(
            client, PASSWORD, address="10.4.4.4", HTTP_X_FORWARDED_FOR=f"192.0.2.{i}"
        ).status_code
        for i in range(4)
    ]
    assert codes == [200, 200, 200, 429]
    for i in range(settings.AXES_FAILURE_LIMIT):
        response = _form(client, "wrong", HTTP_X_FORWARDED_FOR=f"198.51.100.{i}")
    assert response.status_code == 429
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"10.1.1.1"}


def test_behind_a_proxy_the_address_it_forwarded_is_the_clients(client, ann, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    proxy = {"address": "10.0.0.1"}
    _lock(client, settings, HTTP_X_FORWARDED_FOR="6.6.6.6, 10.7.7.7", **proxy)
    assert AccessAttempt.objects.get().ip_address == "10.7.7.7"
    # Another client through the same proxy still signs in.
    other = _form(Client(), PASSWORD, HTTP_X_FORWARDED_FOR="10.8.8.8", **proxy)
    assert other.status_code == 302


def _settings_in_process(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PODIUM_", "DATABASE_"))}
    clean.update(DJANGO_SETTINGS_MODULE="podium.settings", PODIUM_VAR_DIR=str(tmp_path), **env)
    show = (
        "from django.conf import settings as s; "
        "print(s.CACHES['default']['BACKEND'], s.AXES_FAILURE_LIMIT, s.AXES_COOLOFF_TIME, "
        "s.REST_FRAMEWORK['NUM_PROXIES'])"
    )
    return subprocess.run(
        [sys.executable, "-c", show],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_settings_come_from_the_environment(tmp_path):
    done = _settings_in_process(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "django.core.cache.backends.locmem.LocMemCache",
        "5",
        "0:15:00",
        "0",
    ]
    done = _settings_in_process(
        tmp_path,
        PODIUM_CACHE_URL="redis://127.0.0.1:6379/1",
        PODIUM_LOGIN_FAILURE_LIMIT="8",
        PODIUM_LOGIN_COOLOFF_MIN="30",
        PODIUM_PROXY_COUNT="1",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "django.core.cache.backends.redis.RedisCache",
        "8",
        "0:30:00",
        "1",
    ]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PODIUM_LOGIN_FAILURE_LIMIT", "0"),
        ("PODIUM_LOGIN_COOLOFF_MIN", "soon"),
        ("PODIUM_PROXY_COUNT", "-1"),
        ("PODIUM_CACHE_URL", "memcached://127.0.0.1"),
    ],
)
def test_a_bad_setting_stops_start_up_naming_it(tmp_path, name, value):
    done = _settings_in_process(tmp_path, **{name: value})
    assert done.returncode != 0 and name in done.stderr
