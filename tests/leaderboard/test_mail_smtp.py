"""Podium's e-mail through Django's real SMTP backend to a real SMTP server (aiosmtpd, started
by the test on a free port): an organisers' message reaches each recipient in a transaction of
its own, addressed to them alone, with the opt-out line."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from email import message_from_bytes

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from leaderboard import mailing
from leaderboard.models import Mailing, Membership, Submission, Team
from leaderboard.tasks import deliver_mailing


class Inbox:
    """aiosmtpd's handler: every envelope accepted, kept."""

    def __init__(self) -> None:
        self.envelopes: list[Envelope] = []

    async def handle_DATA(
        self, server: SMTP, session: Session, envelope: Envelope
    ) -> str:  # aiosmtpd calls it so
        self.envelopes.append(envelope)
        return "250 OK"


@pytest.fixture
def smtp_server(settings) -> Iterator[Inbox]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    settings.EMAIL_USE_TLS = False
    settings.DEFAULT_FROM_EMAIL = "podium@podium.example"
    settings.PODIUM_BASE_URL = "https://podium.example"
    try:
        yield inbox
    finally:
        controller.stop()


def test_a_message_reaches_each_person_alone_through_smtp(smtp_server, make_user, challenge):
    team = Team.objects.create(name="alpha")
    for name in ("ann", "bob"):
        make_user(name, team=team)
    Submission.objects.create(
        team=team,
        challenge=challenge,
        artifact_kind=Submission.ArtifactKind.REGISTRY_REF,
        method_name="m",
    )
    organiser = make_user("org")
    challenge.organisers.add(organiser)
    assert Membership.objects.filter(team=team).count() == 2
    sent = mailing.send_message(challenge, organiser, "all", "Deadline", "One more week.")
    deliver_mailing.apply(kwargs={"mailing_id": sent.pk})
    sent.refresh_from_db()
    assert (sent.state, sent.delivered, sent.error) == (Mailing.State.SENT, 2, "")
    envelopes = smtp_server.envelopes
    assert sorted(tuple(e.rcpt_tos) for e in envelopes) == [
        ("ann@example.org",),
        ("bob@example.org",),
    ]
    for envelope in envelopes:
        assert envelope.mail_from == "podium@podium.example"
        assert isinstance(envelope.content, bytes)
        message = message_from_bytes(envelope.content)
        assert message["To"] == envelope.rcpt_tos[0] and message["Cc"] is None
        assert message["Subject"] == "Deadline"
        text = message.get_payload(decode=True).decode()
        assert text.startswith("One more week.")
        assert "https://podium.example/account/" in text


def test_a_server_that_is_gone_is_retried_then_the_failure_kept(settings, make_user, challenge):
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        settings.EMAIL_HOST, settings.EMAIL_PORT = probe.getsockname()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    team = Team.objects.create(name="alpha")
    make_user("ann", team=team)
    Submission.objects.create(
        team=team,
        challenge=challenge,
        artifact_kind=Submission.ArtifactKind.REGISTRY_REF,
        method_name="m",
    )
    organiser = make_user("org")
    challenge.organisers.add(organiser)
    sent = mailing.send_message(challenge, organiser, "all", "Deadline", "One more week.")
    deliver_mailing.apply(kwargs={"mailing_id": sent.pk})
    sent.refresh_from_db()
    assert (sent.state, sent.delivered) == (Mailing.State.FAILED, 0)
    assert sent.error.startswith("ConnectionRefusedError")
