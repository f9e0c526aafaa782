"""The starter kit through the API (``python -m podium.cli kit``), token or session auth:

- ``GET /api/challenges/<slug>/kit/``: what the kit holds, its version and file name, its
  sha256 and size once made, and the base images (sha256 once saved); nothing is made;
- ``GET /api/challenges/<slug>/kit/download/``: the kit archive (made now if needed), streamed;
- ``GET /api/challenges/<slug>/kit/base-image/?image=NAME``: a base image's ``docker save``
  archive (the first allowed image by default; saved now if needed), streamed.

Downloads carry ``Content-Length`` and ``X-Content-SHA256``. Errors: 401 without
credentials, 404 for a challenge the user cannot see, 403 until the rules are accepted, 400
for an image that is not a base image, 503 when the archive cannot be made (no Docker engine,
the image not built, damaged data).
"""

from __future__ import annotations

import logging

from django.http import FileResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import APIException, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard import permissions
from leaderboard.kits import archive, base_image, contents, downloads
from leaderboard.models import Challenge

log = logging.getLogger(__name__)
ARCHIVE = OpenApiResponse(OpenApiTypes.BINARY, description="the archive, streamed")


class Unavailable(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "the archive cannot be made now"
    default_code = "unavailable"


class _KitView(APIView):
    permission_classes = (IsAuthenticated,)

    def challenge(self, request: Request, slug: str) -> Challenge:
        challenge = get_object_or_404(permissions.visible_challenges(request.user), slug=slug)
        if refusal := downloads.rules_refusal(permissions.signed_in(request.user), challenge):
            raise PermissionDenied(refusal)
        return challenge


class KitView(_KitView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, slug: str) -> Response:
        """What the challenge's starter kit holds, and where to download it."""
        plan = contents.plan(self.challenge(request, slug))
        kit = archive.stored_kit(plan)
        download = reverse("api:kit-download", args=[slug])
        images = [
            {
                "image": row.image,
                "filename": contents.archive_filename(row.image),
                "sha256": row.saved.sha256 if row.saved else None,
                "size": row.saved.size if row.saved else None,
                "built": None if row.engine_down else not row.missing,
                "download": f"{reverse('api:kit-base-image', args=[slug])}?image={row.image}",
            }
            for row in base_image.saved_base_images()
        ]
        return Response(
            {
                "challenge": slug,
                "version": plan.version,
                "filename": plan.filename,
                "sha256": kit.sha256 if kit else None,
                "size": kit.size if kit else None,
                "download": request.build_absolute_uri(download),
                "agents": list(plan.agents),
                "splits": plan.manifest["splits"],
                "withheld": [
                    {"task_id": s.task.task_id, "kind": s.kind, "why": why}
                    for s, why in plan.withheld
                ],
                "corpus": plan.corpus_sha256 is not None,
                "base_images": images,
            }
        )


class KitDownloadView(_KitView):
    @extend_schema(responses={200: ARCHIVE})
    def get(self, request: Request, slug: str) -> FileResponse:
        """The starter kit archive (tar.gz), made now when this version has none yet."""
        plan = contents.plan(self.challenge(request, slug))
        try:
            stored = archive.kit_archive(plan)
        except archive.KitError as exc:
            log.error("starter kit of %s: %s", slug, exc)
            raise Unavailable(
                "the starter kit cannot be made now: Podium's stored copy of its data is "
                "damaged (the organisers can see why in the server's log)"
            ) from None
        return downloads.streamed(stored, plan.filename)


class BaseImageDownloadView(_KitView):
    @extend_schema(
        parameters=[OpenApiParameter("image", str, description="default: the first base image")],
        responses={200: ARCHIVE},
    )
    def get(self, request: Request, slug: str) -> FileResponse:
        """A base image's ``docker save`` archive, saved now when this image ID has none."""
        self.challenge(request, slug)
        try:
            saved = base_image.base_image_archive(request.query_params.get("image"))
        except base_image.BaseImageError as exc:
            raise ValidationError({"image": [str(exc)]}) from None
        except (base_image.ImageMissing, base_image.EngineUnavailable) as exc:
            log.warning("base image download for %s: %s", slug, exc)
            raise Unavailable(base_image.unavailable_reason(exc)) from None
        return downloads.streamed(saved.archive, saved.filename)
