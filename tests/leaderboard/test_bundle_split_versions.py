"""Split versions (issue 20): a bundle changing a split that has results makes the split's next
version, current from then on, and leaves the earlier one with its runs, scores and board,
readable under ``?version=``; the organiser chooses whether runs are redone on the new one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.urls import reverse
from rest_framework.test import APIClient

from leaderboard import api_tokens, board_store
from leaderboard.challenge_bundle.exporter import export
from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.challenge_bundle.problems import BundleInvalid
from leaderboard.models import (
    ChallengeVersion,
    EvaluationRun,
    RankedBoard,
    Split,
    Submission,
    SubmissionTask,
    Team,
)
from podium import cli
from podium.celery import app
from tests.leaderboard.bundle_support import edit, write_bundle
from tests.leaderboard.factories import write_small_split
from tests.leaderboard.test_bundle_api import zipped
from tests.leaderboard.test_import_split import _tar_of

pytestmark = pytest.mark.django_db

NEW_VERSION = "split multi-turn-qa/validation: new version 2 (version 1 keeps its 2 runs)"
NOT_REDONE = "split multi-turn-qa/validation: version 2 starts with no runs (runs not redone)"
REDONE = "split multi-turn-qa/validation: version 2: 2 runs queued (runs redone)"


@pytest.fixture
def bundle(tmp_path) -> Path:
    return write_bundle(tmp_path / "bundle")


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """The runs whose first stage was sent to the workers."""
    runs: list[int] = []
    monkeypatch.setattr(app, "send_task", lambda name, kwargs, **_: runs.append(kwargs["run_id"]))
    return runs


def change(bundle: Path, kind: str = "validation", conversations: int = 4) -> None:
    """New data for the bundle's ``kind`` split."""
    shutil.rmtree(bundle / "data" / kind)
    write_small_split(bundle / "data" / kind, conversations=conversations)


def current(kind: str = "validation") -> Split:
    return Split.objects.current().get(kind=kind)


def board_url(kind: str = "validation") -> str:
    return reverse("leaderboard:leaderboard", args=("bundle-test", "multi-turn-qa", kind))


@pytest.fixture
def scored(bundle, make_entry) -> dict[str, EvaluationRun]:
    """The bundle imported; alpha and beta have scored runs on its validation split."""
    import_bundle(bundle)
    split = current()
    return {
        name: make_entry(Team.objects.create(name=name), split, score, method=f"{name}-m")
        for name, score in (("alpha", 0.4), ("beta", 0.2))
    }


def test_a_changed_split_with_results_becomes_a_new_version(bundle, scored, client):
    first = current()
    board = RankedBoard.objects.get(split=first)
    change(bundle)
    preview = import_bundle(bundle, dry_run=True)
    assert preview.changes[-2:] == [NEW_VERSION, NOT_REDONE]
    assert list(Split.objects.values_list("kind", "version")) == [
        ("private-test", 1), ("validation", 1)
    ]  # fmt: skip
    outcome = import_bundle(bundle)
    assert (outcome.version, outcome.changes, outcome.runs_queued) == (2, preview.changes, 0)
    assert ChallengeVersion.objects.get(number=2).changes == preview.changes
    first.refresh_from_db()
    second = current()
    assert (first.version, first.is_current, second.version, second.groups) == (1, False, 2, 4)
    assert second.visibility == first.visibility and second.bundle.name != first.bundle.name
    assert default_storage.exists(first.bundle.name)  # the earlier data stays
    assert set(EvaluationRun.objects.values_list("split", flat=True)) == {first.pk}
    kept = RankedBoard.objects.get(split=first)
    assert (kept.runs, kept.ranks) == (board.runs, board.ranks)
    assert [e.method_name for e in board_store.entries(first)] == ["alpha-m", "beta-m"]
    assert board_store.entries(second) == []

    page = client.get(board_url()).content.decode()
    assert "No evaluated entries yet" in page and "alpha-m" not in page
    assert "Split changed on" in page and f"{board_url()}?version=1" in page
    old = client.get(board_url(), {"version": "1"}).content.decode()
    assert "alpha-m" in old and "beta-m" in old and "superseded on" in old
    assert "?version=1" in old  # its links stay on version 1
    entry = reverse(
        "leaderboard:entry", args=("bundle-test", "multi-turn-qa", "validation", scored["alpha"].pk)
    )
    assert client.get(entry, {"version": "1"}).status_code == 200
    missing = client.get(board_url(), {"version": "3"})
    assert missing.status_code == 404 and "validation version 3" in missing.content.decode()
    assert client.get(board_url(), {"version": "one"}).status_code == 404
    export = reverse("leaderboard:export-json", args=("bundle-test", "multi-turn-qa", "validation"))
    assert len(client.get(export, {"version": "1"}).json()["entries"]) == 2

    api = APIClient()
    listed = api.get("/api/splits/", {"challenge": "bundle-test"}).json()
    assert {(s["kind"], s["version"]) for s in listed["results"]} == {
        ("private-test", 1), ("validation", 2)
    }  # fmt: skip
    (old_split,) = [
        s for s in api.get("/api/splits/", {"version": "1"}).json()["results"]
        if s["kind"] == "validation"
    ]  # fmt: skip
    assert old_split["id"] == first.pk and old_split["superseded_at"]
    entries = api.get(f"/api/splits/{first.pk}/leaderboard/").json()["entries"]
    assert [e["method_name"] for e in entries] == ["alpha-m", "beta-m"]
    assert api.get(f"/api/splits/{second.pk}/leaderboard/").json()["entries"] == []
    assert api.get("/api/splits/", {"version": "0"}).status_code == 400

    again = import_bundle(bundle)  # the same bundle: nothing changes
    assert again.unchanged and Split.objects.count() == 3


def test_redo_runs_queues_runs_on_the_new_version_for_those_who_chose_it(
    bundle, scored, make_entry, sent, django_capture_on_commit_callbacks
):
    first = current()
    task = first.task
    SubmissionTask.objects.create(
        submission=scored["beta"].submission, task=task, split_kinds=["validation"]
    )
    narrowed = make_entry(Team.objects.create(name="gamma"), first, 0.3)
    SubmissionTask.objects.create(
        submission=narrowed.submission, task=task, split_kinds=["private-test"]
    )
    failed = make_entry(Team.objects.create(name="delta"), first, 0.1)
    Submission.objects.filter(pk=failed.submission_id).update(state=Submission.State.FAILED)
    make_entry(Team.objects.create(name="eps"), current("private-test"), 0.5)
    change(bundle)
    with django_capture_on_commit_callbacks(execute=True):
        preview = import_bundle(bundle, dry_run=True, redo_runs=True)
    assert preview.runs_queued == 2 and sent == []  # a preview queues nothing
    assert EvaluationRun.objects.filter(split__version=2).count() == 0
    with django_capture_on_commit_callbacks(execute=True):
        outcome = import_bundle(bundle, redo_runs=True)
    assert outcome.runs_queued == 2
    assert outcome.changes[-1] == REDONE
    redone = EvaluationRun.objects.filter(split=current())
    assert {r.submission_id for r in redone} == {
        scored["alpha"].submission_id, scored["beta"].submission_id
    }  # fmt: skip
    assert {r.state for r in redone} == {EvaluationRun.State.QUEUED}
    assert {r.items_total for r in redone} == {current().items}
    assert sorted(sent) == sorted(r.pk for r in redone)  # sent once the import committed
    assert EvaluationRun.objects.filter(split=first).count() == 4  # the earlier runs stay


def test_a_changed_split_without_results_is_replaced_in_place(
    bundle, scored, django_capture_on_commit_callbacks
):
    before = current("private-test")
    change(bundle, "private-test", conversations=5)
    with django_capture_on_commit_callbacks(execute=True):
        outcome = import_bundle(bundle, redo_runs=True)
    assert not any(line.startswith("split ") for line in outcome.changes)
    after = current("private-test")
    assert (after.pk, after.version, after.groups) == (before.pk, 1, 5)
    assert Split.objects.filter(kind="private-test").count() == 1
    assert not default_storage.exists(before.bundle.name)  # the replaced file goes


def test_a_new_version_without_results_is_replaced_in_place_and_export_writes_it(
    bundle, scored, tmp_path
):
    change(bundle)
    import_bundle(bundle)
    change(bundle, conversations=5)
    outcome = import_bundle(bundle)
    assert not any(line.startswith("split ") for line in outcome.changes)
    assert list(Split.objects.filter(kind="validation").values_list("version", "groups")) == [
        (1, 2), (2, 5)
    ]  # fmt: skip
    export(current().task.challenge, tmp_path / "out", private=True)
    manifest = (tmp_path / "out" / "challenge.yaml").read_text()
    assert manifest.count("kind: validation") == 1 and current().sha256 in manifest
    assert import_bundle(tmp_path / "out").unchanged


def test_a_split_with_results_in_any_version_is_never_removed(bundle, scored):
    change(bundle)
    import_bundle(bundle)  # version 2, no runs; version 1 has them
    edit(bundle, "      - {kind: validation, files: data/validation}\n", "")
    with pytest.raises(BundleInvalid, match="removes split bundle-test/multi-turn-qa/validation"):
        import_bundle(bundle)
    assert Split.objects.filter(kind="validation").count() == 2


def test_import_split_on_a_split_with_runs_makes_its_next_version(scored, tmp_path, capsys):
    first = current()
    data = write_small_split(tmp_path / "new", conversations=5)
    call_command(
        "import_split", str(data), "--task", "bundle-test/multi-turn-qa", "--kind", "validation"
    )
    assert "imported bundle-test/multi-turn-qa/validation (version 2)" in capsys.readouterr().out
    first.refresh_from_db()
    assert (first.is_current, current().version, current().groups) == (False, 2, 5)
    assert first.runs.count() == 2 and default_storage.exists(first.bundle.name)


def test_old_runs_pages_name_their_version(bundle, scored, client):
    change(bundle)
    import_bundle(bundle)
    member = User.objects.create_user("ann")
    Team.objects.get(name="alpha").memberships.create(user=member)
    client.force_login(member)
    run = client.get(reverse("leaderboard:run", args=(scored["alpha"].pk,))).content.decode()
    assert "(version 1, superseded)" in run
    listed = client.get(reverse("leaderboard:my-submissions")).content.decode()
    assert f"{board_url()}?version=1" in listed


def test_the_admin_uploads_to_the_current_version_only(bundle, scored, client, tmp_path):
    change(bundle)
    import_bundle(bundle)
    first = Split.objects.get(kind="validation", version=1)
    admin = User.objects.create_superuser("root")
    client.force_login(admin)
    edit_first = reverse("admin:leaderboard_split_change", args=(first.pk,))
    fields = {"task": first.task_id, "kind": "validation", "visibility": "hidden"}
    upload = _tar_of(write_small_split(tmp_path / "again", conversations=3))
    refused = client.post(edit_first, {**fields, "upload": upload})
    assert "is superseded: upload to its current version" in refused.content.decode()
    assert client.post(edit_first, fields).status_code == 302  # its own fields may change
    first.refresh_from_db()
    assert first.visibility == "hidden" and not first.is_current and current().version == 2


def test_one_current_version_per_task_and_kind(bundle):
    import_bundle(bundle)
    split = current()
    for version, superseded_at in ((2, None), (1, split.imported_at)):
        with pytest.raises(IntegrityError), transaction.atomic():
            Split.objects.create(
                task=split.task, kind=split.kind, version=version, superseded_at=superseded_at
            )


def test_a_superseded_board_keeps_the_split_s_visibility(bundle, make_entry, client):
    import_bundle(bundle)
    make_entry(Team.objects.create(name="alpha"), current("private-test"), 0.4)
    change(bundle, "private-test")
    import_bundle(bundle)
    assert client.get(board_url("private-test"), {"version": "1"}).status_code == 403
    organiser = User.objects.create_user("olga")
    current().task.challenge.organisers.add(organiser)
    client.force_login(organiser)
    assert client.get(board_url("private-test"), {"version": "1"}).status_code == 200


def test_redo_runs_is_an_option_of_every_import_path(bundle, scored, sent, capsys):
    stranger = User.objects.create_user("stranger")
    change(bundle)
    with pytest.raises(PermissionDenied):
        import_bundle(bundle, stranger, redo_runs=True)
    call_command("challenge", "diff", str(bundle), "--redo-runs")
    assert REDONE in capsys.readouterr().out
    api = APIClient()
    api.force_authenticate(User.objects.create_user("staff", is_staff=True))
    refused = api.post(
        "/api/bundles/diff/", {"bundle": zipped(bundle), "redo_runs": "maybe"}, format="multipart"
    )
    assert refused.status_code == 400 and "redo_runs" in refused.json()
    done = api.post(
        "/api/bundles/import/", {"bundle": zipped(bundle), "redo_runs": "true"}, format="multipart"
    )
    assert done.status_code == 200 and done.json()["runs_queued"] == 2
    assert EvaluationRun.objects.filter(split=current()).count() == 2


def test_the_organisers_page_redoes_runs_when_ticked(bundle, scored, sent, client):
    organiser = User.objects.create_user("olga")
    current().task.challenge.organisers.add(organiser)
    client.force_login(organiser)
    page = "/c/bundle-test/bundle/"
    assert 'name="redo_runs"' in client.get(page).content.decode()
    change(bundle)
    shown = client.post(page, {"action": "import", "bundle": zipped(bundle), "redo_runs": "1"})
    assert "2 runs queued on new split versions" in shown.content.decode()
    assert NEW_VERSION in shown.content.decode()
    assert EvaluationRun.objects.filter(split=current()).count() == 2


@pytest.mark.django_db(transaction=True)
def test_the_cli_redoes_runs_with_its_flag(bundle, make_entry, live_server, capsys, sent):
    token = api_tokens.create(User.objects.create_user("staff", is_staff=True), "tests")[1]
    base = ["--url", live_server.url, "--token", token, "challenge", "import", str(bundle)]
    assert cli.main(base) == 0
    make_entry(Team.objects.create(name="alpha"), current(), 0.4)
    change(bundle)
    assert cli.main([*base, "--redo-runs"]) == 0
    out = capsys.readouterr().out
    assert "new version 2 (version 1 keeps its 1 run)" in out
    assert "1 run queued on new split versions" in out
    assert EvaluationRun.objects.filter(split=current()).count() == 1
