"""Challenges as code on the web: the bundle's JSON Schema, published for editors."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from leaderboard.challenge_bundle.schema import schema_text


@require_GET
def schema(request: HttpRequest) -> HttpResponse:
    """``/schemas/challenge-bundle.json``: what ``challenge.yaml`` may hold."""
    response = HttpResponse(schema_text(), content_type="application/schema+json")
    response["Access-Control-Allow-Origin"] = "*"  # editors fetch it from anywhere
    return response
