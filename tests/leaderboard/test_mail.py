"""Organisers' messages (``/c/<slug>/messages/``) and the team's e-mail when a run ends, through
Django's locmem backend (``mail.outbox``): who may send, to whom (everyone taking part or the
teams of a task; opted-out, banned, refused and outside people left out), one e-mail per
person, the log, retries that resume, the run-ended e-mail's content, once per end, and the
account page's switches."""

from __future__ import annotations

import smtplib
from collections.abc import Sequence
from typing import ClassVar

import pytest
from django.core import mail
from django.core.mail import EmailMessage
from django.core.mail.backends.locmem import EmailBackend
from django.test import Client
from django.urls import reverse

from leaderboard import mailing
from leaderboard.models import (
    Ban,
    Challenge,
    EvaluationRun,
    Mailing,
    MailPreference,
    Membership,
    Registration,
    Submission,
    Task,
    Team,
)
from leaderboard.pipeline.ownership import PODIUM_FAULT_REASON, fail_for_podium
from leaderboard.tasks import deliver_mailing, reap_stale_runs
from podium.celery import app

State = EvaluationRun.State
PAGE = reverse("leaderboard:messages", args=["crag-mm-2026"])
ACCOUNT = "http://podium.example/account/"


@pytest.fixture(autouse=True)
def _base_url(settings):
    settings.PODIUM_BASE_URL = "http://podium.example/"


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, dict]]:
    """The tasks sent (name, kwargs), not to a broker."""
    calls: list[tuple[str, dict]] = []
    monkeypatch.setattr(
        app, "send_task", lambda name, kwargs, queue: calls.append((name, dict(kwargs)))
    )
    return calls


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """``with committed():`` runs what waits for the commit at its end."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def submitted(team: Team, challenge: Challenge, task: Task | None = None) -> Submission:
    """A submission of ``team``, with a run on ``task``'s public test when one is given."""
    submission = Submission.objects.create(
        team=team,
        challenge=challenge,
        artifact_kind=Submission.ArtifactKind.REGISTRY_REF,
        method_name=f"{team.name}-m",
    )
    if task is not None:
        split = task.splits.get(kind="public-test")
        EvaluationRun.objects.create(submission=submission, task=task, split=split)
    return submission


@pytest.fixture
def world(make_user, challenge, task, splits):
    """alpha ran on multi-turn-qa; beta is registered (approved), gamma ran on the other
    task; delta was refused, epsilon is banned, omega took part elsewhere only. ``ann`` (alpha)
    is banned herself, ``quiet`` (beta) turned organisers' messages off."""
    other = Task.objects.create(challenge=challenge, task_id="single-source", name="Single")
    other.splits.create(kind="public-test")
    teams = {n: Team.objects.create(name=n) for n in ("alpha", "beta", "gamma", "delta", "epsilon")}
    people = {
        name: make_user(name, team=teams[team])
        for name, team in (
            ("al", "alpha"), ("ann", "alpha"), ("bea", "beta"), ("quiet", "beta"),
            ("gus", "gamma"), ("dee", "delta"), ("eve", "epsilon"),
        )
    }  # fmt: skip
    submitted(teams["alpha"], challenge, task)
    submitted(teams["gamma"], challenge, other)
    submitted(teams["epsilon"], challenge, task)
    Registration.objects.create(
        challenge=challenge, team=teams["beta"], state=Registration.State.APPROVED
    )
    Registration.objects.create(
        challenge=challenge, team=teams["delta"], state=Registration.State.REFUSED
    )
    Ban.objects.create(challenge=challenge, team=teams["epsilon"], reason="copied")
    Ban.objects.create(challenge=challenge, user=people["ann"], reason="two accounts")
    MailPreference.objects.create(user=people["quiet"], organisers_messages=False)
    elsewhere = Challenge.objects.create(name="Other", slug="other", is_published=True)
    omega = Team.objects.create(name="omega")
    people["olga"] = make_user("olga", team=omega)
    submitted(omega, elsewhere)
    organiser = make_user("org")
    challenge.organisers.add(organiser)
    return {"teams": teams, "people": people, "org": organiser, "other": other}


def as_user(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def recipients(challenge: Challenge, key: str) -> set[str]:
    found = mailing.reach(
        mailing.people(mailing.audience(challenge, key).teams, challenge), Mailing.Kind.MESSAGE
    )
    return {u.username for u in mailing.User.objects.filter(pk__in=found.recipients)}


def test_only_organisers_reach_the_page_and_nothing_posted_is_read(world, challenge, monkeypatch):
    def read(*args: object) -> None:
        raise AssertionError("the form was read")

    monkeypatch.setattr(mailing, "preview", read)
    monkeypatch.setattr(mailing, "send_message", read)
    assert Client().get(PAGE).status_code == 302  # to the sign-in page
    participant = as_user(world["people"]["al"])
    assert participant.get(PAGE).status_code == 403
    for data in ({"action": "send", "subject": "s", "body": "b"}, {"audience": "nonsense"}):
        assert participant.post(PAGE, data).status_code == 403
    # a challenge still hidden is not found by someone who does not organise it
    Challenge.objects.filter(pk=challenge.pk).update(is_published=False)
    assert participant.post(PAGE, {"action": "send"}).status_code == 404
    assert as_user(world["org"]).get(PAGE).status_code == 200
    assert Mailing.objects.count() == 0 and mail.outbox == []


def test_everyone_taking_part_or_the_teams_of_a_task(world, challenge):
    assert recipients(challenge, mailing.EVERYONE) == {"al", "bea", "gus"}
    assert recipients(challenge, "task:multi-turn-qa") == {"al"}
    assert recipients(challenge, "task:single-source") == {"gus"}
    with pytest.raises(mailing.MailError, match="choose whom"):
        mailing.audience(challenge, "task:nope")
    page = as_user(world["org"]).get(PAGE).content.decode()
    # the count shown before sending, the opted-out person counted apart
    assert "Everyone taking part: <strong>3</strong> people" in page
    assert "(1 turned messages off)" in page
    assert "The teams of Multi-turn QA: <strong>1</strong> person" in page


def test_a_message_goes_to_each_person_alone_after_a_preview(
    world, challenge, sent, settings, committed
):
    settings.DEFAULT_FROM_EMAIL = "org@podium.example"
    organiser = as_user(world["org"])
    written = {"audience": "all", "subject": "Deadline moved", "body": "One more week.\r\nBye"}
    preview = organiser.post(PAGE, {**written, "action": "preview"})
    assert preview.status_code == 200
    shown = preview.content.decode()
    assert "Send to 3 people" in shown and ACCOUNT in shown
    assert Mailing.objects.count() == 0 and sent == []
    with committed():
        response = organiser.post(PAGE, {**written, "action": "send"})
    assert response.status_code == 302
    message = Mailing.objects.get()
    assert (message.sent_by, message.audience, message.skipped) == (
        world["org"], "Everyone taking part", 1,
    )  # fmt: skip
    assert (message.state, message.body) == (Mailing.State.QUEUED, "One more week.\nBye")
    assert sent == [("mail.deliver", {"mailing_id": message.pk})]
    deliver_mailing.apply(kwargs={"mailing_id": message.pk})
    assert sorted(m.to[0] for m in mail.outbox) == [
        "al@example.org", "bea@example.org", "gus@example.org",
    ]  # fmt: skip
    for email in mail.outbox:
        assert len(email.to) == 1 and not email.cc and not email.bcc
        assert email.subject == "Deadline moved"
        assert email.from_email == "org@podium.example"
        assert email.body.startswith("One more week.\nBye\n\n-- \n")
        assert "E-mail me organisers' messages" in email.body and ACCOUNT in email.body
    message.refresh_from_db()
    assert (message.state, message.delivered) == (Mailing.State.SENT, 3)
    # delivered twice (a message the broker hands out again): nothing more is sent
    deliver_mailing.apply(kwargs={"mailing_id": message.pk})
    assert len(mail.outbox) == 3
    listed = organiser.get(PAGE).content.decode()
    assert f'id="mailing-{message.pk}"' in listed and "Deadline moved" in listed
    assert "sent" in listed


@pytest.mark.parametrize(
    ("subject", "body", "error"),
    [
        ("  ", "hello", "write the subject: it is empty"),
        ("Hi", " \n ", "write the message: it is empty"),
        ("Hi", "x" * 10_001, "the message has 10001 characters; at most 10000"),
        ("H" * 201, "x", "the subject has 201 characters; at most 200"),
    ],
)
def test_empty_or_too_long_texts_are_refused_saying_why(world, sent, subject, body, error):
    response = as_user(world["org"]).post(
        PAGE, {"audience": "all", "subject": subject, "body": body, "action": "send"}
    )
    assert response.status_code == 400
    assert error in response.content.decode()
    assert Mailing.objects.count() == 0 and sent == []


def test_a_task_nobody_ran_is_refused(world, challenge, sent):
    Task.objects.create(challenge=challenge, task_id="empty", name="Empty")
    response = as_user(world["org"]).post(
        PAGE, {"audience": "task:empty", "subject": "s", "body": "b", "action": "send"}
    )
    assert response.status_code == 400 and "nobody would receive it" in response.content.decode()


class FlakyBackend(EmailBackend):
    """locmem, whose server fails with ``error`` at the ``fail_at``-th e-mail, ``failures``
    times."""

    fail_at: ClassVar[int] = 2
    failures: ClassVar[int] = 1
    attempts: ClassVar[int] = 0
    error: ClassVar[Exception] = smtplib.SMTPServerDisconnected("Connection unexpectedly closed")

    def send_messages(self, messages: Sequence[EmailMessage]) -> int:
        type(self).attempts += 1
        if type(self).attempts == self.fail_at and type(self).failures > 0:
            type(self).failures -= 1
            type(self).attempts = 0
            raise self.error
        return super().send_messages(messages)


@pytest.mark.parametrize(
    "error",
    [
        smtplib.SMTPServerDisconnected("Connection unexpectedly closed"),
        smtplib.SMTPDataError(451, b"try again later"),
    ],
)
def test_a_transient_error_tries_again_from_where_it_stopped(world, challenge, settings, error):
    settings.EMAIL_BACKEND = f"{__name__}.FlakyBackend"
    FlakyBackend.fail_at, FlakyBackend.failures, FlakyBackend.attempts = 2, 1, 0
    FlakyBackend.error = error
    message = mailing.send_message(challenge, world["org"], "all", "Hi", "Hello")
    deliver_mailing.apply(kwargs={"mailing_id": message.pk})  # eager: its retry runs at once
    assert FlakyBackend.failures == 0
    assert sorted(m.to[0] for m in mail.outbox) == [
        "al@example.org", "bea@example.org", "gus@example.org",
    ]  # fmt: skip
    # each once: the retry resumed after the first
    message.refresh_from_db()
    assert (message.state, message.delivered) == (Mailing.State.SENT, 3)


def test_a_refusal_for_good_fails_at_once_keeping_what_was_sent(world, challenge, settings):
    settings.EMAIL_BACKEND = f"{__name__}.FlakyBackend"
    FlakyBackend.fail_at, FlakyBackend.failures, FlakyBackend.attempts = 2, 9, 0
    FlakyBackend.error = smtplib.SMTPDataError(554, b"message refused")
    message = mailing.send_message(challenge, world["org"], "all", "Hi", "Hello")
    deliver_mailing.apply(kwargs={"mailing_id": message.pk})
    message.refresh_from_db()
    assert FlakyBackend.failures == 8, "not tried again"
    assert (message.state, message.delivered, len(mail.outbox)) == (Mailing.State.FAILED, 1, 1)
    assert message.error.startswith("SMTPDataError: (554")


def test_the_tries_are_bounded_then_the_mailing_fails_with_its_error(world, challenge, settings):
    settings.EMAIL_BACKEND = f"{__name__}.FlakyBackend"
    FlakyBackend.fail_at, FlakyBackend.failures, FlakyBackend.attempts = 1, 99, 0
    FlakyBackend.error = smtplib.SMTPServerDisconnected("Connection unexpectedly closed")
    message = mailing.send_message(challenge, world["org"], "all", "Hi", "Hello")
    deliver_mailing.apply(kwargs={"mailing_id": message.pk})
    message.refresh_from_db()
    assert FlakyBackend.failures == 99 - mailing.MAIL_TRIES
    assert message.state == Mailing.State.FAILED
    assert message.error == "SMTPServerDisconnected: Connection unexpectedly closed"
    assert mail.outbox == []
    page = as_user(world["org"]).get(PAGE).content.decode()
    assert "failed: SMTPServerDisconnected" in page


# --- a run's end


@pytest.fixture
def alpha_run(world, challenge, task) -> EvaluationRun:
    run = EvaluationRun.objects.select_related("submission").get(submission__team__name="alpha")
    for state in EvaluationRun.ACTIVE_STATES:
        run.move_to(state, worker_id="node-a:1")
    return run


@pytest.fixture
def ended(sent, committed):
    """``ended(run, state, **why)``: ``run`` moved to ``state`` and committed; the delivery's
    kwargs sent then (its notice written with the run's end)."""

    def end(run: EvaluationRun, state: str, **why: str) -> dict:
        sent.clear()
        with committed():
            run.move_to(state, **why)
        return next(kwargs for name, kwargs in sent if name == "mail.deliver")

    return end


def test_a_done_run_mails_each_member_once(world, alpha_run, ended):
    MailPreference.objects.create(user=world["people"]["al"], organisers_messages=False)
    kwargs = ended(alpha_run, State.DONE)
    notice = Mailing.objects.get(run=alpha_run)
    assert kwargs == {"mailing_id": notice.pk} and notice.kind == Mailing.Kind.RUN_ENDED
    deliver_mailing.apply(kwargs=kwargs)
    # ann is banned from the challenge but still in the team: her team's run is hers
    assert sorted(m.to[0] for m in mail.outbox) == ["al@example.org", "ann@example.org"]
    email = mail.outbox[0]
    assert email.subject == (
        f"[CRAG-MM 2026] Run #{alpha_run.pk} finished: Multi-turn QA, public test"
    )
    assert f"http://podium.example/runs/{alpha_run.pk}/" in email.body
    assert "E-mail me when my team's runs end" in email.body and ACCOUNT in email.body
    deliver_mailing.apply(kwargs=kwargs)  # the same delivery again: nothing more
    assert len(mail.outbox) == 2


def test_a_run_end_rolled_back_writes_no_notice(world, alpha_run, sent):
    from django.db import transaction

    with pytest.raises(RuntimeError), transaction.atomic():
        alpha_run.move_to(State.DONE)
        assert Mailing.objects.filter(run=alpha_run).exists()  # written with the end
        raise RuntimeError("the stage failed before its commit")
    assert not Mailing.objects.exists() and sent == []


def test_a_failed_run_says_the_team_reason_never_the_operator_detail(world, alpha_run, ended):
    kwargs = ended(
        alpha_run,
        State.FAILED,
        failure_reason="Your agent did not answer /ready within 600 s.",
        operator_detail="Traceback: secret-node-7 OOM at /var/lib/podium",
    )
    deliver_mailing.apply(kwargs=kwargs)
    assert len(mail.outbox) == 2
    email = mail.outbox[0]
    assert "Run #" in email.subject and " failed: Multi-turn QA, public test" in email.subject
    assert "Why: Your agent did not answer /ready within 600 s." in email.body
    assert "secret-node-7" not in email.body and "Traceback" not in email.body


def test_a_build_failed_on_podiums_side_says_so_without_the_detail(world, sent, committed):
    run = EvaluationRun.objects.get(submission__team__name="alpha")
    run.move_to(State.BUILDING, worker_id="node-a:1")
    sent.clear()
    with committed():
        fail_for_podium(run, "docker: no space left on /var/lib/docker-secret")
    assert Submission.objects.get(pk=run.submission_id).state == Submission.State.PODIUM_FAILED
    deliver_mailing.apply(kwargs=next(kw for name, kw in sent if name == "mail.deliver"))
    assert len(mail.outbox) == 2
    body = mail.outbox[0].body
    assert f"Why: {PODIUM_FAULT_REASON}" in body and "docker-secret" not in body


def test_opted_out_members_get_nothing_and_a_cancelled_run_mails_no_one(
    world, alpha_run, sent, committed
):
    for name in ("al", "ann"):
        mailing.choose(world["people"][name], run_ended=False, organisers_messages=True)
    with committed():
        alpha_run.move_to(State.DONE)
    assert sent == [] and not Mailing.objects.exists()
    alpha_run.move_to(State.QUEUED)
    with committed():
        alpha_run.move_to(State.CANCELLED)
    assert sent == []


def test_a_rerun_that_ends_again_mails_again(world, alpha_run, ended):
    deliver_mailing.apply(kwargs=ended(alpha_run, State.DONE))
    alpha_run.move_to(State.QUEUED)  # an organiser's re-run
    for state in EvaluationRun.ACTIVE_STATES:
        alpha_run.move_to(state, worker_id="node-a:1")
    deliver_mailing.apply(kwargs=ended(alpha_run, State.FAILED, failure_reason="Crashed."))
    assert len(mail.outbox) == 4
    assert Mailing.objects.filter(run=alpha_run).count() == 2


def test_a_lost_delivery_is_sent_again_by_the_reaper_never_twice_at_once(
    world, alpha_run, ended, sent, committed, settings
):
    from datetime import timedelta

    from django.utils import timezone

    kwargs = ended(alpha_run, State.DONE)  # its message lost: the broker was down
    notice = Mailing.objects.get(pk=kwargs["mailing_id"])
    sent.clear()
    assert mailing.resend_waiting() == []  # not due long enough yet
    later = timezone.now() + timedelta(seconds=settings.PODIUM_UNCLAIMED_RESEND_S + 1)
    Mailing.objects.filter(pk=notice.pk).update(claimed_until=later + timedelta(seconds=60))
    assert mailing.resend_waiting(later) == []  # a delivery holds it
    Mailing.objects.filter(pk=notice.pk).update(claimed_until=timezone.now())
    with committed():
        assert mailing.resend_waiting(later) == [notice.pk]
    assert sent == [("mail.deliver", {"mailing_id": notice.pk})]
    assert mailing.resend_waiting(later) == []  # due again from then: once per limit
    # a delivery meets one already holding the mailing: it sends nothing
    Mailing.objects.filter(pk=notice.pk).update(claimed_until=later)
    deliver_mailing.apply(kwargs=kwargs)
    assert mail.outbox == [] and Mailing.objects.get(pk=notice.pk).state == "queued"
    # the holder lost (its claim lapsed): the next delivery sends every e-mail, once
    Mailing.objects.filter(pk=notice.pk).update(claimed_until=timezone.now())
    deliver_mailing.apply(kwargs=kwargs)
    found = Mailing.objects.get(pk=notice.pk)
    assert (found.state, found.delivered, found.claimed_until) == ("sent", 2, None)
    assert len(mail.outbox) == 2
    with committed():
        assert "mailings_resent" in reap_stale_runs.apply().get()


def test_a_team_without_members_sends_no_task(teams, pipeline_run, sent, committed):
    with committed():
        pipeline_run(State.DONE)
    assert sent == []


def test_the_account_page_turns_each_e_mail_off_and_on(make_user):
    user = make_user("pat")
    client = as_user(user)
    page = client.get(reverse("leaderboard:account")).content.decode()
    assert 'name="run_ended" id="mail-run_ended" checked' in page
    assert 'name="organisers_messages" id="mail-organisers_messages" checked' in page
    response = client.post(reverse("leaderboard:account"), {"mail": "save", "run_ended": "on"})
    assert response.status_code == 302
    choice = MailPreference.objects.get(user=user)
    assert (choice.run_ended, choice.organisers_messages) == (True, False)
    page = client.get(reverse("leaderboard:account")).content.decode()
    assert 'name="organisers_messages" id="mail-organisers_messages">' in page
    assert not Membership.objects.filter(user=user).exists()


def test_the_log_is_paged_and_lists_only_this_challenges_messages(world, challenge):
    elsewhere = Challenge.objects.get(slug="other")
    for n in range(21):
        Mailing.objects.create(
            kind=Mailing.Kind.MESSAGE, challenge=challenge, audience="x", subject=f"note {n}"
        )
    Mailing.objects.create(
        kind=Mailing.Kind.MESSAGE, challenge=elsewhere, audience="x", subject="not ours"
    )
    Mailing.objects.create(
        kind=Mailing.Kind.RUN_ENDED, challenge=challenge, audience="x", subject="a run's end"
    )
    organiser = as_user(world["org"])
    first = organiser.get(PAGE).content.decode()
    second = organiser.get(PAGE, {"page": 2}).content.decode()
    assert first.count('id="mailing-') == 20 and second.count('id="mailing-') == 1
    assert "page 1 of 2" in first and ">note 0<" in second and ">note 20<" in first
    assert "not ours" not in first + second and "a run's end" not in first + second
