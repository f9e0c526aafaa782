"""``Authorization: Token <key>``: django-rest-knox's check (the key's digest against the stored
one; an expired token refused and deleted), plus the token's last-used time, written at most
once a minute per token so that a busy client costs no write per request."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import User
from django.utils import timezone
from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme
from knox.auth import TokenAuthentication
from knox.models import AbstractAuthToken
from rest_framework.exceptions import AuthenticationFailed

from leaderboard.models import ApiToken

LAST_USED_STEP = timedelta(minutes=1)
INVALID = (
    "Invalid token: unknown, revoked (a password change revokes them all) or expired. "
    "Make a new one on your account page, /account/, or with POST /api/token/."
)


class InactiveAccount(AuthenticationFailed):
    default_detail = "This token's account is inactive."


class ApiTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, token: bytes) -> tuple[AbstractBaseUser, AbstractAuthToken]:
        try:
            token.decode("utf-8")
            return super().authenticate_credentials(token)
        except InactiveAccount:
            raise
        except (UnicodeDecodeError, AuthenticationFailed):
            raise AuthenticationFailed(INVALID) from None

    # knox hands it tokens of KNOX_TOKEN_MODEL, ApiToken here, which its stub cannot name
    def validate_user(self, auth_token: ApiToken) -> tuple[User, ApiToken]:  # type: ignore[override]
        if not auth_token.user.is_active:
            raise InactiveAccount()
        now = timezone.now()
        if auth_token.last_used is None or now - auth_token.last_used >= LAST_USED_STEP:
            ApiToken.objects.filter(pk=auth_token.pk).update(last_used=now)
            auth_token.last_used = now
        return auth_token.user, auth_token


class ApiTokenScheme(KnoxTokenScheme):  # type: ignore[no-untyped-call]  # drf-spectacular's unannotated __init_subclass__
    """The schema's name for it (``Authorization: Token <key>``), as with DRF's tokens before."""

    target_class = "leaderboard.api.authentication.ApiTokenAuthentication"
    name = "tokenAuth"
