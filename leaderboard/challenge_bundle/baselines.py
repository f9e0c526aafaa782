"""A bundle's baselines: the organisers' agents, each a build context in the bundle (a
directory with a Dockerfile), imported as submissions of the challenge's baseline team.

- The baseline team (``Team.baselines_of``) belongs to the challenge and is made by the first
  import that declares a baseline. Its submissions are ``is_baseline``: on the boards, unranked.
- Each baseline is submitted through ``leaderboard.submitting.submit`` as a build context (the
  checks, the build and the evaluation every team's submission gets), on the tasks it names,
  and queued when the import commits.
- Idempotent: a baseline is known by its method name; the same context (its reproducible tar's
  sha256), description and tasks change nothing, and a new description alone is written on
  its submission. A changed context or tasks is submitted again and the submission it replaces
  is deleted with its runs and results (its board row goes, the new one appears once
  evaluated); a baseline the bundle leaves out is deleted the same way.
- Export writes each back as ``baselines/<name>/``, the files of its stored context.
- Only the baseline team's build contexts are the bundle's: another submission of that team (an
  image or reference an organiser submitted through the API) is neither exported nor deleted.
"""

from __future__ import annotations

import hashlib
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from django.template.defaultfilters import pluralize
from django.utils.text import slugify

from evaluator.archives import extract_tar
from leaderboard.challenge_bundle import source
from leaderboard.challenge_bundle.loader import Bundle
from leaderboard.challenge_bundle.problems import BundleInvalid, Problem
from leaderboard.models import Challenge, Submission, Team
from leaderboard.pipeline.bundles import download
from leaderboard.submitting import Artifact, Choice, MethodInfo, submit
from podium.storage import stored_name

FOLDER = "baselines"
Kind = Submission.ArtifactKind


@dataclass(frozen=True)
class PreparedBaseline:
    """A declared baseline whose context is tarred (``tar``, in a scratch directory)."""

    place: int  # its index in the bundle's ``baselines``
    method_name: str
    description: str
    tasks: tuple[str, ...]
    tar: Path
    sha256: str

    @property
    def canonical(self) -> dict[str, Any]:
        return _canonical(self.description, self.tasks, self.sha256)


def _canonical(description: str, tasks: Any, sha256: str) -> dict[str, Any]:
    return {"description": description, "tasks": sorted(tasks), "sha256": sha256}


def context_tar(directory: Path, out: IO[bytes]) -> str:
    """The build context in ``directory`` as a reproducible tar (its files at the top level,
    sorted, dated 0, owned by root, mode 644 or 755) written to ``out``; its sha256."""
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            info = tarfile.TarInfo(path.relative_to(directory).as_posix())
            info.size, info.mtime = path.stat().st_size, 0
            info.mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
            with path.open("rb") as handle:
                tar.addfile(info, handle)
    out.seek(0)
    digest = hashlib.sha256()
    while chunk := out.read(1024 * 1024):
        digest.update(chunk)
    return digest.hexdigest()


def prepare(bundle: Bundle, scratch: Path) -> list[PreparedBaseline]:
    """Every baseline of ``bundle`` with its context tarred into ``scratch``."""
    prepared = []
    for place, baseline in enumerate(bundle.value.get("baselines", [])):
        tar = scratch / f"baseline-{place}.tar"
        with tar.open("w+b") as out:
            sha256 = context_tar(bundle.root / baseline["context"], out)
        prepared.append(
            PreparedBaseline(
                place=place,
                method_name=baseline["method_name"].strip(),
                description=baseline.get("description", "").strip(),
                tasks=tuple(baseline["tasks"]),
                tar=tar,
                sha256=sha256,
            )
        )
    return prepared


def wanted(prepared: list[PreparedBaseline]) -> dict[str, Any]:
    """The baselines as the challenge's canonical document holds them, by method name."""
    return {b.method_name: b.canonical for b in prepared}


def _submissions(challenge: Challenge) -> list[Submission]:
    return list(
        Submission.objects.filter(
            challenge=challenge, team__baselines_of=challenge, artifact_kind=Kind.BUILD_CONTEXT
        )
        .prefetch_related("chosen_tasks__task")
        .order_by("method_name", "pk")
    )


def _tasks(submission: Submission) -> list[str]:
    return [chosen.task.task_id for chosen in submission.chosen_tasks.all()]


def live(challenge: Challenge) -> dict[str, Any]:
    """The challenge's declared baselines now, by method name."""
    return {s.method_name: live_one(s) for s in _submissions(challenge)}


def apply(
    bundle: Bundle,
    challenge: Challenge,
    prepared: list[PreparedBaseline],
    user: User | None,
    written: list[str],
) -> list[str]:
    """Make the challenge's baselines those of ``prepared``: new or changed ones submitted
    (their stored contexts appended to ``written``), replaced or left-out ones deleted. A line
    for the diff per baseline deleted, saying what goes with it."""
    current = {s.method_name: s for s in _submissions(challenge)}
    if not prepared and not current:
        return []
    gone: list[str] = []
    team = _team(bundle, challenge)
    problems: list[Problem] = []
    for baseline in prepared:
        old = current.pop(baseline.method_name, None)
        if old is not None:
            if live_one(old) == baseline.canonical:
                continue
            if live_one(old) == {**baseline.canonical, "description": old.description}:
                old.description = baseline.description  # words alone: no new evaluation
                old.save(update_fields=["description"])
                continue
            gone.append(_delete(old, "replaced"))
        with baseline.tar.open("rb") as handle:
            artifact = Artifact(
                Kind.BUILD_CONTEXT, File(handle, name=f"{baseline.method_name}.tar")
            )
            try:
                made = submit(
                    team,
                    challenge,
                    user,
                    artifact,
                    MethodInfo(method_name=baseline.method_name, description=baseline.description),
                    choice=Choice(tasks=baseline.tasks),
                    is_baseline=True,
                )
            except ValidationError as exc:
                problems.append(_problem(bundle, baseline.place, exc))
                continue
        written.append(stored_name(made.artifact))
    gone += [_delete(old, "left out") for old in current.values()]
    if problems:
        raise BundleInvalid(problems)
    return gone


def live_one(submission: Submission) -> dict[str, Any]:
    return _canonical(submission.description, _tasks(submission), submission.artifact_sha256)


def _problem(bundle: Bundle, place: int, exc: ValidationError) -> Problem:
    found = bundle.document.problem((FOLDER, place, "context"), "")
    messages = "; ".join(exc.messages)
    return Problem(found.file, found.line, found.field, f"not submitted: {messages}")


def _team(bundle: Bundle, challenge: Challenge) -> Team:
    team = Team.objects.filter(baselines_of=challenge).first()
    if team is not None:
        return team
    name = f"Baselines ({challenge.slug})"
    if Team.objects.filter(name=name).exists():
        raise BundleInvalid(
            [
                bundle.document.problem(
                    (FOLDER,),
                    f"the baseline team's name {name!r} is taken by another team: rename it",
                )
            ]
        )
    return Team.objects.create(name=name, baselines_of=challenge)


def _delete(submission: Submission, why: str) -> str:
    """A replaced or left-out baseline deleted with its runs and results; its stored context
    once the import commits. The diff's line for it."""
    name = submission.artifact.name
    runs = submission.runs.count()
    submission.delete()
    if name:
        transaction.on_commit(lambda: default_storage.delete(name))
    return (
        f"baseline {submission.method_name!r} {why}: its submission and its {runs} "
        f"run{pluralize(runs)} with their results are deleted"
    )


def export(challenge: Challenge, out: Path) -> list[dict[str, Any]]:
    """The declared baselines written into the bundle directory ``out`` (each one's stored
    context unpacked in ``baselines/<name>/``); their entries for challenge.yaml."""
    entries, folders = [], set()
    for submission in _submissions(challenge):
        folder = slugify(submission.method_name) or "baseline"
        while folder in folders:
            folder += "-1"
        folders.add(folder)
        with tempfile.TemporaryDirectory(prefix="podium-baseline-") as scratch:
            tar = Path(scratch) / "context.tar"
            download(stored_name(submission.artifact), submission.artifact_sha256, tar, "baseline")
            extract_tar(tar, out / FOLDER / folder, source.limits())
        entries.append(
            {
                "method_name": submission.method_name,
                "description": submission.description,
                "context": f"{FOLDER}/{folder}",
                "tasks": _tasks(submission),
            }
        )
    return entries
