"""What a locked-out sign-in gets (django-axes calls ``locked_out``): HTTP 429 saying when to try
again, as JSON with ``Retry-After`` for the API and as a page for the sign-in forms.

A lock holds one username from one address (``AXES_LOCKOUT_PARAMETERS``) for the cool-off
time; organisers see attempts and lockouts in the admin (Axes) and lift one there or with
``manage.py axes_reset_username NAME``.
"""

from __future__ import annotations

import math

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


def cooloff_s() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds())


def lockout_message() -> str:
    minutes = math.ceil(cooloff_s() / 60)
    return (
        f"Too many failed sign-ins for this account from this address: it is locked for "
        f"{minutes} minutes. Try again later, or ask an organiser to lift the lock."
    )


def locked_out(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict | None = None,
) -> HttpResponse:
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": lockout_message()}, status=429)
    else:
        context = {"message": lockout_message()}
        response = render(request, "registration/locked_out.html", context, status=429)
    response["Retry-After"] = str(cooloff_s())
    return response
