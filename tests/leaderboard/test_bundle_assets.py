"""A bundle's logo and starter-kit files: checked (raster only, sizes, paths inside the
bundle), stored, shown, carried by the kit with their sha256, and exported byte for byte."""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.urls import reverse
from PIL import Image

from leaderboard.challenge_bundle import assets
from leaderboard.challenge_bundle.exporter import export
from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.kits import archive, contents
from leaderboard.models import Challenge, KitFile
from tests.leaderboard.bundle_support import edit, problems, write_bundle
from tests.leaderboard.kit_support import kit_members, kit_settings

__all__ = ["kit_settings"]  # fixtures used by name

pytestmark = pytest.mark.django_db


def image(path: Path, size: tuple[int, int] = (32, 16), kind: str = "PNG") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, (200, 40, 40)).save(path, kind)
    return path


@pytest.fixture
def bundle(tmp_path) -> Path:
    root = write_bundle(tmp_path / "bundle")
    image(root / "art" / "logo.png")
    (root / "starter" / "notebooks").mkdir(parents=True)
    (root / "starter" / "README.md").write_text("# Our notes\n")
    (root / "starter" / "notebooks" / "explore.py").write_text("print('hi')\n")
    edit(
        root,
        "    rules: pages/rules.md\n",
        "    rules: pages/rules.md\n  logo: art/logo.png\n  kit_files: [starter]\n",
    )
    return root


def line_of(bundle: Path, text: str) -> int:
    lines = (bundle / "challenge.yaml").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (lambda p: p.write_text('<svg xmlns="http://www.w3.org/2000/svg"/>'),
         "'art/logo.png': not a PNG, JPEG or WebP image (a logo is a raster image"),
        (lambda p: image(p, kind="GIF"), "'art/logo.png': a GIF image; a logo is a PNG, JPEG"),
        (lambda p: image(p, size=(4000, 10)),
         "'art/logo.png': 4000x10 pixels; a logo is at most 2048 pixels a side"),
        (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(2 * 1024 * 1024)),
         "'art/logo.png': 2097160 bytes; a logo holds at most 1048576"),
        (lambda p: p.write_bytes(image(p).read_bytes()[:-20]), "'art/logo.png': a damaged image"),
    ],
)  # fmt: skip
def test_a_bad_logo_is_named_with_its_line(bundle, write, message):
    write(bundle / "art" / "logo.png")
    (found,) = problems(bundle)
    assert found.startswith(f"challenge.yaml:{line_of(bundle, 'logo:')}: challenge.logo: "), found
    assert message in found, found


def test_kit_files_outside_the_bundle_or_empty_are_refused(bundle, tmp_path):
    (tmp_path / "secret.txt").write_text("not yours")
    (bundle / "empty").mkdir()
    edit(bundle, "kit_files: [starter]", "kit_files:\n  - ../secret.txt\n  - empty\n  - nowhere")
    found = problems(bundle)
    line = line_of(bundle, "../secret.txt")
    assert found == [
        f"challenge.yaml:{line}: challenge.kit_files[0]: '../secret.txt' leads outside the bundle",
        f"challenge.yaml:{line + 1}: challenge.kit_files[1]: 'empty': a directory without a file",
        f"challenge.yaml:{line + 2}: challenge.kit_files[2]: 'nowhere': no such file or "
        "directory in the bundle",
    ]


def test_a_kit_file_that_is_a_link_is_refused(bundle, tmp_path):
    (tmp_path / "secret.txt").write_text("not yours")
    (bundle / "starter" / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (found,) = problems(bundle)
    assert found == "starter/leak.txt: (bundle): a symbolic link: a bundle holds plain files only"


def test_kit_files_must_be_a_list_of_paths(bundle):
    edit(bundle, "kit_files: [starter]", "kit_files: starter")
    (found,) = problems(bundle)
    assert found == (
        f"challenge.yaml:{line_of(bundle, 'kit_files')}: challenge.kit_files: 'starter' is "
        "not of type 'array'"
    )


def test_the_logo_is_stored_served_and_shown(bundle, client):
    import_bundle(bundle)
    challenge = Challenge.objects.get()
    logo = (bundle / "art" / "logo.png").read_bytes()
    assert challenge.logo_sha256 == hashlib.sha256(logo).hexdigest()
    assert challenge.logo.name == f"logos/bundle-test/{challenge.logo_sha256}.png"
    response = client.get(reverse("leaderboard:challenge-logo", args=["bundle-test"]))
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert b"".join(response.streaming_content) == logo
    src = f'src="/c/bundle-test/logo/?v={challenge.logo_sha256[:12]}"'
    assert src in client.get(reverse("leaderboard:challenges")).content.decode()
    assert (
        src in client.get(reverse("leaderboard:challenge", args=["bundle-test"])).content.decode()
    )


def test_a_draft_challenge_s_logo_is_not_served_to_visitors(bundle, client):
    edit(bundle, "status: published", "status: draft")
    import_bundle(bundle)
    assert client.get("/c/bundle-test/logo/").status_code == 404


def test_a_changed_logo_replaces_the_old_file_once_the_import_commits(
    bundle, django_capture_on_commit_callbacks
):
    import_bundle(bundle)
    old = Challenge.objects.get().logo.name
    image(bundle / "art" / "logo.png", size=(20, 20), kind="JPEG")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert "challenge.logo" in "\n".join(import_bundle(bundle).changes)
        assert default_storage.exists(old), "deleted only once the import commits"
    for callback in callbacks:
        callback()
    challenge = Challenge.objects.get()
    assert not default_storage.exists(old) and challenge.logo.name.endswith(".jpg")


def test_kit_files_go_into_the_kit_under_files_with_their_sha256(bundle, kit_settings):
    import_bundle(bundle)
    challenge = Challenge.objects.get()
    assert list(KitFile.objects.values_list("path", flat=True)) == [
        "starter/README.md",
        "starter/notebooks/explore.py",
    ]
    plan = contents.plan(challenge)
    out = io.BytesIO()
    archive.write_kit(plan, out)
    files = kit_members(out.getvalue())
    assert files["files/starter/README.md"] == b"# Our notes\n"
    assert files["files/starter/notebooks/explore.py"] == b"print('hi')\n"
    listed = json.loads(files["kit.json"])["files"]
    assert listed == [
        {"path": "files/starter/README.md", "sha256": hashlib.sha256(b"# Our notes\n").hexdigest(),
         "size": 12},
        {"path": "files/starter/notebooks/explore.py",
         "sha256": hashlib.sha256(b"print('hi')\n").hexdigest(), "size": 12},
    ]  # fmt: skip
    assert "`files/starter/README.md`" in files["README.md"].decode()
    (bundle / "starter" / "README.md").write_text("# Our notes, revised\n")
    old, new = (
        hashlib.sha256(t).hexdigest() for t in (b"# Our notes\n", b"# Our notes, revised\n")
    )
    assert import_bundle(bundle).changes == [
        f"~ challenge.kit_files.starter/README.md: '{old}' -> '{new}'"
    ]
    assert contents.plan(Challenge.objects.get()).version != plan.version


def test_a_damaged_kit_file_stops_the_kit(bundle, kit_settings):
    import_bundle(bundle)
    stored = KitFile.objects.get(path="starter/README.md")
    with default_storage.open(stored.file.name, "wb") as f:
        f.write(b"# Not our notes\n")
    with pytest.raises(archive.KitError, match="differ from the recorded sha256"):
        archive.write_kit(contents.plan(Challenge.objects.get()), io.BytesIO())


def test_logo_and_kit_files_are_exported_byte_for_byte(bundle, tmp_path):
    import_bundle(bundle)
    export(Challenge.objects.get(), tmp_path / "out", private=True)
    out = tmp_path / "out"
    assert (out / "logo.png").read_bytes() == (bundle / "art" / "logo.png").read_bytes()
    assert (out / "starter" / "notebooks" / "explore.py").read_text() == "print('hi')\n"
    text = (out / "challenge.yaml").read_text()
    assert "logo: logo.png" in text and "- starter/notebooks/explore.py" in text
    assert import_bundle(out).unchanged


def test_a_bundle_without_a_logo_removes_it(bundle):
    import_bundle(bundle)
    edit(bundle, "  logo: art/logo.png\n", "")
    edit(bundle, "  kit_files: [starter]\n", "")
    changes = import_bundle(bundle).changes
    assert f"~ challenge.logo: '{assets.file_sha256(bundle / 'art' / 'logo.png')}' -> None" in (
        changes
    )
    challenge = Challenge.objects.get()
    assert not challenge.logo and not challenge.kit_files.exists()
