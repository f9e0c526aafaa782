"""``leaderboard.submitting.submit``: the one code path behind the form, the API and the demo."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files import File
from django.utils import timezone

from leaderboard.models import Challenge, EvaluationRun, Phase, Submission
from leaderboard.submitting import Artifact, MethodInfo, add_missing_runs, submit
from leaderboard.submitting.artifacts import check_reference

from .broker import sent
from .submit_support import (
    broker,
    build_context,
    image_archive,
    open_splits,
    stored_under,
    write_tar,
)

__all__ = ["broker", "open_splits"]  # fixtures used by name

Kind = Submission.ArtifactKind
METHOD = MethodInfo(method_name="Tiny RAG", paper_url="https://example.org/paper")


@pytest.fixture
def member(make_user, teams):
    return make_user("ann", team=teams["alpha"])


def _submit(member, teams, artifact, method=METHOD, **kwargs):
    return submit(teams["alpha"], Challenge.objects.get(), member, artifact, method, **kwargs)


def _file(path):
    return File(path.open("rb"), name=path.name)


def test_a_reference_gives_one_queued_run_per_split_and_sends_their_builds(
    broker, open_splits, teams, member, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        submission = _submit(member, teams, Artifact(Kind.REGISTRY_REF, registry_ref=" a/b:1 "))
    assert submission.registry_ref == "a/b:1" and submission.submitted_by == member
    assert submission.method_name == "Tiny RAG" and not submission.is_baseline
    runs = list(submission.runs.order_by("split__kind"))
    assert [r.split.kind for r in runs] == ["private-test", "public-test", "validation"]
    assert {(r.state, r.items_total) for r in runs} == {(EvaluationRun.State.QUEUED, 12)}
    messages = sent(broker, "build")
    assert {name for name, _ in messages} == {"build.prepare_run"}
    assert sorted(kwargs["run_id"] for _, kwargs in messages) == sorted(r.pk for r in runs)


def test_splits_without_data_are_not_run(open_splits, teams, member):
    open_splits["private-test"].bundle.name = ""
    open_splits["private-test"].save()
    submission = _submit(member, teams, Artifact(Kind.REGISTRY_REF, registry_ref="a/b"))
    assert sorted(submission.runs.values_list("split__kind", flat=True)) == [
        "public-test",
        "validation",
    ]


@pytest.mark.parametrize("compression", ["", "gz"])
def test_an_image_archive_is_stored_under_its_hash(
    open_splits, teams, member, tmp_path, compression, each_storage
):
    path = image_archive(tmp_path / "agent.tar", compression=compression)
    submission = _submit(member, teams, Artifact(Kind.IMAGE_ARCHIVE, file=_file(path)))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert submission.artifact_sha256 == digest
    assert submission.artifact_size == path.stat().st_size
    assert submission.artifact.name.endswith(
        f"image-archive-{digest}.tar" + (".gz" if compression else "")
    )
    with submission.artifact.open("rb") as stored:
        assert stored.read() == path.read_bytes()


def test_a_build_context_and_a_docker_save_with_layer_links_are_accepted(
    open_splits, teams, member, tmp_path
):
    context = build_context(tmp_path / "ctx.tar.gz", compression="gz")
    assert _submit(member, teams, Artifact(Kind.BUILD_CONTEXT, file=_file(context))).pk
    # Legacy docker save links a repeated layer to the first copy with a relative symlink.
    legacy = write_tar(
        tmp_path / "legacy.tar",
        {"manifest.json": b"[]", "a/layer.tar": b"x"},
        links={"b/layer.tar": "../a/layer.tar"},
    )
    teams["alpha"].submissions.all().delete()
    assert _submit(member, teams, Artifact(Kind.IMAGE_ARCHIVE, file=_file(legacy))).pk


BAD_ARCHIVES = {
    "not a tar": (Kind.IMAGE_ARCHIVE, lambda p: p.write_bytes(b"PK\3\4 zip" * 200), "not a tar"),
    "empty": (Kind.BUILD_CONTEXT, lambda p: p.write_bytes(b""), "the file is empty"),
    "truncated gzip": (
        Kind.BUILD_CONTEXT,
        lambda p: p.write_bytes(build_context(p, compression="gz").read_bytes()[:60]),
        "not a tar",
    ),
    "no Dockerfile": (
        Kind.BUILD_CONTEXT,
        lambda p: write_tar(p, {"app/Dockerfile": b"FROM x"}),
        "no Dockerfile at its top level",
    ),
    "no manifest": (
        Kind.IMAGE_ARCHIVE,
        lambda p: write_tar(p, {"layer.tar": b"x"}),
        "not a docker save archive: it has no manifest.json",
    ),
    "parent path": (
        Kind.BUILD_CONTEXT,
        lambda p: write_tar(p, {"Dockerfile": b"FROM x", "a/../../evil": b"x"}),
        "entry 'a/../../evil' is a path leading outside the archive",
    ),
    "absolute path": (
        Kind.IMAGE_ARCHIVE,
        lambda p: write_tar(p, {"manifest.json": b"[]", "/etc/cron.d/x": b"x"}),
        "entry '/etc/cron.d/x' is an absolute path",
    ),
    "link outside": (
        Kind.BUILD_CONTEXT,
        lambda p: write_tar(p, {"Dockerfile": b"FROM x"}, links={"d/x": "../../etc"}),
        "is a link to '../../etc', outside the archive",
    ),
    "link chain out": (
        Kind.BUILD_CONTEXT,
        lambda p: write_tar(p, {"Dockerfile": b"FROM x"}, links={"d/l": "..", "d/l/l2": ".."}),
        "entry 'd/l/l2' is a link to '..', outside the archive through a link",
    ),
    "link pointed out by a later link": (
        Kind.BUILD_CONTEXT,
        lambda p: write_tar(p, {"Dockerfile": b"FROM x"}, links={"a": "p/..", "p": "."}),
        "entry 'a' is a link leading outside the archive through a link",
    ),
    "absolute link": (
        Kind.BUILD_CONTEXT,
        lambda p: write_tar(p, {"Dockerfile": b"FROM x"}, links={"x": "/etc/shadow"}),
        "is a link to the absolute path '/etc/shadow'",
    ),
}


@pytest.mark.parametrize("case", BAD_ARCHIVES)
def test_a_bad_archive_is_refused_saying_why_and_nothing_is_kept(
    open_splits, teams, member, tmp_path, case, each_storage
):
    kind, make, message = BAD_ARCHIVES[case]
    path = tmp_path / "upload.tar"
    make(path)
    with pytest.raises(ValidationError) as error:
        _submit(member, teams, Artifact(kind, file=_file(path)))
    assert message in " ".join(error.value.message_dict["artifact"])
    assert error.value.message_dict["artifact"][0].startswith("upload.tar: ")
    assert not Submission.objects.exists() and stored_under("submissions") == set()


def test_an_archive_above_the_task_limit_is_refused(open_splits, teams, member, tmp_path):
    task = open_splits["validation"].task
    task.max_artifact_bytes = 5000
    task.save()
    path = image_archive(tmp_path / "big.tar")  # 10 KiB: tar pads to 10240 bytes
    with pytest.raises(ValidationError) as error:
        _submit(member, teams, Artifact(Kind.IMAGE_ARCHIVE, file=_file(path)))
    assert error.value.message_dict["artifact"] == [
        "big.tar is 10.0\xa0KB; this challenge takes at most 4.9\xa0KB"
    ]


@pytest.mark.parametrize(
    ("artifact", "field", "message"),
    [
        (Artifact(Kind.REGISTRY_REF, registry_ref="  "), "registry_ref", "give an image reference"),
        (Artifact(Kind.REGISTRY_REF, registry_ref="Team/Agent"), "registry_ref", "lower case"),
        (Artifact(Kind.REGISTRY_REF, registry_ref="a b:1"), "registry_ref", "not an image ref"),
        (Artifact(Kind.IMAGE_ARCHIVE), "artifact", "upload the image archive"),
        (Artifact("zip", registry_ref="a"), "artifact_kind", "unknown artifact kind 'zip'"),
        (
            Artifact(Kind.BUILD_CONTEXT, registry_ref="a/b"),
            "registry_ref",
            "either a file or a registry reference",
        ),
    ],
)
def test_a_bad_artifact_choice_names_its_field(
    open_splits, teams, member, artifact, field, message
):
    with pytest.raises(ValidationError) as error:
        _submit(member, teams, artifact)
    assert message in " ".join(error.value.message_dict[field])


@pytest.mark.parametrize(
    "ref",
    [
        "agent",
        "ghcr.io/team/agent:v1.2",
        "localhost:5000/a/b_c@sha256:" + "ab" * 32,
        "[::1]:5000/x",
    ],
)
def test_references_of_every_documented_shape_pass(ref):
    assert check_reference(ref) == ref


@pytest.mark.parametrize(
    ("method", "field"),
    [
        (MethodInfo(method_name="   "), "method_name"),
        (MethodInfo(method_name="m", paper_url="not a url"), "paper_url"),
        (MethodInfo(method_name="m", code_url="javascript:alert(1)"), "code_url"),
    ],
)
def test_bad_method_metadata_names_its_field(open_splits, teams, member, method, field):
    with pytest.raises(ValidationError) as error:
        _submit(member, teams, Artifact(Kind.REGISTRY_REF, registry_ref="a"), method)
    assert field in error.value.message_dict


def test_only_members_submit_for_a_team_and_only_organisers_mark_baselines(
    open_splits, teams, member, make_user
):
    ref = Artifact(Kind.REGISTRY_REF, registry_ref="a")
    stranger = make_user("bob", team=teams["beta"])
    with pytest.raises(PermissionDenied, match="not a member of team alpha"):
        _submit(stranger, teams, ref)
    with pytest.raises(PermissionDenied, match="only organisers"):
        _submit(member, teams, ref, is_baseline=True)
    open_splits["validation"].task.challenge.organisers.add(member)
    assert _submit(member, teams, ref, is_baseline=True).is_baseline
    assert Submission.objects.count() == 1


def test_submissions_are_taken_only_while_a_phase_is_open(open_splits, teams, member):
    challenge = open_splits["validation"].task.challenge
    now = timezone.now()
    Phase.objects.create(
        challenge=challenge,
        name="Phase 2",
        starts_at=now + timedelta(days=2),
        ends_at=now + timedelta(days=9),
    )
    ref = Artifact(Kind.REGISTRY_REF, registry_ref="a")
    with pytest.raises(ValidationError, match="no phase is open; Phase 2 opens"):
        _submit(member, teams, ref)
    assert _submit(member, teams, ref, now=now + timedelta(days=3)).pk


def test_a_challenge_without_data_takes_no_submission(splits, teams, member):
    with pytest.raises(ValidationError, match="has no split with data"):
        _submit(member, teams, Artifact(Kind.REGISTRY_REF, registry_ref="a"))


def _bomb(path, compression: str, declared: int, written: int, members: int = 1):
    """A compressed tar whose entries declare ``declared`` bytes each (zeros), of which only
    ``written`` are in the file: reading past a header would take the data that is not there."""
    import lzma
    import tarfile
    import zlib

    compressor = (
        lzma.LZMACompressor(preset=1) if compression == "xz" else zlib.compressobj(9, wbits=31)
    )
    with path.open("wb") as out:
        out.write(compressor.compress(tarfile.TarInfo("Dockerfile").tobuf() + bytes(0)))
        for i in range(members):
            info = tarfile.TarInfo(f"zeros{i}")
            info.size = declared
            out.write(compressor.compress(info.tobuf()))
            for _ in range(written // (1 << 20)):
                out.write(compressor.compress(bytes(1 << 20)))
        out.write(compressor.flush())
    return path


@pytest.mark.parametrize("compression", ["xz", "gz"])
def test_a_compression_bomb_is_refused_at_its_first_header(
    open_splits, teams, member, tmp_path, compression
):
    import time

    # 4 GiB of zeros declared, 16 MiB of them written: under 100 KB compressed.
    path = _bomb(tmp_path / f"bomb.tar.{compression}", compression, 4 << 30, 16 << 20)
    assert path.stat().st_size < 100_000
    started = time.monotonic()
    with pytest.raises(ValidationError) as error:
        _submit(member, teams, Artifact(Kind.BUILD_CONTEXT, file=_file(path)))
    elapsed = time.monotonic() - started
    message = " ".join(error.value.message_dict["artifact"])
    assert "entry 'zeros0' takes the archive past" in message and "256.0\xa0MB unpacked" in message
    assert elapsed < 5, f"refusing the bomb took {elapsed:.1f} s"
    assert not Submission.objects.exists() and stored_under("submissions") == set()


def test_many_entries_past_the_budget_are_refused(open_splits, teams, member, tmp_path, settings):
    settings.PODIUM_ARCHIVE_MAX_MEMBERS = 50
    path = write_tar(
        tmp_path / "many.tar", {"Dockerfile": b"FROM x", **{f"f{i}": b"" for i in range(60)}}
    )
    with pytest.raises(ValidationError) as error:
        _submit(member, teams, Artifact(Kind.BUILD_CONTEXT, file=_file(path)))
    assert "entry 'f49' takes the archive past 50 entries" in " ".join(
        error.value.message_dict["artifact"]
    )


def test_reserved_registry_references_are_refused_however_spelled(open_splits, teams, member):
    for ref in ("podium/agent-base:py3.11", "index.docker.io/podium/agent-base:py3.11",
                "registry-1.docker.io/podium-submission/1:latest"):  # fmt: skip
        with pytest.raises(ValidationError) as error:
            _submit(member, teams, Artifact(Kind.REGISTRY_REF, registry_ref=ref))
        assert "reserved for Podium's own images" in " ".join(
            error.value.message_dict["registry_ref"]
        )
    assert not Submission.objects.exists()


def test_an_upload_the_web_request_cannot_check_in_time_is_taken_and_checked_later(
    open_splits, teams, member, tmp_path, settings
):
    """The web request gives the check PODIUM_UPLOAD_CHECK_S; a bomb it has not finished is
    taken at once (hashed), and the build stage's whole check refuses it, saying why."""
    import time

    from leaderboard.submitting.artifacts import check_stored_archive

    settings.PODIUM_UPLOAD_CHECK_S = 0.001  # no check can finish in that
    path = _bomb(tmp_path / "bomb.tar.xz", "xz", 4 << 30, 16 << 20)
    started = time.monotonic()
    submission = _submit(member, teams, Artifact(Kind.BUILD_CONTEXT, file=_file(path)))
    assert time.monotonic() - started < 2, "the web request waited for the check"
    assert submission.artifact_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert submission.artifact.name.endswith(".tar.xz")
    started = time.monotonic()
    with pytest.raises(ValidationError) as error:
        check_stored_archive(Path(submission.artifact.path), Kind.BUILD_CONTEXT, "your upload")
    assert time.monotonic() - started < 5
    message = " ".join(error.value.messages)
    assert message.startswith("your upload: entry 'zeros0' takes the archive past")


def test_settings_enabled_later_are_added_as_runs_and_nothing_twice(
    broker, open_splits, teams, member, django_capture_on_commit_callbacks
):
    task = open_splits["validation"].task
    task.benchmark, task.primary_metric = "visual-rag", "accuracy"
    task.image_search_enabled = task.web_search_enabled = False
    task.settings = {"evaluated": ["gt_clue"]}
    task.save()
    with django_capture_on_commit_callbacks(execute=True):
        submission = _submit(member, teams, Artifact(Kind.REGISTRY_REF, registry_ref="a/b:1"))
    assert sorted((r.split.kind, r.setting) for r in submission.runs.all()) == [
        ("private-test", "gt_clue"), ("public-test", "gt_clue"), ("validation", "gt_clue")
    ]  # fmt: skip
    first = sorted(kwargs["run_id"] for _, kwargs in sent(broker, "build"))
    task.settings = {"evaluated": ["gt_clue", "zero_shot"]}
    task.save()
    with django_capture_on_commit_callbacks(execute=True):
        added = add_missing_runs(submission)
    assert sorted((r.split.kind, r.setting) for r in added) == [
        ("private-test", "zero_shot"), ("public-test", "zero_shot"), ("validation", "zero_shot")
    ]  # fmt: skip
    assert sorted(kwargs["run_id"] for _, kwargs in sent(broker, "build")) == sorted(
        first + [r.pk for r in added]
    )  # each new run's build sent, once
    assert add_missing_runs(submission) == []  # nothing twice
    submission.state = Submission.State.FAILED
    task.settings = {"evaluated": ["gt_clue", "zero_shot", "non_clue"]}
    task.save()
    assert add_missing_runs(submission) == []  # a failed submission is not run again
