"""Sign-in throttling: a username is locked from the address that kept failing (web form, admin
and API token alike), says when to try again, and an organiser lifts the lock."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.throttling import SimpleRateThrottle

PASSWORD = "pw-secret-123"  # make_user's


@pytest.fixture
def ann(make_user):
    return make_user("ann")


def _form(client, password, address="10.1.1.1", url=None):
    url = url or reverse("login")
    return client.post(url, {"username": "ann", "password": password}, REMOTE_ADDR=address)


def _token(client, password, address="10.1.1.1"):
    return client.post(
        reverse("api:token"), {"username": "ann", "password": password}, REMOTE_ADDR=address
    )


def test_the_sign_in_form_locks_after_the_limit_and_says_when_to_retry(client, ann, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _form(client, "wrong").status_code == 200  # the form again, with its error
    locked = _form(client, "wrong")
    assert locked.status_code == 429 and locked["Retry-After"] == "900"
    assert "locked for 15 minutes" in locked.content.decode()
    right = _form(client, PASSWORD)
    assert right.status_code == 429, "the right password is refused while locked"
    # Another address is not locked out of the same account.
    assert _form(client, PASSWORD, address="10.2.2.2").status_code == 302


def test_the_admin_sign_in_is_locked_too(client, make_user, settings):
    make_user("ann", staff=True)
    url = reverse("admin:login")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = _form(client, "wrong", url=url)
    assert response.status_code == 429
    assert _form(client, PASSWORD, url=url).status_code == 429


def test_the_api_token_locks_with_a_json_429(client, ann, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _token(client, "wrong").status_code == 400
    locked = _token(client, "wrong")
    assert locked.status_code == 429 and int(locked["Retry-After"]) == 900
    assert "locked for 15 minutes" in locked.json()["detail"]
    assert _token(client, PASSWORD).status_code == 429


def test_an_organiser_lifts_the_lock(client, ann, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _token(client, "wrong")
    assert _token(client, PASSWORD).status_code == 429
    call_command("axes_reset_username", "ann")
    answer = _token(client, PASSWORD)
    assert answer.status_code == 200 and answer.json()["token"]


def test_a_success_resets_the_count(client, ann, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _form(client, "wrong")
    assert _form(client, PASSWORD).status_code == 302
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _form(client, "wrong").status_code == 200


def test_failed_attempts_are_listed_for_organisers(client, ann, make_user, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _token(client, "wrong")
    admin = make_user("root", staff=True)
    admin.is_superuser = True
    admin.save()
    client.force_login(admin)
    page = client.get(reverse("admin:axes_accessattempt_changelist")).content.decode()
    assert "ann" in page and "10.1.1.1" in page


def test_the_token_endpoint_and_the_api_are_rate_limited(client, ann, monkeypatch):
    monkeypatch.setitem(SimpleRateThrottle.THROTTLE_RATES, "token", "3/min")
    monkeypatch.setitem(SimpleRateThrottle.THROTTLE_RATES, "anon", "4/min")
    codes = [_token(client, PASSWORD, address="10.3.3.3").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    codes = [client.get(reverse("api:challenge-list")).status_code for _ in range(5)]
    assert codes == [200, 200, 200, 200, 429]
