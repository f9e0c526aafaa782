"""``GET /api/challenges/<slug>/quota/``: may this team submit now, on these tasks and splits?

Asked before an upload starts (the CLI and the web form's script do), so that a spent quota, a
closed phase or a wrong choice of tasks is refused before a byte of the image is sent. It makes
every check ``submit`` makes without an artifact (``leaderboard.submitting.admit``), then reads
the chosen tasks' quotas. ``submit`` checks them again under the team's row lock: this answer is
advice, that check is the authority.

``POST`` (a JSON body: the same choice, and what the client read from its build context: the
``Dockerfile`` and the manifests ``evaluator.tar_scan.MANIFESTS``) also checks the declared
models and base images as the upload will (``leaderboard.submitting.runnable``): 400 on
``artifact`` naming the models the challenge provides and the bases it allows.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluator.tar_scan import MANIFESTS, MAX_DOCKERFILE_BYTES, MAX_MANIFEST_BYTES
from leaderboard import permissions, quotas
from leaderboard.api.submissions import as_api_error, requested_team
from leaderboard.models import Challenge
from leaderboard.submitting import Choice, admit
from leaderboard.submitting.runnable import check_context


class TaskQuotaSerializer(serializers.Serializer[dict[str, object]]):
    """The team's use of one chosen task's quotas (limits: null is unlimited) and the splits a
    submission would run on now."""

    task = serializers.CharField(source="task.task_id")
    splits = serializers.ListField(child=serializers.CharField())
    quota_per_day = serializers.IntegerField(source="task.quota_per_day", allow_null=True)
    today = serializers.IntegerField()
    next_daily_slot = serializers.DateTimeField(allow_null=True)
    quota_total = serializers.IntegerField(source="task.quota_total", allow_null=True)
    total = serializers.IntegerField()
    quota_concurrent = serializers.IntegerField(source="task.quota_concurrent", allow_null=True)
    concurrent = serializers.IntegerField()
    phase = serializers.CharField(source="phase.name", allow_null=True, default=None)
    phase_quota_per_day = serializers.IntegerField(
        source="phase.quota_per_day", allow_null=True, default=None
    )
    phase_today = serializers.IntegerField(help_text="submissions in the last 24 hours of it")
    phase_quota_total = serializers.IntegerField(
        source="phase.quota_total", allow_null=True, default=None
    )
    phase_total = serializers.IntegerField(help_text="submissions made during the open phase")
    remaining = serializers.IntegerField(allow_null=True)
    limit = serializers.ChoiceField(
        choices=["concurrent", "total", "phase_total", "per_day", "phase_per_day"],
        allow_null=True,
        help_text="the quota that refuses a submission now (the tighter of the task's and the "
        "open phase's); null: allowed",
    )
    problem = serializers.CharField(allow_null=True)


class QuotaSerializer(serializers.Serializer[dict[str, object]]):
    challenge = serializers.CharField()
    team = serializers.CharField()
    exempt = serializers.BooleanField(help_text="organisers: no quota applies")
    allowed = serializers.BooleanField()
    problem = serializers.CharField(allow_null=True, help_text="why a submission is refused")
    max_artifact_bytes = serializers.IntegerField(help_text="the largest upload taken")
    tasks = TaskQuotaSerializer(many=True)


class PreflightSerializer(serializers.Serializer[dict[str, object]]):
    """The preflight's question with a build context's declarations (``POST``)."""

    team = serializers.CharField(required=False, help_text="optional when in one team")
    tasks = serializers.ListField(child=serializers.CharField(), required=False)
    splits = serializers.ListField(child=serializers.CharField(), required=False)
    filename = serializers.CharField(
        required=False, default="the build context", help_text="the file, for the messages"
    )
    dockerfile = serializers.CharField(
        required=False,
        allow_null=True,
        default=None,
        allow_blank=True,
        trim_whitespace=False,
        max_length=MAX_DOCKERFILE_BYTES,
        help_text="the context's top-level Dockerfile, as text",
    )
    manifests = serializers.DictField(
        child=serializers.CharField(
            trim_whitespace=False, allow_blank=True, max_length=MAX_MANIFEST_BYTES
        ),
        required=False,
        default=dict,
        help_text=f"its top-level {' and '.join(MANIFESTS)}, by name, as text",
    )

    def validate_manifests(self, value: dict[str, str]) -> dict[str, str]:
        if unknown := sorted(set(value) - set(MANIFESTS)):
            raise serializers.ValidationError(
                f"{', '.join(unknown)}: not a manifest ({' or '.join(MANIFESTS)})"
            )
        return value


class QuotaView(APIView):
    permission_classes = (IsAuthenticated,)

    @extend_schema(
        parameters=[
            OpenApiParameter("team", str, description="team name; optional when in one team"),
            OpenApiParameter("tasks", str, many=True, description="task ids (default: every)"),
            OpenApiParameter("splits", str, many=True, description="<task id>/<split kind>"),
        ],
        responses={
            200: QuotaSerializer,
            400: OpenApiResponse(description="a wrong task or split, a closed phase, rules"),
            403: OpenApiResponse(description="not a member of the team"),
        },
    )
    def get(self, request: Request, slug: str) -> Response:
        """Whether the team may submit now on the chosen tasks and splits, and each task's
        quota use; 200 with ``allowed`` false and the reason when a quota is spent."""
        challenge = get_object_or_404(permissions.visible_challenges(request.user), slug=slug)
        params = request.query_params
        choice = Choice.from_data({name: params.getlist(name) for name in ("tasks", "splits")})
        return self._answer(request, challenge, params.get("team"), choice)

    @extend_schema(
        request=PreflightSerializer,
        responses={
            200: QuotaSerializer,
            400: OpenApiResponse(
                description="as GET; or on `artifact`, a model the challenge does not provide "
                "or a base image it does not allow, naming those it does"
            ),
            403: OpenApiResponse(description="not a member of the team"),
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        """As ``GET``, and the build context's declared models and base images checked as the
        upload will check them. The challenge is one the user may see before the body is read
        (signed in: ``permission_classes``; a body is at most ``DATA_UPLOAD_MAX_MEMORY_SIZE``)."""
        challenge = get_object_or_404(permissions.visible_challenges(request.user), slug=slug)
        asked = PreflightSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        data = asked.validated_data
        return self._answer(request, challenge, data.get("team"), Choice.from_data(data), data)

    def _answer(
        self,
        request: Request,
        challenge: Challenge,
        team_name: str | None,
        choice: Choice,
        context: dict[str, Any] | None = None,
    ) -> Response:
        team = requested_team(request, team_name)
        now = timezone.now()
        try:
            admission = admit(team, challenge, permissions.signed_in(request.user), choice, now=now)
            if context is not None:
                label, manifests = context["filename"], context["manifests"]
                check_context(challenge, label, manifests, context["dockerfile"])
        except DjangoValidationError as exc:
            raise as_api_error(exc) from None
        chosen = admission.chosen
        usages = [quotas.usage(team, task, now) for task in chosen.tasks]
        problem = None if admission.organiser else quotas.refusal(team, usages)
        body = {
            "challenge": challenge.slug,
            "team": team.name,
            "exempt": admission.organiser,
            "allowed": problem is None,
            "problem": problem,
            "max_artifact_bytes": min(task.max_artifact_bytes for task in chosen.tasks),
            "tasks": [
                {
                    "task": use.task,
                    "splits": [s.kind for s in chosen.splits if s.task_id == use.task.pk],
                    "today": use.today,
                    "next_daily_slot": use.next_daily_slot,
                    "total": use.total,
                    "concurrent": use.concurrent,
                    "phase": use.phase,
                    "phase_today": use.phase_today,
                    "phase_total": use.phase_total,
                    "remaining": use.remaining,
                    "limit": None if admission.organiser else use.limit,
                    "problem": None if admission.organiser else use.problem(),
                }
                for use in usages
            ],
        }
        return Response(QuotaSerializer(body).data)
