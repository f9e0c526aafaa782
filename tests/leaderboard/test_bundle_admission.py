"""Who may validate or import a bundle is decided first, from the request and the bundle's slug
alone; the sizes, entries and compression ratio of a zip are checked from its central directory
before anything is written, and its manifest's size, nodes and depth before it is parsed. Each
refusal is a clear message and costs under a second and under 50 MB, through the API and the
command line (issue #32, part 2)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.challenge_bundle.problems import BundleInvalid
from leaderboard.models import Challenge
from tests.leaderboard.bundle_support import MANIFEST
from tests.leaderboard.cost_support import Cost, MiB, measured

pytestmark = pytest.mark.django_db

INFLATED = 256 * MiB  # zeros, deflated about 1,000 times: the 1 MB zip wrote 1,020 MiB


@pytest.fixture(autouse=True)
def _warm(client):
    """What a first request or command loads (URLs, views, the command), loaded before any
    cost is measured."""
    client.get("/api/")
    call_command("challenge", "schema", stdout=io.StringIO())


def cheap(cost: Cost, upload: Path | None = None) -> bool:
    """Under a second and 50 MB, and nothing in the temporary folder but the upload as
    received (Django keeps an upload there while the request lasts)."""
    received = upload.stat().st_size if upload else 0
    return cost.seconds < 1 and cost.memory_bytes < 50 * MiB and cost.temp_bytes <= received


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    """A bundle zip of challenge ``bundle-test`` that inflates to 256 MiB."""
    path = tmp_path_factory.mktemp("bomb") / "bundle.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("challenge.yaml", MANIFEST.format(slug="bundle-test", status="draft"))
        info = zipfile.ZipInfo("data/zeros.bin")
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w") as out:
            for _ in range(INFLATED // MiB):
                out.write(bytes(MiB))
    assert path.stat().st_size < INFLATED // 500
    return path


def post(api: APIClient, action: str, path: Path):
    upload = io.BytesIO(path.read_bytes())
    upload.name = "bundle.zip"
    return api.post(f"/api/bundles/{action}/", {"bundle": upload}, format="multipart")


def organiser_of_another(make_user):
    """A user who organises a challenge, not ``bundle-test``."""
    user = make_user()
    Challenge.objects.create(name="Other", slug="other").organisers.add(user)
    return user


@pytest.mark.timeout(120)
def test_a_zip_bomb_from_someone_who_organises_nothing_is_refused_unread(
    bomb, make_user, tmp_path, monkeypatch
):
    stranger = make_user()
    api = APIClient()
    api.force_authenticate(stranger)
    with measured(tmp_path / "api", monkeypatch) as cost:
        answer = post(api, "validate", bomb)
    assert answer.status_code == 403
    assert "you organise none" in answer.json()["detail"]
    assert cheap(cost, bomb), cost
    with (
        measured(tmp_path / "cli", monkeypatch) as cost,
        pytest.raises(CommandError, match="only staff create a challenge: you organise none"),
    ):
        call_command("challenge", "validate", str(bomb), "--as", stranger.username)
    assert cheap(cost), cost


@pytest.mark.timeout(120)
def test_a_zip_bomb_for_a_challenge_others_organise_is_refused_before_it_is_unpacked(
    bomb, make_user, tmp_path, monkeypatch
):
    Challenge.objects.create(name="Bundle test", slug="bundle-test")
    user = organiser_of_another(make_user)
    api = APIClient()
    api.force_authenticate(user)
    for action in ("validate", "import"):
        with measured(tmp_path / action, monkeypatch) as cost:
            answer = post(api, action, bomb)
        assert answer.status_code == 403
        assert answer.json()["detail"] == "only the organisers of 'bundle-test' may import it"
        assert cheap(cost, bomb), cost
    with (
        measured(tmp_path / "cli", monkeypatch) as cost,
        pytest.raises(CommandError, match="only the organisers of 'bundle-test'"),
    ):
        call_command("challenge", "validate", str(bomb), "--as", user.username)
    assert cheap(cost), cost


@pytest.mark.timeout(120)
def test_a_zip_bomb_making_a_new_challenge_without_staff_is_refused_before_it_is_unpacked(
    bomb, make_user, tmp_path, monkeypatch
):
    api = APIClient()
    api.force_authenticate(organiser_of_another(make_user))
    with measured(tmp_path / "api", monkeypatch) as cost:
        answer = post(api, "import", bomb)
    assert answer.status_code == 403 and not Challenge.objects.filter(slug="bundle-test")
    assert cheap(cost, bomb), cost


@pytest.mark.timeout(120)
def test_a_zip_bomb_from_staff_is_refused_by_its_ratio_before_anything_is_written(
    bomb, make_user, tmp_path, monkeypatch
):
    api = APIClient()
    api.force_authenticate(make_user(staff=True))
    with measured(tmp_path / "api", monkeypatch) as cost:
        answer = post(api, "validate", bomb)
    assert answer.status_code == 400
    (problem,) = answer.json()["problems"]
    assert problem["file"] == "bundle.zip" and problem["message"].startswith(
        "entry 'data/zeros.bin': the archive unpacks to more than 67108864 bytes (what an "
        f"archive of {bomb.stat().st_size} bytes may: 100 times its size"
    )
    assert cheap(cost, bomb), cost
    with (
        measured(tmp_path / "cli", monkeypatch) as cost,
        pytest.raises(CommandError, match="1 problem"),
    ):
        call_command("challenge", "validate", str(bomb))  # the operator
    assert cheap(cost), cost


def test_a_zip_past_its_byte_limit_is_refused_before_anything_is_written(
    tmp_path, settings, monkeypatch
):
    settings.PODIUM_BUNDLE_MAX_BYTES = 4 * MiB
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:  # no compression at all
        archive.writestr("challenge.yaml", MANIFEST.format(slug="bundle-test", status="draft"))
        archive.writestr("data/a.bin", bytes(3 * MiB))
        archive.writestr("data/b.bin", bytes(3 * MiB))
    with (
        measured(tmp_path / "tmp", monkeypatch) as cost,
        pytest.raises(BundleInvalid, match=r"'data/b\.bin': the archive unpacks to more than"),
    ):
        import_bundle(path)
    assert cost.temp_bytes == 0


def test_a_central_directory_of_too_many_entries_is_refused_before_it_is_parsed(
    tmp_path, settings, monkeypatch
):
    settings.PODIUM_BUNDLE_MAX_MEMBERS = 100
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("challenge.yaml", MANIFEST.format(slug="bundle-test", status="draft"))
        for index in range(20_000):
            archive.writestr(f"f/{index}", b"")
    with measured(tmp_path / "tmp", monkeypatch) as cost, pytest.raises(BundleInvalid) as raised:
        import_bundle(path)
    assert str(raised.value) == "bundle.zip: (bundle): more than 100 entries"
    assert cheap(cost), cost


def _zip_of(tmp_path: Path, manifest: str) -> Path:
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("challenge.yaml", manifest)
    return path


@pytest.mark.timeout(120)
def test_a_huge_manifest_is_refused_before_it_is_read(make_user, tmp_path, monkeypatch):
    """The issue's 2 MB YAML of 700,000 nodes: 102 s and 378 MB before it was refused."""
    manifest = "bundle_version: 1\nchallenge: {slug: bundle-test}\ntasks: [" + "0," * 700_000
    path = _zip_of(tmp_path, manifest + "0]\n")
    api = APIClient()
    api.force_authenticate(make_user(staff=True))
    with measured(tmp_path / "api", monkeypatch) as cost:
        answer = post(api, "validate", path)
    assert answer.json() == {
        "problems": [
            {
                "file": "challenge.yaml",
                "line": None,
                "field": "(file)",
                "message": "more than 131072 bytes; at most 131072",
            }
        ]
    }
    assert cheap(cost, path), cost


@pytest.mark.timeout(120)
def test_a_manifest_of_too_many_nodes_is_refused_at_its_node_limit(tmp_path, monkeypatch):
    manifest = "bundle_version: 1\nchallenge: {slug: bundle-test}\ntasks: [" + "0," * 60_000
    path = _zip_of(tmp_path, manifest + "0]\n")
    assert path.stat().st_size < 131072
    with measured(tmp_path / "tmp", monkeypatch) as cost, pytest.raises(BundleInvalid) as raised:
        import_bundle(path)
    assert str(raised.value) == "challenge.yaml:3: tasks[2991]: more than 3000 YAML nodes"
    assert cheap(cost), cost


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("nested", "message"),
    [
        ("[" * 10_000 + "]" * 10_000, "challenge.yaml:1: (YAML): exceeded maximum nesting depth"),
        (
            "".join(f"{' ' * level}k{level}:\n" for level in range(100)) + " " * 100 + "x\n",
            "challenge.yaml:33: k0.k1.k2.k3.k4.k5.k6.k7.k8.k9.k10.k11.k12.k13.k14.k15.k16.k17."
            "k18.k19.k20.k21.k22.k23.k24.k25.k26.k27.k28.k29.k30.k31: nested more than 32 deep",
        ),
    ],
    ids=["10,000 brackets", "100 indented mappings"],
)
def test_deep_nesting_is_refused_with_a_clear_message(tmp_path, monkeypatch, nested, message):
    """10,000 levels raised RecursionError (a 500 through the API)."""
    path = _zip_of(tmp_path, nested)
    with measured(tmp_path / "tmp", monkeypatch) as cost, pytest.raises(BundleInvalid) as raised:
        import_bundle(path)
    assert str(raised.value) == message
    assert cheap(cost), cost


def test_the_slug_decides_before_the_rest_of_the_manifest_is_read(make_user, tmp_path):
    """Someone who organises a challenge learns nothing of a bundle for another but that it is
    not theirs; a manifest whose slug cannot be read is refused at its line."""
    user = organiser_of_another(make_user)
    api = APIClient()
    api.force_authenticate(user)
    broken = _zip_of(tmp_path, "bundle_version: 1\nchallenge:\n  slug: [x]\n  titel: typo\n")
    assert post(api, "validate", broken).json() == {
        "problems": [
            {
                "file": "challenge.yaml",
                "line": None,
                "field": "challenge.slug",
                "message": "the challenge's slug, written as plain text (a-z, 0-9, dashes), "
                "tells whose bundle this is",
            }
        ]
    }
    (tmp_path / "x").mkdir()
    theirs = _zip_of(tmp_path / "x", "challenge:\n  slug: other\n  titel: typo\n")
    problems = post(api, "validate", theirs).json()["problems"]
    assert [p["field"] for p in problems] == ["(top level)", "challenge", "challenge.titel"]
