"""``manage.py import_split`` and the admin's split upload."""

import hashlib
import io
import json
import tarfile

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from PIL import Image

from leaderboard.models import Split
from tests import required

from .factories import write_small_split

TASK = "crag-mm-2026/multi-turn-qa"


def import_split(directory, *extra):
    out = io.StringIO()
    call_command("import_split", str(directory), "--task", TASK, *extra, stdout=out)
    return out.getvalue()


def stored_bytes(split: Split) -> bytes:
    with split.bundle.open("rb") as f:
        return f.read()


def test_import_stores_a_reproducible_bundle_with_its_hash(task, tmp_path):
    source = write_small_split(tmp_path / "split")
    output = import_split(source, "--kind", "private-test", "--reveal-at", "2030-01-01T12:00")
    split = Split.objects.get(task=task, kind="private-test")
    data = stored_bytes(split)
    assert hashlib.sha256(data).hexdigest() == split.sha256
    assert f"sha256 {split.sha256}" in output and "3 conversations, 6 turns" in output
    assert (split.groups, split.items) == (3, 6)
    assert split.reveal_at.isoformat() == "2030-01-01T12:00:00+00:00"
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert sorted(tar.getnames()) == [
            "images/s0.jpg",
            "images/s1.jpg",
            "images/s2.jpg",
            "sessions.jsonl",
        ]
    import_split(source, "--kind", "private-test")
    split.refresh_from_db()
    assert hashlib.sha256(stored_bytes(split)).hexdigest() == split.sha256, "same bytes again"


def test_reimport_replaces_the_bundle_and_removes_the_old_file(
    task, tmp_path, django_capture_on_commit_callbacks
):
    import_split(write_small_split(tmp_path / "a", conversations=2), "--kind", "validation")
    old = Split.objects.get(task=task, kind="validation")
    with django_capture_on_commit_callbacks(execute=True):  # the old file goes after commit
        import_split(write_small_split(tmp_path / "b", conversations=4), "--kind", "validation")
    new = Split.objects.get(task=task, kind="validation")
    assert new.pk == old.pk and new.sha256 != old.sha256 and new.groups == 4
    assert not old.bundle.storage.exists(old.bundle.name)
    assert new.bundle.storage.exists(new.bundle.name)


def _break_line(source, line_no, text):
    sessions = source / "sessions.jsonl"
    lines = sessions.read_text().splitlines()
    lines[line_no - 1] = text(lines[line_no - 1])
    sessions.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda s: _break_line(s, 2, lambda line: line[:-5]), r"sessions.jsonl:2: malformed JSON"),
        (
            lambda s: _break_line(s, 1, lambda line: line.replace('"query"', '"qeury"')),
            r"sessions.jsonl:1.*query",
        ),
        (lambda s: (s / "images" / "s2.jpg").unlink(), r"sessions.jsonl:3: field 'image'"),
        (lambda s: (s / "sessions.jsonl").unlink(), r"not a split"),
    ],
)
def test_bad_split_directories_are_refused_with_file_and_line(task, tmp_path, damage, message):
    source = write_small_split(tmp_path / "split")
    damage(source)
    with pytest.raises(CommandError, match=message):
        import_split(source, "--kind", "public-test")
    assert not Split.objects.filter(task=task).exists(), "nothing half-imported"


def test_bad_arguments_are_named(task, tmp_path):
    source = write_small_split(tmp_path / "split")
    with pytest.raises(CommandError, match="does not exist"):
        import_split(tmp_path / "nowhere", "--kind", "validation")
    with pytest.raises(CommandError, match="expected <challenge>/<task-id>"):
        call_command("import_split", str(source), "--task", "crag", "--kind", "validation")
    with pytest.raises(CommandError, match=r"task 'crag/nope' does not exist \(known: crag-mm"):
        call_command("import_split", str(source), "--task", "crag/nope", "--kind", "validation")
    with pytest.raises(CommandError, match="expected an ISO date-time"):
        import_split(source, "--kind", "validation", "--reveal-at", "next tuesday")


def test_hugging_face_layout_is_stored_in_podium_format(task, tmp_path):
    datasets = required.module("datasets")
    label = datasets.ClassLabel
    jpeg = io.BytesIO()
    Image.new("RGB", (6, 6), (0, 90, 200)).save(jpeg, "JPEG")
    turn = {
        "interaction_id": datasets.Value("string"),
        "query": datasets.Value("string"),
        "domain": label(names=["vehicle", "food"]),
        "query_category": label(names=["reasoning", "simple-recognition"]),
        "dynamism": label(names=["static"]),
        "image_quality": label(names=["normal", "blurred"]),
    }
    features = datasets.Features(
        {
            "session_id": datasets.Value("string"),
            "image": datasets.Image(),
            "image_url": datasets.Value("string"),
            "turns": datasets.Sequence(turn),
            "answers": datasets.Sequence(
                {"interaction_id": datasets.Value("string"), "ans_full": datasets.Value("string")}
            ),
        }
    )
    skipped = "695b4b5c-7c65-4f7b-8968-50fe10482a16"  # left out by the official evaluation
    rows = {
        "session_id": ["h1", skipped],
        "image": [{"bytes": jpeg.getvalue(), "path": None}] * 2,
        "image_url": ["", ""],
        "turns": [{"interaction_id": [f"{s}-0"], "query": ["What food?"], "domain": [1],
                   "query_category": [1], "dynamism": [0], "image_quality": [1]}
                  for s in ("h1", skipped)],
        "answers": [{"interaction_id": [f"{s}-0"], "ans_full": ["a pie"]} for s in ("h1", skipped)],
    }  # fmt: skip
    datasets.Dataset.from_dict(rows, features=features).save_to_disk(str(tmp_path / "hf"))
    out = import_split(tmp_path / "hf", "--kind", "validation")
    assert f"converted: left out session {skipped} (the official SESSIONS_TO_SKIP)" in out
    split = Split.objects.get(task=task, kind="validation")
    assert (split.groups, split.items) == (1, 1)
    with tarfile.open(fileobj=io.BytesIO(stored_bytes(split))) as tar:
        record = json.loads(tar.extractfile("sessions.jsonl").read())
    assert record["turns"][0]["domain"] == "food"  # the ClassLabel's name, not its number
    assert record["turns"][0]["image_quality"] == "blurred"


def _tar_of(directory) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(directory, arcname="split")
    buffer.seek(0)
    buffer.name = "split.tar.gz"
    return buffer


def test_admin_upload_validates_and_stores_the_bundle(client, task, tmp_path, make_user):
    client.force_login(_superuser(make_user))
    add = reverse("admin:leaderboard_split_add")
    good = _tar_of(write_small_split(tmp_path / "good"))
    response = client.post(
        add, {"task": task.pk, "kind": "public-test", "visibility": "public", "upload": good}
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    split = Split.objects.get(task=task, kind="public-test")
    assert split.groups == 3 and len(split.sha256) == 64
    broken = write_small_split(tmp_path / "bad")
    (broken / "images" / "s1.jpg").write_bytes(b"not an image")
    response = client.post(
        add, {"task": task.pk, "kind": "validation", "visibility": "public",
              "upload": _tar_of(broken)},
    )  # fmt: skip
    page = response.content.decode()
    assert response.status_code == 200 and "is not a readable image" in page
    assert not Split.objects.filter(task=task, kind="validation").exists()


def _superuser(make_user):
    user = make_user(staff=True)
    user.is_superuser = True
    user.save()
    return user


def _with_member(directory, info: tarfile.TarInfo) -> io.BytesIO:
    buffer = _tar_of(directory)
    with tarfile.open(fileobj=buffer, mode="r:gz") as good:
        members = [(m, good.extractfile(m).read() if m.isfile() else None) for m in good]
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for member, data in members:
            tar.addfile(member, io.BytesIO(data) if data is not None else None)
        tar.addfile(info, io.BytesIO(b"x" * info.size))
    out.seek(0)
    return out


@pytest.mark.parametrize(
    "name, kind, link, message",
    [
        ("split/../../evil", tarfile.REGTYPE, "", "entry 'split/../../evil' is a path leading"),
        ("split/images/up", tarfile.SYMTYPE, "../../..", "entry 'split/images/up' is a link to"),
        ("split/dev", tarfile.CHRTYPE, "", "entry 'split/dev' is a device or pipe"),
    ],
)
def test_split_upload_with_a_hostile_entry_is_refused_and_nothing_stored(
    task, tmp_path, name, kind, link, message
):
    from leaderboard.splits import SplitImportError, import_split_bundle

    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, 1 if kind == tarfile.REGTYPE else 0
    upload = _with_member(write_small_split(tmp_path / "split"), info)
    with pytest.raises(SplitImportError, match=f"the uploaded bundle: {message}"):
        import_split_bundle(task, "validation", upload)
    assert not Split.objects.filter(task=task, kind="validation").exists()
    assert not (tmp_path.parent / "evil").exists()


def test_split_upload_over_the_byte_limit_is_refused(task, tmp_path, settings):
    from leaderboard.splits import SplitImportError, import_split_bundle

    settings.PODIUM_ARCHIVE_MAX_BYTES = 1000
    upload = _tar_of(write_small_split(tmp_path / "split"))
    with pytest.raises(SplitImportError, match="unpacks to more than 1000 bytes"):
        import_split_bundle(task, "validation", upload)
    assert not Split.objects.filter(task=task, kind="validation").exists()
