"""``POST /api/token/``: a new API token for a username and password, its key shown this once;
throttled per address (the ``token`` rate) and locked after repeated failures like the sign-in
form (django-axes). Each call makes another token (named ``name``, else after the call's time),
so a key given to one machine is never handed to another; old ones are revoked on the account
page, expire, or go with a password change (``leaderboard.api_tokens``)."""

from __future__ import annotations

from django.contrib.auth import authenticate
from django.utils import timezone
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import parsers, renderers, serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from leaderboard import api_tokens
from leaderboard.models.api_token import NAME_MAX_LENGTH
from podium.lockout import locked_out


class TokenRequest(serializers.Serializer[dict[str, object]]):
    username = serializers.CharField(write_only=True)
    password = serializers.CharField(write_only=True, trim_whitespace=False)
    name = serializers.CharField(required=False, max_length=NAME_MAX_LENGTH)

    def validate(self, attrs: dict[str, object]) -> dict[str, object]:
        user = authenticate(
            request=self.context["request"],
            username=attrs["username"],
            password=attrs["password"],
        )
        if user is None:
            raise ValidationError(
                "Unable to log in with provided credentials.", code="authorization"
            )
        attrs["user"] = user
        return attrs


class TokenView(APIView):
    authentication_classes = ()  # the username and password are the credentials
    permission_classes = ()
    throttle_classes = (ScopedRateThrottle,)
    throttle_scope = "token"
    parser_classes = (parsers.FormParser, parsers.MultiPartParser, parsers.JSONParser)
    renderer_classes = (renderers.JSONRenderer,)

    @extend_schema(
        request=TokenRequest,
        responses=inline_serializer(
            "NewToken",
            {
                "token": serializers.CharField(help_text="the key, shown this once"),
                "name": serializers.CharField(),
                "expiry": serializers.DateTimeField(),
            },
        ),
    )
    def post(self, request: Request) -> Response:
        asked = TokenRequest(data=request.data, context={"request": request})
        try:
            asked.is_valid(raise_exception=True)
        except ValidationError:
            # django-axes marks the request it was given (DRF's) when the account is locked.
            if getattr(request, "axes_locked_out", False):
                return locked_out(request._request)  # type: ignore[return-value]
            raise
        name = asked.validated_data.get("name") or f"API {timezone.now():%Y-%m-%d %H:%M:%S} UTC"
        try:
            token, key = api_tokens.create(asked.validated_data["user"], name)
        except api_tokens.TokenError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        expiry = token.expiry.isoformat() if token.expiry else None
        return Response({"token": key, "name": token.name, "expiry": expiry})
