"""E-mail to people, one by one: organisers' messages to a challenge's participants, and the
notices of a team's ended runs (``leaderboard.run_mail``), through Django's mail backend
(``PODIUM_EMAIL_BACKEND``: the console unless set).

- Who: an audience of a challenge (``audiences``): everyone taking part, or the teams of one
  task. Taking part means a member of a team that submitted to the challenge or registered
  for it, except teams whose registration was refused, banned teams and banned participants;
  the baselines' team has no one. The teams of a task are those of them with a run on it.
- Each person chooses (``MailPreference``, the account page): a run-ended notice and
  organisers' messages, both on unless turned off. Those who turned one off are left out when
  a mailing is queued, and counted (``Mailing.skipped``).
- One e-mail per recipient (never everyone in To or CC), sent off the request by the Celery
  task ``mail.deliver`` (``leaderboard.tasks``), which resumes where a failed try stopped
  (``Mailing.delivered``) and is retried on a mail server's transient errors, a bounded
  number of times (``MAIL_TRIES``). Every e-mail ends with how to turn it off.
- Nothing lost, nothing sent twice: a mailing is a row written with what queues it (the
  organiser's request, a run's end), its task sent after the commit. One delivery at a time
  holds it (``Mailing.claimed_until``, renewed at each e-mail: a lost worker's claim lapses);
  the reaper sends a mailing still queued and unclaimed ``PODIUM_UNCLAIMED_RESEND_S`` after it
  was due again (``resend_waiting``: the broker was down, or lost its message), at most once per
  that limit.
- Cost: a subject of ``SUBJECT_MAX_CHARS``, a body of ``BODY_MAX_CHARS``; the recipients are
  the challenge's participants, each once.
"""

from __future__ import annotations

import contextlib
import logging
import smtplib
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import EmailMessage, get_connection
from django.core.mail.backends.base import BaseEmailBackend
from django.db.models import F, Q, QuerySet
from django.urls import reverse
from django.utils import timezone

from leaderboard import permissions
from leaderboard.dispatch import send_after_commit
from leaderboard.models import (
    Ban,
    Challenge,
    EvaluationRun,
    Mailing,
    MailPreference,
    Registration,
    Submission,
    Task,
    Team,
)
from leaderboard.models.mail import BODY_MAX_CHARS, SUBJECT_MAX_CHARS

logger = logging.getLogger("podium")
MAIL_TRIES = 5  # a mailing's deliveries, the first included, before it is marked failed
RETRY_BACKOFF_S = 60  # doubled at each retry
CLAIM_S = 600  # a delivery's hold on its mailing, renewed at each e-mail sent
EVERYONE = "all"
# A mail server's errors worth another try later: it was unreachable, hung up, or answered
# 4xx (try again later). A 5xx answer (refused for good) fails the mailing at once.
TRANSIENT_MAIL_ERRORS: tuple[type[Exception], ...] = (
    smtplib.SMTPServerDisconnected,
    smtplib.SMTPConnectError,
    ConnectionError,
    TimeoutError,
)
# the account page's switch behind each kind of mailing, and its words
SWITCHES = {
    Mailing.Kind.MESSAGE: ("organisers_messages", "E-mail me organisers' messages"),
    Mailing.Kind.RUN_ENDED: ("run_ended", "E-mail me when my team's runs end"),
}


class MailError(Exception):
    """What was asked cannot be sent; the message says why."""


def absolute(path: str) -> str:
    """``path`` on this site as people reach it (``PODIUM_BASE_URL``), for links in e-mail."""
    return settings.PODIUM_BASE_URL.rstrip("/") + path


@dataclass(frozen=True)
class Audience:
    """Whom an organisers' message goes to: ``key`` is what the form posts."""

    key: str
    label: str
    task: Task | None
    teams: QuerySet[Team]


def _taking_part(challenge: Challenge) -> QuerySet[Team]:
    entered = Submission.objects.filter(challenge=challenge).values("team")
    registered = Registration.objects.filter(challenge=challenge).values("team")
    refused = Registration.objects.filter(
        challenge=challenge, state=Registration.State.REFUSED
    ).values("team")
    banned = Ban.objects.filter(challenge=challenge, team__isnull=False).values("team")
    return (
        Team.objects.filter(Q(pk__in=entered) | Q(pk__in=registered), baselines_of=None)
        .exclude(pk__in=refused)
        .exclude(pk__in=banned)
    )


def audiences(challenge: Challenge) -> list[Audience]:
    """Everyone taking part, then the teams of each task, in the tasks' order."""
    everyone = _taking_part(challenge)
    found = [Audience(EVERYONE, "Everyone taking part", None, everyone)]
    for task in challenge.tasks.order_by("order", "task_id"):
        with_runs = EvaluationRun.objects.filter(task=task).values("submission__team")
        teams = everyone.filter(pk__in=with_runs)
        found.append(Audience(f"task:{task.task_id}", f"The teams of {task.name}", task, teams))
    return found


def audience(challenge: Challenge, key: str) -> Audience:
    for candidate in audiences(challenge):
        if candidate.key == key:
            return candidate
    raise MailError("choose whom to send it to: everyone taking part or the teams of a task")


def people(teams: QuerySet[Team], challenge: Challenge | None = None) -> QuerySet[User]:
    """The members of ``teams`` with an address, each once, in a fixed order; the
    participants ``challenge`` banned left out."""
    found = User.objects.filter(memberships__team__in=teams, is_active=True).exclude(email="")
    if challenge is not None:
        banned = Ban.objects.filter(challenge=challenge, user__isnull=False).values("user")
        found = found.exclude(pk__in=banned)
    return found.distinct().order_by("pk")


@dataclass(frozen=True)
class Reach:
    """Who receives a mailing of ``kind`` among some people, and how many turned it off."""

    recipients: list[int]
    opted_out: int


def reach(among: QuerySet[User], kind: str) -> Reach:
    field, _words = SWITCHES[Mailing.Kind(kind)]
    off = set(
        MailPreference.objects.filter(user__in=among, **{field: False}).values_list(
            "user", flat=True
        )
    )
    everyone = list(among.values_list("pk", flat=True))
    return Reach([pk for pk in everyone if pk not in off], len(off))


SWITCH_FIELDS = tuple(field for field, _words in SWITCHES.values())


@dataclass(frozen=True)
class Switch:
    """One of the account page's switches: its field, its words, whether it is on."""

    field: str
    words: str
    on: bool


def switches(user: User) -> list[Switch]:
    """``user``'s choices (all on when never changed)."""
    found = MailPreference.objects.filter(user=user).first() or MailPreference(user=user)
    return [Switch(field, words, getattr(found, field)) for field, words in SWITCHES.values()]


def choose(user: User, **on: bool) -> None:
    """``user`` turns each switch named (``SWITCH_FIELDS``) on or off."""
    unknown = set(on) - set(SWITCH_FIELDS)
    if unknown:
        raise MailError(f"no e-mail switch {', '.join(sorted(unknown))}")
    MailPreference.objects.update_or_create(user=user, defaults=on)


def _text(value: str, what: str, limit: int) -> str:
    value = value.strip()
    if not value:
        raise MailError(f"write the {what}: it is empty")
    if len(value) > limit:
        raise MailError(f"the {what} has {len(value)} characters; at most {limit}")
    return value


@dataclass(frozen=True)
class Draft:
    """An organisers' message checked and addressed, not queued yet (the page's preview)."""

    subject: str
    body: str
    audience: Audience
    reach: Reach

    @property
    def as_sent(self) -> str:
        """The body as each recipient reads it."""
        return self.body + footer(Mailing.Kind.MESSAGE)


def preview(challenge: Challenge, key: str, subject: str, body: str) -> Draft:
    """The message to the audience ``key`` as it would go: its texts checked (neither empty,
    neither too long), its recipients counted."""
    subject = " ".join(_text(subject, "subject", SUBJECT_MAX_CHARS).split())
    body = _text(body.replace("\r\n", "\n"), "message", BODY_MAX_CHARS)
    chosen = audience(challenge, key)
    found = reach(people(chosen.teams, challenge), Mailing.Kind.MESSAGE)
    if not found.recipients:
        raise MailError(f"nobody would receive it ({chosen.label}: no one yet)")
    return Draft(subject, body, chosen, found)


def send_message(challenge: Challenge, by: User, key: str, subject: str, body: str) -> Mailing:
    """Queue an organisers' message to the audience ``key``; delivered once this commits."""
    if not permissions.is_organiser(by, challenge):
        raise MailError(f"only the organisers of {challenge.name} send its messages")
    draft = preview(challenge, key, subject, body)
    mailing = Mailing.objects.create(
        kind=Mailing.Kind.MESSAGE,
        challenge=challenge,
        sent_by=by,
        audience=draft.audience.label,
        task=draft.audience.task,
        subject=draft.subject,
        body=draft.body,
        recipients=draft.reach.recipients,
        skipped=draft.reach.opted_out,
    )
    queue_delivery(mailing)
    logger.info(
        "%s sent organisers' message #%s of %s to %s (%s people, %s opted out)",
        by.get_username(), mailing.pk, challenge.slug, draft.audience.label,
        len(draft.reach.recipients), draft.reach.opted_out,
    )  # fmt: skip
    return mailing


def footer(kind: str) -> str:
    """The last lines of every e-mail of ``kind``: how to turn it off."""
    _field, words = SWITCHES[Mailing.Kind(kind)]
    where = absolute(reverse("leaderboard:account"))
    return f'\n\n-- \nTo stop these e-mails, turn off "{words}" on your account page:\n{where}\n'


def queue_delivery(mailing: Mailing) -> None:
    """Send ``mailing``'s delivery once the transaction that wrote it commits; with the broker
    unreachable it waits, and the reaper sends it again (``resend_waiting``)."""
    what = f"mailing #{mailing.pk} (the reaper sends it again)"
    send_after_commit("mail.deliver", {"mailing_id": mailing.pk}, what)


def resend_waiting(now: datetime | None = None) -> list[int]:
    """Send the delivery again of every mailing still queued, held by no delivery, and due
    longer than ``PODIUM_UNCLAIMED_RESEND_S`` ago; each is due again from now."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.PODIUM_UNCLAIMED_RESEND_S)
    waiting = Mailing.objects.filter(state=Mailing.State.QUEUED, due_at__lt=cutoff).filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    )
    resent = []
    for found in waiting.only("pk"):
        if waiting.filter(pk=found.pk).update(due_at=now):  # not claimed meanwhile
            logger.warning("mailing #%s waits unclaimed: sending its delivery again", found.pk)
            queue_delivery(found)
            resent.append(found.pk)
    return resent


def _claim(mailing_id: int) -> bool:
    """Hold a queued mailing for ``CLAIM_S`` (again); False when it is no longer queued or
    another delivery holds it."""
    now = timezone.now()
    free = Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    held = Mailing.objects.filter(pk=mailing_id, state=Mailing.State.QUEUED).filter(free)
    return bool(held.update(claimed_until=now + timedelta(seconds=CLAIM_S)))


def deliver(mailing_id: int) -> Mailing:
    """Send a queued mailing's e-mails from the first one not delivered yet, one recipient
    each, on one connection, holding it meanwhile (``_claim``). A transient error
    (``TRANSIENT_MAIL_ERRORS``) is raised for the task to try again later; anything else fails
    the mailing, saying why. Sent, given up, or held by another delivery: nothing is done."""
    if not _claim(mailing_id):
        return Mailing.objects.get(pk=mailing_id)
    try:
        return _deliver_claimed(Mailing.objects.select_related("challenge").get(pk=mailing_id))
    finally:
        Mailing.objects.filter(pk=mailing_id).update(claimed_until=None)


def _deliver_claimed(mailing: Mailing) -> Mailing:
    addresses = dict(
        User.objects.filter(pk__in=mailing.recipients, is_active=True).values_list("pk", "email")
    )
    body = mailing.body + footer(mailing.kind)
    try:
        with get_connection() as connection:
            for user_id in mailing.recipients[mailing.delivered :]:
                if addresses.get(user_id):  # gone or without an address since: nothing to send
                    _send_one(mailing.subject, body, addresses[user_id], connection)
                Mailing.objects.filter(pk=mailing.pk).update(
                    delivered=F("delivered") + 1,
                    claimed_until=timezone.now() + timedelta(seconds=CLAIM_S),
                )
    except TRANSIENT_MAIL_ERRORS:
        raise
    except smtplib.SMTPResponseException as exc:
        if 400 <= exc.smtp_code < 500:
            raise ConnectionError(f"the mail server said {exc.smtp_code}: try later") from exc
        return give_up(mailing.pk, exc)
    except Exception as exc:  # anything else, kept on the mailing for the organisers
        return give_up(mailing.pk, exc)
    Mailing.objects.filter(pk=mailing.pk).update(state=Mailing.State.SENT, sent_at=timezone.now())
    mailing.refresh_from_db()
    return mailing


def _send_one(subject: str, body: str, to: str, connection: BaseEmailBackend) -> None:
    # an address refused for good: the others still get theirs
    with contextlib.suppress(smtplib.SMTPRecipientsRefused):
        EmailMessage(subject, body, None, [to], connection=connection).send()


def give_up(mailing_id: int, exc: BaseException) -> Mailing:
    """The mailing failed: its error kept; those delivered before it stay counted."""
    error = f"{type(exc).__name__}: {exc}"[:1000]
    Mailing.objects.filter(pk=mailing_id).update(state=Mailing.State.FAILED, error=error)
    return Mailing.objects.get(pk=mailing_id)
