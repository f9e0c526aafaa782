"""A bundle imported: checked, digested, compared with the live challenge, then applied in one
transaction as a new ``ChallengeVersion`` (or not at all).

- Importing what is already live changes nothing (no version, no file written).
- A changed bundle is applied whole: the challenge's fields and pages, its phases, its tasks
  (a task the bundle leaves out is deleted, unless it has runs), their splits and the corpus.
- A split that has runs is never replaced in place: its changed data becomes the split's next
  version (``leaderboard.splits.save_split``), the earlier one keeps its runs and boards; the
  diff says so. ``redo_runs``: each submission that had a run on the earlier version, and
  takes that split, is run on the new one (``submitting.runs_on_new_version``), sent once the
  import commits. A split with runs (in any version) that the bundle leaves out is refused.
- Every file stored for it (split bundles, the corpus, the logo, kit files, baselines'
  contexts) is deleted when it fails; files it replaces are deleted once it commits. The
  ``SearchCorpus`` row, the baselines' submissions and their runs are in its transaction
  (the runs are queued when it commits).
- ``dry_run`` (``challenge validate``) does all of it, runs the publish checklist, and rolls back.
- Who may is decided first (``admission``): from the user, then from the slug in the bundle's
  manifest, before the bundle is unpacked or its manifest parsed whole.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from evaluator.archives import ArchiveError
from leaderboard.challenge_bundle import (
    admission,
    assets,
    baselines,
    loader,
    page_diff,
    source,
    split_versions,
    state,
)
from leaderboard.challenge_bundle.problems import BundleInvalid, Problem
from leaderboard.challenge_bundle.schema import PAGES
from leaderboard.challenge_bundle.state import Canonical
from leaderboard.models import Challenge, ChallengeVersion, Phase, Split, Task
from leaderboard.pipeline.bundles import store_corpus, write_corpus
from leaderboard.publishing import publish_problems
from leaderboard.splits import (
    PreparedSplit,
    SplitImportError,
    prepared_split,
    save_split,
    unpack_upload,
)
from podium.storage import stored_name
from workers.faults import PodiumFault
from workers.search.corpus import Corpus, CorpusError


@dataclass
class Outcome:
    """What an import did (or, dry run, would do)."""

    slug: str
    changes: list[str]
    version: int | None = None  # the version made; None when nothing changed
    checklist: list[str] = field(default_factory=list)  # the publish checklist's problems
    runs_queued: int = 0  # runs on new split versions (``redo_runs``)
    pages: dict[str, list[str]] = field(default_factory=dict)  # ``page_diff.page_diffs``

    @property
    def unchanged(self) -> bool:
        return not self.changes


class _DryRun(Exception):
    pass


def import_bundle(
    path: str | Path,
    user: User | None = None,
    via: str = "manage.py",
    dry_run: bool = False,
    slug: str | None = None,
    redo_runs: bool = False,
    shown: str | None = None,
) -> Outcome:
    """Import the bundle at ``path`` (a directory or a zip); ``slug``: the challenge it must be
    (an organiser's page); ``redo_runs``: run the submissions of a split that gets a new
    version on it again; ``shown``: the zip's name in problems (an upload's). Raises
    ``BundleInvalid`` (every problem), ``PermissionDenied``."""
    admission.refuse_stranger(user)
    admit = partial(admission.admit, user, slug)
    with source.opened(path, admit, shown) as (root, head), ExitStack() as stack:
        bundle = loader.load(root, timezone.now(), _kept_phases(head.slug))
        slug = bundle.value["challenge"]["slug"]
        if slug != head.slug:  # libyaml (admission) and ruamel.yaml read it alike: not expected
            raise BundleInvalid(
                [
                    bundle.document.problem(
                        ("challenge", "slug"),
                        f"read as {slug!r}, and as {head.slug!r} when deciding who may import "
                        "it: write it as plain text",
                    )
                ]
            )
        existing = Challenge.objects.filter(slug=slug).first()
        splits = _prepare_splits(bundle, stack)
        corpus = _corpus(bundle, stack)
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="podium-baselines-"))
        declared = baselines.prepare(bundle, Path(scratch))
        before = state.live(existing) if existing else None
        kept_corpus = before["challenge"]["corpus"] if before else None
        after = state.wanted(
            bundle,
            {k: p.sha256 for k, p in splits.items()},
            corpus[1] if corpus else kept_corpus,
            baselines.wanted(declared),
        )
        pages = page_diff.page_diffs(existing, bundle)
        outcome = Outcome(slug, page_diff.described(state.diff(before, after), pages), pages=pages)
        if outcome.unchanged and not dry_run:
            return outcome
        if existing is not None:
            outcome.changes += split_versions.diff_lines(existing, after)
        written: list[str] = []
        versions: list[tuple[Split, Split]] = []
        try:
            with transaction.atomic():
                challenge = _apply(bundle, existing, splits, written, versions, user)
                outcome.changes += baselines.apply(bundle, challenge, declared, user, written)
                has_corpus = corpus is not None or kept_corpus is not None
                outcome.checklist = publish_problems(challenge, has_corpus=has_corpus)
                lines, outcome.runs_queued = split_versions.redo(versions, redo_runs)
                outcome.changes += lines
                if dry_run:
                    raise _DryRun
                if corpus is not None:  # the tar and its row, in this transaction
                    store_corpus(challenge, corpus[0], written)
                _publish(bundle, challenge, outcome.checklist)  # reads the corpus row
                outcome.version = _record(challenge, after, outcome.changes, user, via)
        except _DryRun:
            _delete(written)
        except BaseException:
            _delete(written)
            raise
        return outcome


def _kept_phases(slug: str | None) -> list[tuple[str, str | None, str | None]]:
    """The live challenge's phases (they may lie in the past), by the bundle's slug."""
    return [
        (p.name, loader.moment(p.starts_at), loader.moment(p.ends_at))
        for p in Phase.objects.filter(challenge__slug=slug)
    ]


@contextmanager
def _tree(path: Path) -> Iterator[Path]:
    """A directory named by the bundle, or a tar of one unpacked (``unpack_upload``, within
    ``source.tar_limits``)."""
    if path.is_dir():
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="podium-bundle-tree-") as scratch, path.open("rb") as f:
        yield unpack_upload(f, Path(scratch), source.tar_limits())


def _prepare_splits(
    bundle: loader.Bundle, stack: ExitStack
) -> dict[tuple[str, str], PreparedSplit]:
    """Every split read by its task's benchmark; every problem collected."""
    prepared, problems = {}, []
    for t, task in enumerate(bundle.value.get("tasks", [])):
        for s, split in enumerate(task.get("splits", [])):
            place = ("tasks", t, "splits", s, "files")
            try:
                root = stack.enter_context(_tree(bundle.root / split["files"]))
                ready = stack.enter_context(prepared_split(task["protocol"], root))
            except (SplitImportError, ArchiveError) as exc:
                problems.append(_at(bundle, place, split["files"], str(exc)))
                continue
            if split.get("sha256", ready.sha256) != ready.sha256:
                problems.append(
                    bundle.document.problem(
                        ("tasks", t, "splits", s, "sha256"),
                        f"the split's bundle has sha256 {ready.sha256}, not the one written",
                    )
                )
            prepared[(task["id"], split["kind"])] = ready
    if problems:
        raise BundleInvalid(problems)
    return prepared


def _at(bundle: loader.Bundle, place: tuple[str | int, ...], name: str, message: str) -> Problem:
    found = bundle.document.problem(place, "")
    return Problem(found.file, found.line, found.field, f"{name}: {message}")


def _corpus(bundle: loader.Bundle, stack: ExitStack) -> tuple[Path, str] | None:
    """The bundle's corpus directory and its digest; None when the bundle has none."""
    name = bundle.value["challenge"].get("corpus")
    if name is None:
        return None
    place = ("challenge", "corpus")
    try:
        root = stack.enter_context(_tree(bundle.root / name))
        corpus = Corpus(root)
        corpus.image_entries(), corpus.web_pages()
        with tempfile.TemporaryFile() as out:
            return root, write_corpus(root, out)
    except (ArchiveError, CorpusError, OSError, PodiumFault) as exc:
        raise BundleInvalid([_at(bundle, place, name, str(exc))]) from None


def _apply(
    bundle: loader.Bundle,
    existing: Challenge | None,
    splits: dict[tuple[str, str], PreparedSplit],
    written: list[str],
    versions: list[tuple[Split, Split]],
    user: User | None,
) -> Challenge:
    value = bundle.value
    head = value["challenge"]
    if existing is not None:  # two imports of one challenge: one after the other
        existing = Challenge.objects.select_for_update().get(pk=existing.pk)
    challenge = existing or Challenge(slug=head["slug"])
    challenge.name = head["title"]
    challenge.description = head.get("description", "")
    challenge.package_index = head.get("package_index", "")
    challenge.kit_includes_corpus = head.get("kit_includes_corpus", False)
    challenge.overall = dict(value.get("overall", {}))  # as written (``leaderboard.overall``)
    public = value.get("public_board", {})  # ``leaderboard.public_board``
    challenge.freeze_days = public.get("freeze_days")
    challenge.ladder_threshold = public.get("ladder_threshold")
    # the Participants page toggles it too; the bundle, like every field, sets it as it says
    challenge.registration_approval = head.get("registration_approval", False)
    for page in PAGES:
        setattr(challenge, page, bundle.page(page))
    challenge.save()
    if existing is None and user is not None:
        challenge.organisers.add(user)
    assets.apply_logo(challenge, bundle.logo, written)
    assets.apply_kit_files(challenge, bundle.kit_files(), written)
    phases = value.get("phases", [])
    challenge.phases.exclude(name__in=[p["name"] for p in phases]).delete()
    for phase in phases:
        Phase.objects.update_or_create(
            challenge=challenge,
            name=phase["name"],
            defaults={
                **{key: datetime.fromisoformat(phase[key]) for key in ("starts_at", "ends_at")},
                "quota_per_day": phase.get("quotas", {}).get("per_day"),
                "quota_total": phase.get("quotas", {}).get("total"),
            },
        )
    tasks = value.get("tasks", [])
    challenge.tasks.exclude(task_id__in=[t["id"] for t in tasks]).delete()
    for order, task in enumerate(tasks):
        found, _ = Task.objects.get_or_create(challenge=challenge, task_id=task["id"])
        for name, field_value in loader.task_values(task).items():
            setattr(found, name, field_value)
        found.order = order
        found.save()
        _apply_splits(found, task.get("splits", []), splits, written, versions)
    return challenge


def _apply_splits(
    task: Task,
    declared: list[dict[str, Any]],
    splits: dict[tuple[str, str], PreparedSplit],
    written: list[str],
    versions: list[tuple[Split, Split]],
) -> None:
    """The task's splits as declared; ``versions`` gets each (superseded, new version) pair."""
    task.splits.exclude(kind__in=[s["kind"] for s in declared]).delete()
    for split in declared:
        prepared = splits[(task.task_id, split["kind"])]
        visibility = split.get("visibility", Split.Visibility.PUBLIC)
        reveal_at = split.get("reveal_at") and datetime.fromisoformat(split["reveal_at"])
        stored = Split.objects.current().filter(task=task, kind=split["kind"]).first()
        if stored is None or stored.sha256 != prepared.sha256:
            saved = save_split(task, split["kind"], prepared, visibility)
            written.append(stored_name(saved.bundle))
            if stored is not None and saved.pk != stored.pk:
                versions.append((stored, saved))
        # every version of a split is shown to whom its current one is
        Split.objects.filter(task=task, kind=split["kind"]).update(
            visibility=visibility, reveal_at=reveal_at
        )


def _publish(bundle: loader.Bundle, challenge: Challenge, checklist: list[str]) -> None:
    published = bundle.value["challenge"].get("status", "draft") == "published"
    if published and checklist:
        raise BundleInvalid(
            [bundle.document.problem(("challenge", "status"), f"cannot publish: {p}")
             for p in checklist]
        )  # fmt: skip
    Challenge.objects.filter(pk=challenge.pk).update(is_published=published)
    challenge.is_published = published


def _record(
    challenge: Challenge, document: Canonical, changes: list[str], user: User | None, via: str
) -> int:
    last = challenge.versions.aggregate(n=Max("number"))["n"] or 0
    ChallengeVersion.objects.create(
        challenge=challenge,
        number=last + 1,
        document=document,
        changes=changes,
        imported_by=user,
        via=via,
    )
    return last + 1


def _delete(names: list[str]) -> None:
    """Files written for an import that did not happen (one another split version stored
    under the same name, its data being the same, stays)."""
    for name in names:
        if not Split.objects.filter(bundle=name).exists():
            default_storage.delete(name)
