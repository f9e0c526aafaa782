import datetime as dt
from typing import Any, ClassVar, Self, TypeVar

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import models
from django.db.models.expressions import Combinable

_T = TypeVar("_T", bound=models.Model)

class AuthTokenManager(models.Manager[_T]):
    # a new token and its key (only its digest is stored), not the token alone
    def create(  # type: ignore[override]
        self,
        user: AbstractBaseUser,
        expiry: dt.timedelta | None = ...,
        prefix: str | None = ...,
        **kwargs: Any,
    ) -> tuple[_T, str]: ...

class AbstractAuthToken(models.Model):
    objects: ClassVar[AuthTokenManager[Self]]
    digest: models.CharField[str | int | Combinable, str]
    token_key: models.CharField[str | int | Combinable, str]
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="auth_token_set"
    )
    created: models.DateTimeField[str | dt.datetime | dt.date | Combinable, dt.datetime]
    expiry: models.DateTimeField[
        str | dt.datetime | dt.date | Combinable | None, dt.datetime | None
    ]

class AuthToken(AbstractAuthToken): ...
