"""``GET /api/challenges/<slug>/answers.<csv|jsonl|parquet>`` (``?task=&split=`` for one
split): every run's answers and verdicts, streamed (``leaderboard.answer_export``); its
organisers only (404 for anyone else), token or session."""

from __future__ import annotations

from django.http import Http404
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.views import APIView

from leaderboard.models import Challenge
from leaderboard.permissions import is_organiser
from leaderboard.views.answer_export import response


class AnswerExportView(APIView):
    permission_classes = (IsAuthenticated,)

    @extend_schema(
        parameters=[
            OpenApiParameter("task", str, description="a task id (with split)"),
            OpenApiParameter("split", str, description="a split's kind (with task)"),
        ],
        responses={200: OpenApiTypes.BINARY, 400: OpenApiTypes.STR},
    )
    def get(self, request: Request, slug: str, fmt: str) -> HttpResponseBase:
        """Every run's per-item answers and verdicts as CSV, JSON Lines or Parquet (organisers
        only)."""
        challenge = Challenge.objects.filter(slug=slug).first()
        if challenge is None or not is_organiser(request.user, challenge):
            raise Http404
        return response(
            challenge,
            fmt,
            request.query_params.get("task", ""),
            request.query_params.get("split", ""),
        )
