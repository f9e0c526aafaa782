"""What a locked-out sign-in gets (django-axes calls ``locked_out``): HTTP 429 saying when to try
again, as JSON with ``Retry-After`` for the API and as a page for the sign-in forms.

A lock holds one username from one address (``AXES_LOCKOUT_PARAMETERS``) for the cool-off
time, counted again from each attempt made while locked; organisers see attempts and lockouts in
the admin (Axes) and lift one there or with ``manage.py axes_reset_username NAME``.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from rest_framework.throttling import BaseThrottle


def client_address(request: HttpRequest) -> str | None:
    """The client's address, the same for the sign-in lock and the API throttles: the connecting
    address, or with ``NUM_PROXIES`` (``PODIUM_PROXY_COUNT``) trusted proxies in front, the one
    the farthest of them put in X-Forwarded-For (earlier entries are the client's to forge)."""
    # The stubs ask for DRF's Request; get_ident reads only request.META, which any HttpRequest has.
    return BaseThrottle().get_ident(request)  # type: ignore[arg-type]


def username(request: HttpRequest, credentials: dict[str, Any] | None = None) -> str | None:
    """The username a sign-in tried: ``username`` (the admin, the API token endpoint, allauth's
    backend) or ``login`` (allauth's form: a username or an e-mail address)."""
    for source in (credentials or {}, request.POST if request is not None else {}):
        for field in ("username", "login", "email"):
            if value := source.get(field):
                return str(value)
    return None


def cooloff_s() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds())


def locked_until() -> datetime:
    """When the lock ends if no one tries again: the attempt just refused restarted it."""
    return timezone.now() + settings.AXES_COOLOFF_TIME


def lockout_message(until: datetime) -> str:
    minutes = math.ceil(cooloff_s() / 60)
    return (
        f"Too many failed sign-ins for this account from this address: it is locked for "
        f"{minutes} minutes, until {until:%H:%M} UTC. Try again after that (an attempt before "
        f"then starts the wait again), or ask an organiser to lift the lock."
    )


def locked_out(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict[str, Any] | None = None,
) -> HttpResponse:
    until = locked_until()
    message = lockout_message(until)
    if request.path.startswith("/api/"):
        body = {"detail": message, "locked_until": until.isoformat(timespec="seconds")}
        response: HttpResponse = JsonResponse(body, status=429)
    else:
        response = render(request, "registration/locked_out.html", {"message": message}, status=429)
    response["Retry-After"] = str(cooloff_s())
    return response
