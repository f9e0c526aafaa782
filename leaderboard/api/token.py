"""``POST /api/token/``: a user's API token, for a username and password; throttled per address
(the ``token`` rate) and locked after repeated failures like the sign-in form (django-axes)."""

from __future__ import annotations

from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from podium.lockout import locked_out


class TokenView(ObtainAuthToken):
    throttle_classes = (ScopedRateThrottle,)
    throttle_scope = "token"

    def post(self, request: Request, *args, **kwargs) -> Response:
        try:
            return super().post(request, *args, **kwargs)
        except ValidationError:
            # django-axes marks the request it was given (DRF's) when the account is locked.
            if getattr(request, "axes_locked_out", False):
                return locked_out(request._request)  # type: ignore[return-value]
            raise
