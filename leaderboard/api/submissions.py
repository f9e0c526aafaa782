"""Submissions through the API: list and read (the user's teams'), create, set flags.

Create goes through ``leaderboard.submitting.submit``, the web form's code path; a multipart
upload arrives as a temporary file (``TemporaryFileUploadHandler``), never in memory.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from leaderboard import permissions
from leaderboard.api import serializers
from leaderboard.models import Submission, SubmissionTask, Team
from leaderboard.standing import SEEN_BY_TEAM
from leaderboard.submitting import (
    Artifact,
    Choice,
    MethodInfo,
    QuotaExceeded,
    set_flags,
    submit,
)

Kind = Submission.ArtifactKind


class QuotaExhausted(APIException):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_detail = "no submission left in the team's quota"
    default_code = "quota_exceeded"


def requested_team(request: Request, name: str | None) -> Team:
    """The team named, or the user's only team; membership is checked by ``submit``/``admit``
    (403 for another team's)."""
    if name:
        team = Team.objects.filter(name=name).first()
        if team is None:
            raise ValidationError({"team": [f"no team {name!r}"]})
        return team
    mine = list(permissions.user_teams(request.user)[:2])
    if len(mine) != 1:
        why = "you are in no team" if not mine else "you are in several teams; name one"
        raise ValidationError({"team": [why]})
    return mine[0]


def as_api_error(exc: DjangoValidationError) -> ValidationError:
    """A Django ``ValidationError`` as DRF's: messages per field, else ``non_field_errors``."""
    if hasattr(exc, "error_dict"):
        return ValidationError(exc.message_dict)
    return ValidationError({"non_field_errors": exc.messages})


class SubmissionViewSet(viewsets.ReadOnlyModelViewSet[Submission]):
    """The submissions of the user's teams (all of them for organisers), each with its standing
    and the actions on it and its runs (``standing.seen_by_team``)."""

    serializer_class = serializers.SubmissionSerializer
    permission_classes = (IsAuthenticated,)
    parser_classes = (MultiPartParser, FormParser, JSONParser)
    http_method_names = ("get", "post", "patch", "head", "options")

    def get_queryset(self) -> QuerySet[Submission]:
        return (
            permissions.visible_submissions(self.request.user)
            .select_related("team", "challenge")
            .prefetch_related(
                Prefetch("runs", serializers.runs_with_scores()),
                Prefetch("chosen_tasks", SubmissionTask.objects.select_related("task")),
                *SEEN_BY_TEAM,
            )
            .order_by("-created_at")
        )

    @extend_schema(
        request={
            "multipart/form-data": serializers.SubmissionCreateSerializer,
            "application/json": serializers.SubmissionCreateSerializer,
        },
        responses={
            201: serializers.SubmissionSerializer,
            400: OpenApiResponse(description="invalid artifact or metadata; messages per field"),
            403: OpenApiResponse(description="not a member of the team; baseline flag"),
            429: OpenApiResponse(description="the team's quota on a task is used up"),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Submit an agent: an uploaded file (multipart) or a registry reference."""
        given = serializers.SubmissionCreateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        data = given.validated_data
        visible = permissions.visible_challenges(request.user).filter(slug=data["challenge"])
        challenge = visible.first()
        if challenge is None:
            raise ValidationError({"challenge": [f"no challenge {data['challenge']!r}"]})
        team = requested_team(request, data.get("team"))
        artifact = Artifact(
            kind=data["artifact_kind"],
            file=data.get("artifact"),
            registry_ref=data.get("registry_ref", ""),
        )
        try:
            submission = submit(
                team,
                challenge,
                permissions.signed_in(request.user),
                artifact,
                MethodInfo.from_data(data),
                choice=Choice.from_data(data),
                is_baseline=data["is_baseline"],
            )
        except DjangoValidationError as exc:
            raise as_api_error(exc) from None
        except QuotaExceeded as exc:
            raise QuotaExhausted(str(exc)) from None
        submission = self.get_queryset().get(pk=submission.pk)
        body = serializers.SubmissionSerializer(submission, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=serializers.SubmissionFlagsSerializer,
        responses={200: serializers.SubmissionSerializer},
    )
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Set ``is_baseline`` (organisers) or ``chosen_for_final`` (the team)."""
        submission = self.get_object()
        given = serializers.SubmissionFlagsSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        set_flags(submission, permissions.signed_in(request.user), **given.validated_data)
        body = serializers.SubmissionSerializer(submission, context={"request": request}).data
        return Response(body)
