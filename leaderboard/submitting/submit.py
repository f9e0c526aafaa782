"""The one code path for submitting: the web form, the API and the demo all call ``submit``.

Order of work: permission and phase checks; the artifact is read once (validation, hash, size);
metadata validated; quotas checked without a lock (to fail fast, before storing gigabytes); the
artifact stored; then, in one transaction holding the team row lock, the quotas are checked
again and the submission and its runs are created, one per (task, split) with data, and the
first stage of each run is sent once the transaction commits. Whatever fails after the
artifact was stored deletes it again. ``admit`` makes every check that needs no artifact (the
API's quota preflight asks it before an upload starts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files import File
from django.db import transaction
from django.template.defaultfilters import filesizeformat
from django.utils import timezone

from evaluator.records import EvaluatorError
from leaderboard import participation, permissions
from leaderboard.models import (
    Challenge,
    EvaluationRun,
    Split,
    Submission,
    Task,
    Team,
    TermsAcceptance,
)
from leaderboard.pages import must_accept_rules
from leaderboard.quotas import check_quotas
from leaderboard.submitting.artifacts import check_reference, inspect_archive
from leaderboard.submitting.choice import Choice, Chosen, resolve, wanted_splits
from leaderboard.submitting.runnable import check_context
from leaderboard.tasks import dispatch_stage
from leaderboard.teams import TeamError, check_one_team_per_challenge

Kind = Submission.ArtifactKind
EVERY_TASK = Choice()  # nothing named: every task with data, every split


@dataclass(frozen=True)
class Artifact:
    """What a team hands in: an uploaded file (image archive or build context) or a reference.

    ``file`` is any Django ``File`` (an upload, or a file opened from disk by the demo); it is
    read as a stream and never loaded into memory.
    """

    kind: str
    file: File[bytes] | None = None
    registry_ref: str = ""

    @property
    def label(self) -> str:
        name = getattr(self.file, "name", "") or "the upload"
        return name.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class MethodInfo:
    """How the entry is described on the leaderboard."""

    method_name: str
    description: str = ""
    paper_url: str = ""
    code_url: str = ""

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> MethodInfo:
        """From validated form or serializer data (missing or null fields: empty)."""
        return cls(**{f.name: data.get(f.name) or "" for f in fields(cls)})


def _run_settings(tasks: list[Task]) -> dict[int, tuple[str, ...]]:
    """Each task's settings, one run each (``Task.run_settings``)."""
    try:
        return {task.pk: task.run_settings() for task in tasks}
    except EvaluatorError as exc:
        raise ValidationError(f"a task's settings are broken: {exc}") from exc


def _new_runs(
    submission: Submission, splits: list[Split], have: set[tuple[int, str]], now: datetime
) -> list[EvaluationRun]:
    """Create and dispatch the runs of (split, setting) pairs not in ``have``."""
    settings = _run_settings(list({split.task_id: split.task for split in splits}.values()))
    wanted = [
        (split, setting, 0)
        for split in splits
        for setting in settings[split.task_id]
        if (split.pk, setting) not in have
    ]
    return _dispatched(submission, wanted, now)


def _dispatched(
    submission: Submission, wanted: list[tuple[Split, str, int]], now: datetime
) -> list[EvaluationRun]:
    """Create the runs of ``submission`` on these (split, setting, trial) and send their first
    stage once the transaction commits (the image is built or reused there)."""
    runs = EvaluationRun.objects.bulk_create(
        EvaluationRun(
            submission=submission,
            task=split.task,
            split=split,
            setting=setting,
            trial=trial,
            items_total=split.items,
            created_at=now,
        )
        for split, setting, trial in wanted
    )
    for run in runs:
        dispatch_stage(run, EvaluationRun.State.BUILDING)
    return runs


def add_missing_runs(
    submission: Submission, now: datetime | None = None, only: Split | None = None
) -> list[EvaluationRun]:
    """Runs for what the challenge evaluates now, among the tasks and splits the team chose,
    and ``submission`` has no run for yet: a split imported, or a setting enabled, after it was
    submitted (an organiser's action; the image is reused); ``only``: on that split alone. None
    for a failed or cancelled submission."""
    if submission.state in (*Submission.FAILED_STATES, Submission.State.CANCELLED):
        return []
    have = set(submission.runs.values_list("split_id", "setting"))
    wanted = [s for s in wanted_splits(submission) if only is None or s.pk == only.pk]
    with transaction.atomic():
        return _new_runs(submission, wanted, have, now or timezone.now())


def add_repeats(
    submission: Submission, split: Split, setting: str, k: int, now: datetime | None = None
) -> list[EvaluationRun]:
    """The repeats of ``submission``'s run on ``split`` in ``setting`` it lacks, trials 1 to
    ``k - 1`` (``Task.final_repeats``; an organiser's "repeat the final entries"), sent on
    commit as any run; none for a failed or cancelled submission."""
    if submission.state in (*Submission.FAILED_STATES, Submission.State.CANCELLED):
        return []
    have = set(submission.runs.filter(split=split, setting=setting).values_list("trial", flat=True))
    wanted = [(split, setting, trial) for trial in range(1, k) if trial not in have]
    with transaction.atomic():
        return _dispatched(submission, wanted, now or timezone.now())


def runs_on_new_version(old: Split, new: Split) -> list[EvaluationRun]:
    """The organiser's choice when a split's data changed under its runs: every submission
    with a run on ``old`` that takes ``new`` (its next version: the team's choice of tasks and
    splits) gets its runs on ``new`` (``add_missing_runs``), sent on commit."""
    submissions = Submission.objects.filter(runs__split=old).distinct().order_by("pk")
    return [run for s in submissions for run in add_missing_runs(s, only=new)]


def _check_allowed(
    user: User | None, team: Team, challenge: Challenge, organiser: bool, baseline: bool
) -> None:
    if user is None:  # the operator (a bundle imported by manage.py)
        return
    # the challenge's baseline team (a bundle's baselines) submits through its organisers
    baseline_team = organiser and team.baselines_of_id == challenge.pk
    if not user.is_authenticated or not (
        baseline_team or team.memberships.filter(user=user).exists()
    ):
        raise PermissionDenied(f"you are not a member of team {team.name}")
    if not (challenge.is_published or organiser):
        raise PermissionDenied(f"challenge {challenge.slug} is not published")
    if baseline and not organiser:
        raise PermissionDenied(f"only organisers of {challenge.slug} can mark a baseline")


def _check_no_labeller(team: Team, challenge: Challenge, user: User | None) -> None:
    """Nobody who labels the challenge's judge audits takes part, nor does a team they are in
    (whoever submits for it: organisers too); the challenge's baseline team apart."""
    if team.baselines_of_id == challenge.pk:
        return
    members = team.memberships.values_list("user_id", flat=True)
    if clash := permissions.labelling_clash(members, [challenge], you=user):
        raise ValidationError(clash)


def _check_open(challenge: Challenge, now: datetime, organiser: bool) -> None:
    """Submissions are taken while a phase is open (always, for a challenge without phases)."""
    phases = list(challenge.phases.all())
    if organiser or not phases or any(p.is_open(now) for p in phases):
        return
    upcoming = [p for p in phases if p.starts_at > now]
    when = (
        f"; {upcoming[0].name} opens {upcoming[0].starts_at:%Y-%m-%d %H:%M} UTC"
        if upcoming
        else "; the challenge has ended"
    )
    raise ValidationError(f"{challenge.name} takes no submissions now: no phase is open{when}")


def _check_artifact(artifact: Artifact, tasks: list[Task], submission: Submission) -> str:
    """Validate the artifact and fill the submission's artifact fields; the storage name."""
    if artifact.kind not in Kind.values:
        raise ValidationError({"artifact_kind": f"unknown artifact kind {artifact.kind!r}"})
    if artifact.kind == Kind.REGISTRY_REF:
        if artifact.file is not None:
            raise ValidationError({"artifact": "give either a file or a registry reference"})
        try:
            submission.registry_ref = check_reference(artifact.registry_ref)
        except ValidationError as exc:
            raise ValidationError({"registry_ref": exc.messages}) from None
        return ""
    if artifact.registry_ref:
        raise ValidationError({"registry_ref": "give either a file or a registry reference"})
    if artifact.file is None:
        raise ValidationError({"artifact": f"upload the {Kind(artifact.kind).label}"})
    limit = min(t.max_artifact_bytes for t in tasks)
    if artifact.file.size is not None and artifact.file.size > limit:
        raise ValidationError({"artifact": _too_large(artifact.label, artifact.file.size, limit)})
    try:
        facts = inspect_archive(artifact.file, artifact.kind, artifact.label)
    except ValidationError as exc:
        raise ValidationError({"artifact": exc.messages}) from None
    if facts.size > limit:  # a file object may not know its size before it is read
        raise ValidationError({"artifact": _too_large(artifact.label, facts.size, limit)})
    if facts.manifests is not None:  # else the build stage reads them
        dockerfile = facts.dockerfile if artifact.kind == Kind.BUILD_CONTEXT else None
        submission.declared_models = check_context(
            submission.challenge, artifact.label, facts.manifests, dockerfile
        )
    submission.artifact_sha256, submission.artifact_size = facts.sha256, facts.size
    return f"{artifact.kind}-{facts.sha256}{facts.suffix}"


def _too_large(label: str, size: int, limit: int) -> str:
    return (
        f"{label} is {filesizeformat(size)}; this challenge takes at most {filesizeformat(limit)}"
    )


@dataclass(frozen=True)
class Admission:
    """What ``admit`` found: whether the user submits as an organiser (no quotas, no phases)
    and the splits chosen."""

    organiser: bool
    chosen: Chosen


def admit(
    team: Team,
    challenge: Challenge,
    user: User | None,
    choice: Choice,
    *,
    is_baseline: bool = False,
    now: datetime | None = None,
) -> Admission:
    """Every check of ``submit`` that needs no artifact, quotas apart: membership, no labeller of
    the challenge's judge audits in the team, no ban and the registration approved where the
    challenge asks (``leaderboard.participation``), one team per challenge, the rules accepted, an
    open phase, the choice of tasks and splits, the tasks' settings. ``user`` None: the
    operator, an organiser of every challenge (a bundle imported on the command line submits
    its baselines so). Raises ``PermissionDenied`` or ``ValidationError``."""
    now = now or timezone.now()
    organiser = user is None or permissions.is_organiser(user, challenge)
    _check_allowed(user, team, challenge, organiser, is_baseline)
    _check_no_labeller(team, challenge, user)
    if not organiser:
        assert user is not None
        if why := participation.refusal(team, challenge):  # a ban, the registration
            raise PermissionDenied(why)
        try:
            check_one_team_per_challenge(team, challenge)
        except TeamError as exc:
            raise ValidationError(str(exc)) from None
        if must_accept_rules(user, challenge):
            raise ValidationError(
                f"accept the rules of {challenge.name} first (the Rules tab of its page, "
                f"/c/{challenge.slug}/?tab=rules); they changed since you last accepted them"
                if TermsAcceptance.objects.filter(user=user, challenge=challenge).exists()
                else f"accept the rules of {challenge.name} first (the Rules tab of its page, "
                f"/c/{challenge.slug}/?tab=rules)"
            )
    _check_open(challenge, now, organiser)
    chosen = resolve(challenge, choice)
    _run_settings(chosen.tasks)  # broken settings refuse the submission before anything is stored
    return Admission(organiser=organiser, chosen=chosen)


def submit(
    team: Team,
    challenge: Challenge,
    user: User | None,
    artifact: Artifact,
    method: MethodInfo,
    *,
    choice: Choice = EVERY_TASK,
    is_baseline: bool = False,
    now: datetime | None = None,
) -> Submission:
    """Check, store and register a submission, evaluated on the tasks and splits of ``choice``
    (every task by default); its runs' first stage is sent on commit.

    Raises ``PermissionDenied`` (not a member; baseline flag without being an organiser),
    ``ValidationError`` (a message per field: artifact, registry_ref, method metadata, tasks,
    splits; the phase) or ``leaderboard.quotas.QuotaExceeded`` (on a chosen task). Organisers of
    the challenge are exempt from quotas and phases (baselines, re-runs).
    """
    now = now or timezone.now()
    admission = admit(team, challenge, user, choice, is_baseline=is_baseline, now=now)
    organiser, chosen = admission.organiser, admission.chosen
    tasks = chosen.tasks
    submission = Submission(
        team=team,
        challenge=challenge,
        submitted_by=user,
        artifact_kind=artifact.kind,
        method_name=method.method_name.strip(),
        description=method.description.strip(),
        paper_url=method.paper_url.strip(),
        code_url=method.code_url.strip(),
        is_baseline=is_baseline,
        created_at=now,
    )
    storage_name = _check_artifact(artifact, tasks, submission)
    # the submitter is None for the operator (a bundle's baselines imported on the command line)
    submission.full_clean(exclude=["artifact", "artifact_sha256", "artifact_size", "submitted_by"])
    if not organiser:
        check_quotas(team, tasks, now)
    if storage_name and artifact.file is not None:  # a name only for a checked file
        submission.artifact.save(storage_name, artifact.file, save=False)
    try:
        with transaction.atomic():
            Team.objects.select_for_update().filter(pk=team.pk).first()
            # a member made a labeller meanwhile is seen (``audits.invite`` holds them too)
            permissions.hold(team.memberships.values_list("user_id", flat=True))
            _check_no_labeller(team, challenge, user)
            if not organiser:
                check_quotas(team, tasks, now)
            submission.save()
            chosen.record(submission)
            _new_runs(submission, chosen.splits, set(), now)
    except BaseException:
        if submission.artifact:
            submission.artifact.delete(save=False)
        raise
    return submission
