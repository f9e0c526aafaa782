"""A challenge's own pages (overview, rules, evaluation, data, participate), written by its
organisers in Markdown and shown sanitised; and the rules each participant accepts before their
first submission (again whenever the rules change)."""

from __future__ import annotations

import hashlib

import nh3
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from leaderboard import permissions
from leaderboard.models import Challenge, TermsAcceptance

PAGES = ("overview", "rules", "evaluation", "data", "participate")
# CommonMark with tables; raw HTML in the source is shown as text, and what the renderer makes
# is sanitised again (links keep http, https and mailto only).
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def rendered(text: str) -> SafeString:
    """Organiser Markdown as safe HTML."""
    html = _MARKDOWN.render(text or "")
    return mark_safe(nh3.clean(html, url_schemes={"http", "https", "mailto"}))


def rules_version(challenge: Challenge) -> str:
    return hashlib.sha256(challenge.rules.encode()).hexdigest()


def accepted_rules(user: permissions.User, challenge: Challenge) -> TermsAcceptance | None:
    """The user's acceptance of the challenge's current rules, if any."""
    if not challenge.rules.strip() or not user.is_authenticated:
        return None
    return TermsAcceptance.objects.filter(
        user=user, challenge=challenge, rules_sha256=rules_version(challenge)
    ).first()


def must_accept_rules(user: permissions.User, challenge: Challenge) -> bool:
    return bool(challenge.rules.strip()) and accepted_rules(user, challenge) is None


def labeller_notice(user: permissions.User, challenge: Challenge) -> str:
    """What the rules tab tells a labeller of the challenge's judge audits instead of taking
    their acceptance; "" for anyone else."""
    if not user.is_authenticated:
        return ""
    return permissions.labelling_clash([user.pk], [challenge], you=permissions.signed_in(user))


def accept_rules(user: User, challenge: Challenge) -> TermsAcceptance:
    """``user`` takes part in ``challenge`` under its current rules; ``ValidationError`` saying
    why not, for a labeller of its judge audits (``permissions.labelling_clash``)."""
    with transaction.atomic():
        permissions.hold([user.pk])
        if clash := permissions.labelling_clash([user.pk], [challenge], you=user):
            raise ValidationError(clash)
        found, _ = TermsAcceptance.objects.get_or_create(
            user=user, challenge=challenge, rules_sha256=rules_version(challenge)
        )
    return found
