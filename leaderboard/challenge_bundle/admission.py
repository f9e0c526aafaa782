"""Who may validate, diff or import a bundle, decided before anything in it is unpacked or
parsed whole (``docs/security.md``):

- from the user alone where that is enough: the command line without ``--as`` (the operator)
  and staff may change any challenge; someone who organises none may change none, refused
  before the upload is read (``may_change_some``);
- else from the bundle's slug, read from its manifest by ``yaml_doc.outline`` (a size cap, then
  libyaml's events within a node and depth limit): a challenge's organisers change it; only
  staff create one.
"""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied

from leaderboard.challenge_bundle.problems import BundleInvalid, Problem
from leaderboard.challenge_bundle.schema import SLUG
from leaderboard.challenge_bundle.source import MANIFEST
from leaderboard.challenge_bundle.yaml_doc import Outline, outline
from leaderboard.models import Challenge
from leaderboard.permissions import is_organiser


def may_change(user: User | None, challenge: Challenge | None) -> bool:
    """Who may import, diff or export: the command line (no user), a challenge's organisers;
    a new challenge: staff."""
    if user is None:
        return True
    if challenge is None:
        return bool(user.is_authenticated and user.is_staff)
    return is_organiser(user, challenge)


def may_change_some(user: User | None) -> bool:
    """Whether ``user`` may change any challenge at all (what a bundle holds aside)."""
    return user is None or user.is_staff or user.organised_challenges.exists()


def refuse_stranger(user: User | None) -> None:
    """``PermissionDenied`` for someone who may change no challenge, bundle unread."""
    if not may_change_some(user):
        raise PermissionDenied(
            "only a challenge's organisers validate, diff or import its bundle, and only staff "
            "create a challenge: you organise none"
        )


def admit(user: User | None, wanted: str | None, text: str) -> Outline:
    """Let ``user`` go on with the bundle whose manifest is ``text`` (of challenge ``wanted``,
    when given), or refuse: ``PermissionDenied``, or ``BundleInvalid`` where the slug cannot
    be read."""
    refuse_stranger(user)
    head = outline(MANIFEST, text)
    field = "challenge.slug"
    if wanted is not None and head.slug != wanted:
        raise BundleInvalid([Problem(MANIFEST, head.line, field, f"this bundle is not {wanted!r}")])
    if user is None or user.is_staff:  # may change any challenge: the slug is checked later
        return head
    if head.slug is None or not re.search(SLUG, head.slug):
        raise BundleInvalid(
            [Problem(MANIFEST, head.line, field, "the challenge's slug, written as plain text "
                     "(a-z, 0-9, dashes), tells whose bundle this is")]
        )  # fmt: skip
    if not may_change(user, Challenge.objects.filter(slug=head.slug).first()):
        raise PermissionDenied(f"only the organisers of {head.slug!r} may import it")
    return head
