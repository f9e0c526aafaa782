"""An account's API tokens: made (the key shown once), listed, revoked; all of them revoked when
the account's password changes, whichever way it changes.

The model is ``leaderboard.models.ApiToken`` (django-rest-knox's, with a name and a last-used
time); requests are authenticated by ``leaderboard.api.authentication``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import get_hasher, identify_hasher
from django.contrib.auth.models import AbstractBaseUser, User
from django.db import transaction
from django.db.models import Q, QuerySet
from django.db.models.signals import pre_save
from django.dispatch import receiver
from django.utils import timezone
from knox.settings import knox_settings

from leaderboard.models import ApiToken
from leaderboard.models.api_token import NAME_MAX_LENGTH


class TokenError(ValueError):
    """A token that cannot be made; the message says why."""


def live(user: User) -> QuerySet[ApiToken]:
    """The account's tokens that have not expired, newest first."""
    return ApiToken.objects.filter(user=user).filter(
        Q(expiry__isnull=True) | Q(expiry__gt=timezone.now())
    )


def create(user: User, name: str) -> tuple[ApiToken, str]:
    """A new token named ``name``, expiring after ``PODIUM_API_TOKEN_TTL_DAYS``; returns it and
    its key, which is not kept anywhere (only its digest is): show it once."""
    name = " ".join(name.split())
    if not name:
        raise TokenError("give the token a name (what will use it: a laptop, a CI job)")
    if len(name) > NAME_MAX_LENGTH:
        raise TokenError(f"a token's name is at most {NAME_MAX_LENGTH} characters")
    limit = knox_settings.TOKEN_LIMIT_PER_USER
    with transaction.atomic():
        # one maker at a time per account, so the limit holds under concurrent requests
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        ApiToken.objects.filter(user=user, expiry__lte=timezone.now()).delete()
        if limit is not None and live(user).count() >= limit:
            raise TokenError(
                f"this account has {limit} API tokens, the most it may hold: "
                "revoke one on your account page first"
            )
        token, key = ApiToken.objects.create(user=user, name=name)
    return token, key


def revoke(user: User, digest: str | None = None) -> int:
    """Revoke the account's token with this digest, or all of them; returns how many."""
    tokens = ApiToken.objects.filter(user=user)
    if digest is not None:
        tokens = tokens.filter(digest=digest)
    return tokens.delete()[1].get(ApiToken._meta.label, 0)


@receiver(pre_save, sender=settings.AUTH_USER_MODEL)
def revoke_on_password_change(
    sender: type[AbstractBaseUser],
    instance: AbstractBaseUser,
    update_fields: frozenset[str] | None = None,
    **kwargs: Any,
) -> None:
    """Every save of a user whose stored password hash changes revokes all its tokens: the
    account page, a password reset, the admin, ``changepassword``, ``set_unusable_password``,
    a hash written by hand. Django re-hashing the same password at a sign-in revokes none."""
    if instance.pk is None or (update_fields is not None and "password" not in update_fields):
        return
    stored = sender._default_manager.filter(pk=instance.pk).values_list("password", flat=True)
    old_hash = stored.first()
    if old_hash is None or old_hash == instance.password:
        return
    if not _rehashed(old_hash, instance):
        ApiToken.objects.filter(user_id=instance.pk).delete()


def _rehashed(old_hash: str, user: AbstractBaseUser) -> bool:
    """Whether the user's new hash may be Django's re-hash of the password it checked at a sign-in
    (``AbstractBaseUser.check_password``): that happens only to a hash its preferred hasher would
    write otherwise, writes the preferred hasher's, and leaves no new password (``_password``)."""
    if getattr(user, "_password", None) is not None:  # set_password() was called: a new one
        return False
    try:
        old_hasher = identify_hasher(old_hash)
    except ValueError:
        return False
    preferred = get_hasher("default")
    outdated = old_hasher.algorithm != preferred.algorithm or preferred.must_update(old_hash)
    return outdated and user.password.startswith(f"{preferred.algorithm}$")
