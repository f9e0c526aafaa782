"""Challenges as code through the API (``python -m podium.cli challenge``), token or session:

- ``POST /api/bundles/validate/``, ``.../diff/``, ``.../import/``: a bundle zip as the
  multipart field ``bundle`` (and ``redo_runs``: true to run the submissions of a split that
  gets a new version again on it); 200 with the changes and each changed page's text diff
  (``pages``; and, validating, the publish checklist; importing, the new version;
  ``runs_queued``), 400 with every problem (``file``,
  ``line``, ``field``, ``message``), 403 for someone who does not organise the challenge (a
  new one: staff), decided before the zip is unpacked; for someone who organises none, before
  the upload is opened;
- ``GET /api/challenges/<slug>/bundle/``: the live challenge as a bundle zip, private splits
  included: its organisers only (404 for anyone else).
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import FileResponse, Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BooleanField
from rest_framework.views import APIView

from leaderboard.challenge_bundle import admission, uploads
from leaderboard.challenge_bundle.problems import BundleInvalid
from leaderboard.models import Challenge
from leaderboard.permissions import is_organiser, signed_in
from leaderboard.views.bundle import zip_response


class BundleView(APIView):
    permission_classes = (IsAuthenticated,)
    parser_classes = (MultiPartParser,)

    @extend_schema(
        request={"multipart/form-data": {"type": "object", "properties": {
            "bundle": {"type": "string", "format": "binary"},
            "redo_runs": {"type": "boolean", "default": False}}}},
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
    )  # fmt: skip
    def post(self, request: Request, action: str) -> Response:
        """Validate, diff or import a challenge bundle (a zip)."""
        if action not in uploads.ACTIONS:
            raise Http404
        user = signed_in(request.user)
        try:
            admission.refuse_stranger(user)  # before the upload is opened
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        upload = request.FILES.get("bundle")
        if upload is None:
            raise ValidationError({"bundle": "attach the bundle as a zip file"})
        try:
            redo_runs = BooleanField().to_internal_value(request.POST.get("redo_runs", False))
        except ValidationError:
            raise ValidationError({"redo_runs": "true or false"}) from None
        try:
            outcome = uploads.run(upload, action, user, "api", redo_runs=redo_runs)
        except BundleInvalid as exc:
            return Response(
                {"problems": [p.as_json() for p in exc.problems]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        return Response(uploads.outcome_json(outcome))


class ExportView(APIView):
    permission_classes = (IsAuthenticated,)

    @extend_schema(responses={200: OpenApiTypes.BINARY})
    def get(self, request: Request, slug: str) -> FileResponse:
        """The challenge as a bundle zip (its organisers only)."""
        challenge = Challenge.objects.filter(slug=slug).first()
        if challenge is None or not is_organiser(request.user, challenge):
            raise Http404
        return zip_response(challenge)
