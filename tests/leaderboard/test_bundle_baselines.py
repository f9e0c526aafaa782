"""A bundle's baselines: build contexts in the bundle, submitted by the challenge's baseline
team through the path every team's submission takes, queued when the import commits;
idempotent; replaced or removed with the bundle; exported back as their contexts."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.storage import default_storage

from leaderboard.challenge_bundle import baselines
from leaderboard.challenge_bundle.exporter import export
from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.challenge_bundle.problems import BundleInvalid
from leaderboard.models import Challenge, EvaluationRun, Submission, Team
from leaderboard.submitting import Artifact, MethodInfo, submit
from tests.leaderboard.broker import sent
from tests.leaderboard.bundle_support import edit, write_bundle
from tests.leaderboard.submit_support import broker, stored_under
from tests.leaderboard.test_bundle_import import digests

__all__ = ["broker"]  # fixtures used by name

pytestmark = pytest.mark.django_db

BASELINES = """\
baselines:
  - method_name: Echo baseline
    description: answers with the question
    context: baselines/echo
    tasks: [multi-turn-qa]
"""


def write_baseline(directory: Path, answer: str = "echo") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "Dockerfile").write_text("FROM podium/agent-base:py3.11\nCOPY agent.py /agent/\n")
    (directory / "agent.py").write_text(f"ANSWER = {answer!r}\n")
    (directory / "run.sh").write_text("#!/bin/sh\nexec python -m agentkit.server\n")
    (directory / "run.sh").chmod(0o755)
    return directory


@pytest.fixture
def bundle(tmp_path) -> Path:
    root = write_bundle(tmp_path / "bundle")
    write_baseline(root / "baselines" / "echo")
    with (root / "challenge.yaml").open("a") as manifest:
        manifest.write(BASELINES)
    return root


def line_of(bundle: Path, text: str) -> int:
    lines = (bundle / "challenge.yaml").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def problems(path: Path) -> list[str]:
    with pytest.raises(BundleInvalid) as raised:
        import_bundle(path)
    assert not Challenge.objects.exists() and not Submission.objects.exists()
    return [str(p) for p in raised.value.problems]


def test_a_baseline_without_a_dockerfile_is_refused(bundle):
    (bundle / "baselines" / "echo" / "Dockerfile").unlink()
    (found,) = problems(bundle)
    assert found == (
        f"challenge.yaml:{line_of(bundle, 'context:')}: baselines[0].context: 'baselines/echo' "
        "is not a build context: a baseline is a directory with a Dockerfile at its top level"
    )


def test_a_baseline_on_a_task_the_bundle_lacks_is_refused(bundle):
    edit(bundle, "tasks: [multi-turn-qa]", "tasks: [multi-turn]")
    (found,) = problems(bundle)
    assert found == (
        f"challenge.yaml:{line_of(bundle, '[multi-turn]')}: baselines[0].tasks[0]: no task "
        "'multi-turn' in this bundle (tasks: multi-turn-qa)"
    )


def test_two_baselines_of_one_name_are_refused(bundle):
    with (bundle / "challenge.yaml").open("a") as manifest:
        manifest.write(
            BASELINES.removeprefix("baselines:\n").replace("Echo baseline", "Echo baseline ")
        )
    (found,) = problems(bundle)
    lines = (bundle / "challenge.yaml").read_text().splitlines()
    second = [i for i, line in enumerate(lines, 1) if "method_name" in line][1]
    assert found == (
        f"challenge.yaml:{second}: baselines[1]: baseline method_name 'Echo baseline' appears twice"
    )


def test_a_baseline_needs_its_tasks(bundle):
    edit(bundle, "tasks: [multi-turn-qa]", "tasks: []")
    (found,) = problems(bundle)
    assert found == (
        f"challenge.yaml:{line_of(bundle, 'tasks: []')}: baselines[0].tasks: [] should be non-empty"
    )


def test_the_import_submits_each_baseline_and_queues_it_on_commit(
    bundle, broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        import_bundle(bundle)
    challenge = Challenge.objects.get()
    submission = Submission.objects.get()
    team = Team.objects.get(baselines_of=challenge)
    assert (team.name, submission.team) == ("Baselines (bundle-test)", team)
    assert submission.is_baseline and submission.submitted_by is None
    assert submission.artifact_kind == Submission.ArtifactKind.BUILD_CONTEXT
    assert (submission.method_name, submission.description) == (
        "Echo baseline",
        "answers with the question",
    )
    runs = list(submission.runs.order_by("split__kind"))
    assert [(r.task.task_id, r.split.kind) for r in runs] == [
        ("multi-turn-qa", "private-test"),
        ("multi-turn-qa", "validation"),
    ]
    assert {r.state for r in runs} == {EvaluationRun.State.QUEUED}
    assert sorted(kwargs["run_id"] for _, kwargs in sent(broker, "build")) == sorted(
        r.pk for r in runs
    )


def test_a_dry_run_submits_nothing_and_leaves_no_file(
    bundle, broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        assert import_bundle(bundle, dry_run=True).checklist == []
    assert not Submission.objects.exists() and not Team.objects.exists()
    assert stored_under("submissions") == set()
    assert sent(broker, "build") == []


def test_an_organiser_submits_the_baselines_without_joining_the_team(bundle):
    organiser = User.objects.create_user("organiser", is_staff=True)
    import_bundle(bundle, organiser)
    submission = Submission.objects.get()
    assert submission.submitted_by == organiser
    assert not submission.team.memberships.exists()


def test_the_same_baseline_is_not_submitted_again_a_changed_one_replaces_it(
    bundle, django_capture_on_commit_callbacks
):
    import_bundle(bundle)
    first = Submission.objects.get()
    assert import_bundle(bundle).unchanged
    (bundle / "baselines" / "echo" / "agent.py").touch()  # a new date, the same content
    assert import_bundle(bundle).unchanged
    write_baseline(bundle / "baselines" / "echo", answer="changed")
    runs = first.runs.count()
    assert runs > 0
    with django_capture_on_commit_callbacks(execute=True):
        changes = import_bundle(bundle).changes
    assert [c.split(":")[0] for c in changes] == [
        "~ baselines.Echo baseline.sha256",
        "baseline 'Echo baseline' replaced",
    ]
    assert changes[1].endswith(f"its {runs} run{'s' * (runs != 1)} with their results are deleted")
    second = Submission.objects.get()
    assert second.pk != first.pk and second.artifact_sha256 != first.artifact_sha256
    assert not default_storage.exists(first.artifact.name), "the replaced context is deleted"
    edit(bundle, "description: answers with the question", "description: new words")
    import_bundle(bundle)
    assert Submission.objects.get().pk == second.pk, "a new description alone is no new run"
    assert Submission.objects.get().description == "new words"
    assert stored_under("submissions") == {second.artifact.name}


def test_a_baseline_left_out_is_deleted(bundle):
    import_bundle(bundle)
    sha256 = baselines.live_one(Submission.objects.get())["sha256"]
    text = (bundle / "challenge.yaml").read_text()
    (bundle / "challenge.yaml").write_text(text.replace(BASELINES, ""))
    changes = import_bundle(bundle).changes
    assert "- baselines.Echo baseline.description: 'answers with the question'" in changes
    assert f"- baselines.Echo baseline.sha256: '{sha256}'" in changes
    assert any(c.startswith("baseline 'Echo baseline' left out: its submission") for c in changes)
    assert not Submission.objects.exists()
    assert Team.objects.filter(baselines_of__slug="bundle-test").exists()


def test_baselines_are_exported_as_their_contexts_and_import_the_same(bundle, tmp_path):
    import_bundle(bundle)
    export(Challenge.objects.get(), tmp_path / "first", private=True)
    context = tmp_path / "first" / "baselines" / "echo-baseline"
    assert digests(context) == digests(bundle / "baselines" / "echo")
    assert (context / "run.sh").stat().st_mode & 0o111
    assert "context: baselines/echo-baseline" in (tmp_path / "first" / "challenge.yaml").read_text()
    assert import_bundle(tmp_path / "first").unchanged
    Challenge.objects.all().delete()
    import_bundle(tmp_path / "first")
    export(Challenge.objects.get(), tmp_path / "second", private=True)
    assert digests(tmp_path / "first") == digests(tmp_path / "second")


def test_a_baseline_teams_reference_is_no_bundle_baseline(bundle, tmp_path, broker):
    """An organiser may submit an image reference as the baseline team (the API names any
    team): a bundle carries contexts alone, so export leaves it out (it raised
    IsADirectoryError, reading the empty artifact name) and an import leaves it be."""
    import_bundle(bundle)
    challenge = Challenge.objects.get()
    team = Team.objects.get(baselines_of=challenge)
    ref = Artifact(Submission.ArtifactKind.REGISTRY_REF, registry_ref="team/agent:1")
    submit(team, challenge, None, ref, MethodInfo("Image baseline"), is_baseline=True)
    export(challenge, tmp_path / "out", private=True)
    assert sorted(p.name for p in (tmp_path / "out" / "baselines").iterdir()) == ["echo-baseline"]
    assert import_bundle(tmp_path / "out").unchanged
    assert Submission.objects.filter(method_name="Image baseline").exists()
