"""Importing a bundle: idempotent, versioned with a diff (who and when), one transaction whose
written files go with a failure (a split that has results gets a new version instead of being
replaced: ``test_bundle_split_versions.py``); exporting: a bundle
that imports into an empty database as the same challenge, split files byte for byte; only
organisers import, diff or export a challenge."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.core.management import call_command
from django.core.management.base import CommandError

from leaderboard.challenge_bundle import state
from leaderboard.challenge_bundle.exporter import export
from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.models import (
    Challenge,
    ChallengeVersion,
    EvaluationRun,
    Split,
    Submission,
    Task,
    Team,
)
from tests.leaderboard.bundle_support import edit, write_bundle
from tests.leaderboard.submit_support import stored_under

pytestmark = pytest.mark.django_db


@pytest.fixture
def bundle(tmp_path) -> Path:
    return write_bundle(tmp_path / "bundle")


def test_an_import_makes_the_challenge_as_written(bundle):
    outcome = import_bundle(bundle)
    assert outcome.version == 1
    challenge = Challenge.objects.get(slug="bundle-test")
    assert challenge.is_published and challenge.rules == "# Rules\n\nBe kind.\n"
    task = challenge.tasks.get()
    assert (task.benchmark, task.settings, task.quota_per_day) == (
        "crag-mm",
        {"counting": "kit-b"},
        3,
    )
    assert task.quota_concurrent == 1  # the model's default where the bundle is silent
    assert not task.image_search_enabled and not task.web_search_enabled
    private = task.splits.get(kind="private-test")
    assert (private.groups, private.items, private.reveal_at.year) == (3, 6, 2099)
    assert challenge.phases.get().name == "Phase 1"
    (version,) = ChallengeVersion.objects.all()
    assert version.imported_by is None and version.via == "manage.py"
    assert "+ challenge.slug: 'bundle-test'" in version.changes


def test_the_same_bundle_twice_changes_nothing(bundle):
    import_bundle(bundle)
    files = stored_under("splits")
    versions = list(Split.objects.values_list("pk", "sha256", "imported_at"))
    again = import_bundle(bundle)
    assert again.unchanged and again.version is None
    assert stored_under("splits") == files
    assert list(Split.objects.values_list("pk", "sha256", "imported_at")) == versions
    assert ChallengeVersion.objects.count() == 1


def _running(challenge: Challenge) -> EvaluationRun:
    """A team's submission with a run on the validation split, as a live challenge has."""
    split = Split.objects.get(task__challenge=challenge, kind="validation")
    submission = Submission.objects.create(
        team=Team.objects.create(name="alpha"), challenge=challenge, method_name="m",
        artifact_kind=Submission.ArtifactKind.REGISTRY_REF, registry_ref="example/agent:1",
    )  # fmt: skip
    return EvaluationRun.objects.create(submission=submission, task=split.task, split=split)


def test_a_changed_bundle_is_a_new_version_with_its_diff_who_and_when(bundle):
    organiser = User.objects.create_user("olga", is_staff=True)
    import_bundle(bundle, organiser, via="api")
    run = _running(Challenge.objects.get())
    edit(bundle, "per_day: 3", "per_day: 10")
    (bundle / "pages" / "rules.md").write_text("# Rules\n\nBe kinder.\n")
    preview = import_bundle(bundle, organiser, dry_run=True)
    assert preview.changes == [
        "~ challenge.pages.rules: +1 -1 lines",
        "~ tasks.multi-turn-qa.quotas.per_day: 3 -> 10",
    ]
    assert preview.pages == {
        "rules": ["--- live/rules", "+++ bundle/rules", "@@ -1,3 +1,3 @@", " # Rules", " ",
                  "-Be kind.", "+Be kinder."]
    }  # fmt: skip
    assert Task.objects.get().quota_per_day == 3  # a preview changes nothing
    outcome = import_bundle(bundle, organiser, via="upload")
    assert outcome.version == 2 and outcome.changes == preview.changes
    latest = ChallengeVersion.objects.get(number=2)
    assert (latest.imported_by, latest.via, latest.changes) == (
        organiser,
        "upload",
        preview.changes,
    )
    assert Task.objects.get().quota_per_day == 10
    assert (
        EvaluationRun.objects.get() == run
        and run.split.sha256 == Split.objects.get(kind="validation").sha256
    )


def test_registration_approval_is_the_bundles_even_after_the_participants_page_toggled_it(
    bundle,
):
    import_bundle(bundle)
    challenge = Challenge.objects.get()
    assert challenge.registration_approval is False  # left out: off, as a new challenge's
    challenge.registration_approval = True  # as the Participants page toggles it
    challenge.save(update_fields=["registration_approval"])
    preview = import_bundle(bundle, dry_run=True)
    assert preview.changes == ["~ challenge.registration_approval: True -> False"]
    import_bundle(bundle)
    assert Challenge.objects.get().registration_approval is False
    edit(bundle, "  status: published\n", "  status: published\n  registration_approval: true\n")
    assert import_bundle(bundle).changes == ["~ challenge.registration_approval: False -> True"]
    assert Challenge.objects.get().registration_approval is True
    assert import_bundle(bundle).unchanged


def test_a_failed_import_removes_the_files_it_wrote(bundle, monkeypatch):
    from leaderboard.challenge_bundle import importer

    def fail(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(importer, "_record", fail)
    with pytest.raises(RuntimeError):
        import_bundle(bundle)
    assert not Challenge.objects.exists()
    assert stored_under("splits") == set()


def test_only_organisers_import_diff_or_export(bundle, tmp_path):
    staff = User.objects.create_user("staff", is_staff=True)
    stranger = User.objects.create_user("stranger")
    with pytest.raises(PermissionDenied):
        import_bundle(bundle, stranger)  # a new challenge: staff only
    import_bundle(bundle, staff)
    challenge = Challenge.objects.get()
    assert list(challenge.organisers.all()) == [staff]
    edit(bundle, "per_day: 3", "per_day: 4")
    with pytest.raises(PermissionDenied, match="you organise none"):
        import_bundle(bundle, stranger)
    Challenge.objects.create(name="Other", slug="other").organisers.add(stranger)
    for dry_run in (True, False):
        with pytest.raises(PermissionDenied, match="only the organisers of 'bundle-test'"):
            import_bundle(bundle, stranger, dry_run=dry_run)
    User.objects.create_user("organiser")
    challenge.organisers.add(User.objects.get(username="organiser"))
    assert import_bundle(bundle, User.objects.get(username="organiser")).version == 2
    with pytest.raises(CommandError, match="none that you organise"):
        call_command(
            "challenge", "export", "bundle-test", str(tmp_path / "out"), "--as", "stranger"
        )


def digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_an_export_imports_into_an_empty_database_as_the_same_challenge(bundle, tmp_path):
    import_bundle(bundle)
    challenge = Challenge.objects.get()
    live = state.live(challenge)
    export(challenge, tmp_path / "first", private=True)
    Challenge.objects.all().delete()
    outcome = import_bundle(tmp_path / "first")
    assert state.live(Challenge.objects.get()) == live
    assert outcome.version == 1
    export(Challenge.objects.get(), tmp_path / "second", private=True)
    assert digests(tmp_path / "first") == digests(tmp_path / "second")
    for split in Split.objects.all():  # the split files, byte for byte
        assert digests(tmp_path / "first")[f"splits/{split.task.task_id}/{split.kind}.tar"] == (
            split.sha256
        )
    assert import_bundle(tmp_path / "second").unchanged


def test_an_export_without_private_splits_leaves_them_out(bundle, tmp_path):
    import_bundle(bundle)
    left_out = export(Challenge.objects.get(), tmp_path / "out", private=False)
    assert left_out == ["bundle-test/multi-turn-qa/private-test"]
    assert not (tmp_path / "out" / "splits" / "multi-turn-qa" / "private-test.tar").exists()
    assert "private-test" not in (tmp_path / "out" / "challenge.yaml").read_text()


def test_the_command_imports_diffs_and_exports(bundle, tmp_path, capsys):
    call_command("challenge", "import", str(bundle))
    assert "imported bundle-test as version 1" in capsys.readouterr().out
    call_command("challenge", "diff", str(bundle))
    assert capsys.readouterr().out == "bundle-test: unchanged\n"
    edit(bundle, "title: Bundle test", "title: Bundle test, renamed")
    call_command("challenge", "diff", str(bundle))
    assert "~ challenge.title: 'Bundle test' -> 'Bundle test, renamed'" in capsys.readouterr().out
    (bundle / "pages" / "rules.md").write_text("# Rules\n\nBe kinder.\n")
    call_command("challenge", "diff", str(bundle))
    assert (
        "  ~ challenge.pages.rules: +1 -1 lines\n"
        "  ~ challenge.title: 'Bundle test' -> 'Bundle test, renamed'\n"
        "    --- live/rules\n    +++ bundle/rules\n    @@ -1,3 +1,3 @@\n     # Rules\n     \n"
        "    -Be kind.\n    +Be kinder.\n"
    ) in capsys.readouterr().out
    call_command("challenge", "export", "bundle-test", str(tmp_path / "out.zip"), "--zip")
    Challenge.objects.all().delete()
    call_command("challenge", "import", str(tmp_path / "out.zip"))
    assert Challenge.objects.get().name == "Bundle test"
