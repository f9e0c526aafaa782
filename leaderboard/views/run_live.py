"""What a run page fetches beside itself: each answer's image thumbnail (and the images an
M2RAG answer places) and the agent's output
while the run goes on. Both follow the answers' rule (``permissions.can_see_answers``): the
run's team off the private test, and the challenge's organisers; anyone else gets 404."""

from __future__ import annotations

import hashlib

from django.contrib.auth.decorators import login_required
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404
from django.utils.cache import patch_cache_control

from leaderboard import permissions
from leaderboard.models import EvaluationRun, ItemAnswer
from leaderboard.views.runs import visible_run

THUMBNAIL_MAX_AGE_S = 7 * 24 * 3600  # a thumbnail's bytes never change under its name


def _answers_run(request: HttpRequest, run_id: int) -> EvaluationRun:
    run = visible_run(request, run_id)
    if not permissions.can_see_answers(request.user, run):
        raise Http404("this run's answers are not shown to you")
    return run


@login_required
def answer_thumbnail(request: HttpRequest, run_id: int, answer_id: int) -> HttpResponseBase:
    """The answer's image, scaled down (``leaderboard.pipeline.thumbnails``), cached privately by
    the browser; a request naming the same version answers 304."""
    run = _answers_run(request, run_id)
    answer = get_object_or_404(ItemAnswer, run=run, pk=answer_id)
    if not answer.thumbnail:
        raise Http404("this answer has no image")
    return thumbnail_response(request, answer.thumbnail)


@login_required
def answer_image(request: HttpRequest, run_id: int, answer_id: int, index: int) -> HttpResponseBase:
    """Image ``index`` as the answer places it within its text (M2RAG), scaled down."""
    run = _answers_run(request, run_id)
    answer = get_object_or_404(ItemAnswer, run=run, pk=answer_id)
    name = (answer.images or {}).get(str(index))
    if not name:
        raise Http404("this answer places no such image")
    return thumbnail_response(request, name)


def thumbnail_response(request: HttpRequest, name: str) -> HttpResponseBase:
    """The thumbnail stored as ``name``, cached privately by the browser; a request naming
    the same version answers 304 (the judge audits' items serve theirs so too)."""
    etag = '"' + hashlib.sha1(name.encode("utf-8")).hexdigest() + '"'
    response: HttpResponseBase
    if request.headers.get("If-None-Match") == etag:
        response = HttpResponse(status=304)
    else:
        try:
            response = FileResponse(default_storage.open(name, "rb"), content_type="image/jpeg")
        except FileNotFoundError:
            raise Http404("the image is gone from storage") from None
    response["ETag"] = etag
    patch_cache_control(response, private=True, max_age=THUMBNAIL_MAX_AGE_S)
    return response


@login_required
def run_log(request: HttpRequest, run_id: int) -> JsonResponse:
    """The agent's output so far (the stored tail, at most 64 KiB), polled by the run page
    while the run is active."""
    run = _answers_run(request, run_id)
    response = JsonResponse(
        {
            "id": run.pk,
            "state": run.state,
            "finished": run.state in EvaluationRun.TERMINAL_STATES,
            "log": run.agent_log,
        }
    )
    patch_cache_control(response, no_store=True)
    return response
