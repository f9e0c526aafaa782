"""Site-wide answers: the 404 page (``handler404`` in ``podium/urls.py``) and ``/favicon.ico``."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The 404 page: a view's own words (``Http404("No such team")``) when it gave some; else,
    as for a mistyped address (Django's resolver gives no words, only its class), the path."""
    said = exception.args[0] if exception.args else None
    context = {"request_path": request.path, "exception": said if isinstance(said, str) else ""}
    return render(request, "404.html", context, status=404)


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask every site for ``/favicon.ico``; Podium's icon is a static SVG."""
    return redirect(static("leaderboard/favicon.svg"), permanent=True)
