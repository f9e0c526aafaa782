"""A challenge bundle is untrusted input: every problem is reported at once, each with its
file, line and field, and hostile bundles are refused with a clear reason."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.challenge_bundle.problems import BundleInvalid
from leaderboard.challenge_bundle.source import MAX_MANIFEST_BYTES
from leaderboard.models import Challenge
from tests.leaderboard.bundle_support import edit, problems, write_bundle

pytestmark = pytest.mark.django_db


@pytest.fixture
def bundle(tmp_path) -> Path:
    return write_bundle(tmp_path / "bundle")


def line_of(bundle: Path, text: str) -> int:
    lines = (bundle / "challenge.yaml").read_text().splitlines()
    return [i for i, line in enumerate(lines, 1) if text in line][-1]


def test_every_problem_is_named_at_once_with_file_line_and_field(bundle):
    edit(bundle, "title: Bundle test", "title: Bundle test\n  titel: typo")
    edit(bundle, "per_day: 3", "per_day: three")
    edit(bundle, "counting: kit-b", "counting: sometimes")
    edit(bundle, "kind: rules", "kind: rules, endpoint: ''")
    found = problems(bundle)
    assert found == [
        f"challenge.yaml:{line_of(bundle, 'titel')}: challenge.titel: unknown key 'titel'; "
        "allowed here: corpus, description, kit_files, kit_includes_corpus, logo, package_index, "
        "pages, registration_approval, slug, status, title",
        f"challenge.yaml:{line_of(bundle, 'settings:')}: tasks[0].settings.counting: "
        "'sometimes' is not one of ['paper', 'kit-a', 'kit-b']",
        f"challenge.yaml:{line_of(bundle, 'endpoint')}: tasks[0].judge.endpoint: '' should be "
        "non-empty",
        f"challenge.yaml:{line_of(bundle, 'per_day')}: tasks[0].quotas.per_day: 'three' is not "
        "of type 'integer', 'null'",
    ]


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        ("slug: bundle-test", "slug: Bundle Test", "challenge.slug", "does not match"),
        ("status: published", "status: live", "challenge.status", "is not one of"),
        ("protocol: crag-mm", "protocol: crag", "tasks[0].protocol", "is not one of"),
        ("ends_at: 2099-01-01T00:00:00Z", "ends_at: 2099-01-01", "phases[0].ends_at",
         "'2099-01-01' is not an ISO 8601 date-time with a time zone"),
        ("ends_at: 2099-01-01T00:00:00Z", "ends_at: 2026-06-01T00:00:00Z", "phases[0].ends_at",
         "2026-06-01T00:00:00+00:00 is in the past"),
        ("ends_at: 2099-01-01T00:00:00Z", "ends_at: 2025-12-01T00:00:00Z",
         "phases[0].ends_at", "ends before it starts"),
        ("overview: pages/overview.md", "overview: pages/missing.md",
         "challenge.pages.overview", "'pages/missing.md': no such file or directory"),
        ("overview: pages/overview.md", "overview: ../outside.md", "challenge.pages.overview",
         "'../outside.md' leads outside the bundle"),
        ("files: data/validation", "files: data/nowhere", "tasks[0].splits[0].files",
         "'data/nowhere': no such file or directory in the bundle"),
        ("kind: validation", "kind: private-test", "tasks[0].splits[1]",
         "split kind 'private-test' appears twice"),
        ("kind: rules", "kind: rules, api_key: sk-live-123", "tasks[0].judge.api_key",
         "an API key is never written in a bundle, nor where one is: a judge endpoint's key is "
         "configured with the endpoint on the server (PODIUM_JUDGE_ENDPOINTS)"),
        ("kind: rules", "kind: rules, api_key_env: sk-live-123", "tasks[0].judge.api_key_env",
         "an API key is never written in a bundle, nor where one is"),
        ("kind: rules", "kind: openai, model: gpt-judge, endpoint: nowhere",
         "tasks[0].judge.endpoint", "unknown judge endpoint 'nowhere'"),
        ("bundle_version: 1", "bundle_version: 2", "bundle_version", "1 was expected"),
    ],
)  # fmt: skip
def test_each_mistake_is_named_with_its_line_and_field(bundle, old, new, field, message):
    edit(bundle, old, new)
    line = line_of(bundle, new.split("\n")[0])
    found = problems(bundle)
    assert any(p.startswith(f"challenge.yaml:{line}: {field}: ") and message in p for p in found), (
        found
    )


def test_duplicate_task_ids_are_refused(bundle):
    text = (bundle / "challenge.yaml").read_text()
    task = text[text.index("  - id: multi-turn-qa") :]
    (bundle / "challenge.yaml").write_text(text + task)
    (found,) = problems(bundle)
    assert "tasks[1]: task id 'multi-turn-qa' appears twice" in found


def test_a_task_the_benchmark_refuses_names_its_field(bundle):
    edit(bundle, "judge: {kind: rules}", "judge: {kind: rules}\n    primary_metric: accuracy_x")
    (found,) = problems(bundle)
    assert "tasks[0].primary_metric: 'accuracy_x' is not a metric of crag-mm" in found


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: &x [1, 2]\nb: *x\n", "YAML anchors and aliases are not allowed"),
        ("a: 1\na: 2\n", 'found duplicate key "a"'),
        ("a: !!python/object/apply:os.system [echo hi]\n", "could not determine a constructor"),
        ("a: [1\n", "(YAML)"),
        ("- just\n- a list\n", "is not of type 'object'"),
    ],
)
def test_hostile_or_broken_yaml_is_refused(bundle, text, message):
    (bundle / "challenge.yaml").write_text(text)
    (found,) = problems(bundle)[:1]
    assert found.startswith("challenge.yaml:") and message in found, found


def test_an_alias_bomb_is_refused_without_expanding(bundle):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 12)]
    (bundle / "challenge.yaml").write_text("\n".join(lines) + "\n")
    (found,) = problems(bundle)
    assert (
        found == "challenge.yaml:1: a0: YAML anchors and aliases are not allowed: write the value"
    )


def test_a_huge_manifest_is_refused(bundle):
    (bundle / "challenge.yaml").write_text("# " + "x" * MAX_MANIFEST_BYTES + "\n")
    (found,) = problems(bundle)
    assert found.startswith("challenge.yaml: (file): ") and f"at most {MAX_MANIFEST_BYTES}" in found


def test_a_symbolic_link_in_a_bundle_directory_is_refused(bundle, tmp_path):
    (tmp_path / "secret.md").write_text("secret")
    os.symlink(tmp_path / "secret.md", bundle / "pages" / "data.md")
    (found,) = problems(bundle)
    assert found == "pages/data.md: (bundle): a symbolic link: a bundle holds plain files only"


def test_a_hard_link_in_a_bundle_directory_is_refused(bundle):
    os.link(bundle / "pages" / "rules.md", bundle / "pages" / "terms.md")
    found = problems(bundle)
    assert any("a hard link (a file with two names)" in p for p in found)


def test_a_file_past_the_limit_is_refused(bundle, settings):
    settings.PODIUM_BUNDLE_MAX_FILE_BYTES = 5000
    (bundle / "pages" / "overview.md").write_text("x" * 5001)
    (found,) = problems(bundle)
    assert found.startswith("pages/overview.md: (bundle): 5001 bytes, more than")


def _zip(path: Path, entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in entries:
            archive.writestr(info, data)
    return path


def test_a_zip_slip_entry_is_refused(tmp_path):
    bad = _zip(tmp_path / "b.zip", [("challenge.yaml", b"x: 1"), ("../evil.py", b"boom")])
    (found,) = problems(bad)
    assert "entry '../evil.py' is a path leading outside the archive (..)" in found
    assert not (tmp_path / "evil.py").exists()


def test_an_absolute_zip_entry_is_refused(tmp_path):
    bad = _zip(tmp_path / "b.zip", [("challenge.yaml", b"x: 1"), ("/etc/cron.d/evil", b"boom")])
    (found,) = problems(bad)
    assert "entry '/etc/cron.d/evil' is an absolute path" in found


def test_a_symbolic_link_in_a_zip_is_refused(tmp_path):
    link = zipfile.ZipInfo("pages/overview.md")
    link.external_attr = (0o120777) << 16
    bad = _zip(tmp_path / "b.zip", [("challenge.yaml", b"x: 1"), (link, b"/etc/passwd")])
    (found,) = problems(bad)
    assert "entry 'pages/overview.md' is a symbolic link" in found


def test_a_zip_bomb_is_stopped_by_the_bytes_it_inflates(tmp_path, settings):
    settings.PODIUM_BUNDLE_MAX_BYTES = 1024 * 1024
    bomb = _zip(tmp_path / "b.zip", [("challenge.yaml", b"x: 1"), ("big.bin", bytes(50 << 20))])
    assert bomb.stat().st_size < 100_000  # 50 MiB of zeros in a small file
    (found,) = problems(bomb)
    assert "unpacks to more than 1048576 bytes" in found


def test_a_zip_with_too_many_entries_is_refused(tmp_path, settings):
    settings.PODIUM_BUNDLE_MAX_MEMBERS = 10
    many = _zip(tmp_path / "b.zip", [(f"f{i}", b"") for i in range(11)])
    (found,) = problems(many)
    assert "more than 10 entries" in found


def test_an_entry_twice_in_a_zip_is_refused(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive, pytest.warns(UserWarning):
        archive.writestr("challenge.yaml", b"x: 1")
        archive.writestr("challenge.yaml", b"x: 2")
    (tmp_path / "b.zip").write_bytes(buffer.getvalue())
    (found,) = problems(tmp_path / "b.zip")
    assert "entry 'challenge.yaml' appears twice" in found


def test_something_else_is_refused(tmp_path):
    (tmp_path / "b.tar").write_bytes(b"not a zip")
    (found,) = problems(tmp_path / "b.tar")
    assert "not a zip archive" in found
    (found,) = problems(tmp_path / "missing")
    assert "neither a bundle directory nor a zip file" in found


def test_a_bundle_in_a_zip_imports_like_its_directory(bundle, tmp_path):
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted(bundle.rglob("*")):
            if path.is_file():
                z.write(path, f"bundle/{path.relative_to(bundle)}")  # in its folder
    outcome = import_bundle(archive)
    assert outcome.version == 1
    assert Challenge.objects.get(slug="bundle-test").tasks.get().splits.count() == 2


def test_a_task_that_searches_without_a_corpus_cannot_be_published(bundle):
    edit(bundle, "search: {image: false, web: false}", "search: {image: true, web: true}")
    (found,) = problems(bundle)
    assert found.startswith(
        f"challenge.yaml:{line_of(bundle, 'status:')}: challenge.status: cannot publish: task "
        "multi-turn-qa lets agents search (image and web) but the challenge has no search corpus"
    )


def test_validate_prints_every_problem_and_fails(bundle, capsys):
    edit(bundle, "per_day: 3", "per_day: -1")
    with pytest.raises(CommandError, match="1 problem"):
        call_command("challenge", "validate", str(bundle))
    assert f"challenge.yaml:{line_of(bundle, 'per_day')}: tasks[0].quotas.per_day: -1 is less " in (
        capsys.readouterr().err
    )


def test_validate_runs_the_publish_checklist_and_changes_nothing(bundle, capsys):
    edit(bundle, "reveal_at: 2099-02-01T00:00:00Z", "reveal_at: null")
    edit(bundle, "status: published", "status: draft")
    call_command("challenge", "validate", str(bundle))
    out = capsys.readouterr().out
    assert (
        "publish checklist: split multi-turn-qa/private-test is a private test without a "
        "reveal time" in out
    )
    assert not Challenge.objects.exists()
    edit(bundle, "status: draft", "status: published")
    with pytest.raises(BundleInvalid) as raised:
        import_bundle(bundle)
    assert "challenge.status: cannot publish: split multi-turn-qa/private-test" in str(raised.value)
    assert not Challenge.objects.exists()


def test_the_schema_is_published_and_the_checked_in_copy_is_current(client):
    response = client.get("/schemas/challenge-bundle.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/schema+json"
    checked_in = Path(__file__).parents[2] / "docs" / "challenge-bundle.schema.json"
    assert checked_in.read_text() == response.content.decode(), (
        "regenerate: python manage.py challenge schema > docs/challenge-bundle.schema.json"
    )
    assert response.json()["properties"]["tasks"]["items"]["additionalProperties"] is False


def test_a_hostile_split_tar_in_a_bundle_is_refused_at_its_field(bundle):
    import tarfile

    with tarfile.open(bundle / "data" / "evil.tar", "w") as tar:
        info = tarfile.TarInfo("../../escape.txt")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"boom"))
    edit(bundle, "files: data/validation", "files: data/evil.tar")
    (found,) = problems(bundle)
    assert found.startswith(
        f"challenge.yaml:{line_of(bundle, 'evil.tar')}: tasks[0].splits[0].files: data/evil.tar: "
    )
    assert "entry '../../escape.txt' is a path leading outside the archive (..)" in found
    assert not (bundle.parent / "escape.txt").exists()


@pytest.mark.parametrize(
    ("old", "new", "at", "field", "message"),
    [
        ("slug: bundle-test", 'slug: "bundle-test\\n"', "slug:", "challenge.slug",
         "'bundle-test\\n' does not match"),
        ("id: multi-turn-qa", 'id: "multi-turn-qa\\n"', "- id:", "tasks[0].id",
         "'multi-turn-qa\\n' does not match"),
        ("judge: {kind: rules}", "judge: {kind: rules}\n    limits: {readiness_s: 2147483648}",
         "limits:", "tasks[0].limits.readiness_s",
         "2147483648 is greater than the maximum of 2147483647"),
        ("judge: {kind: rules}", "judge: {kind: rules}\n    limits: {total_wall_s: 9999999999}",
         "limits:", "tasks[0].limits.total_wall_s",
         "9999999999 is greater than the maximum of 2147483647"),
        ("per_day: 3", "per_day: 2147483648", "per_day", "tasks[0].quotas.per_day",
         "2147483648 is greater than the maximum of 2147483647"),
        ("name: Phase 1", "name: Phase 1\n    quotas: {total: 4294967296}", "quotas: {total",
         "phases[0].quotas.total", "4294967296 is greater than the maximum of 2147483647"),
        ("judge: {kind: rules}", "judge: {kind: rules}\n    limits: {per_item_s: .nan}",
         "limits:", "tasks[0].limits.per_item_s",
         "nan is not a number Podium can use: write a finite one"),
        ("judge: {kind: rules}", "judge: {kind: rules}\n    limits: {per_item_s: .inf}",
         "limits:", "tasks[0].limits.per_item_s",
         "inf is not a number Podium can use: write a finite one"),
        ("judge: {kind: rules}", "judge: {kind: rules, revision: " + "r" * 101 + "}",
         "revision:", "tasks[0].judge.revision", "is too long"),
        ("title: Bundle test",
         "title: Bundle test\n  package_index: https://user:secret@pypi.example.org/simple/",
         "package_index", "challenge.package_index",
         "a package index URL may not carry credentials"),
        ("title: Bundle test", "title: Bundle test\n  package_index: ftp://pypi.example.org/",
         "package_index", "challenge.package_index",
         "'ftp://pypi.example.org/': a package index is an http:// or https:// URL"),
        ("title: Bundle test",
         "title: Bundle test\n  package_index: --extra-index-url=https://evil.example.org/",
         "package_index", "challenge.package_index",
         "a package index is an http:// or https:// URL"),
        ("title: Bundle test",
         "title: Bundle test\n  package_index: https://pypi.example.org/simple/ "
         "--extra-index-url https://evil.example.org/", "package_index",
         "challenge.package_index",
         "a package index is one URL: no spaces, line breaks or control characters in it"),
        ("kind: rules", "kind: rules, api_key_env: PODIUM_JUDGE_API_KEY", "api_key_env",
         "tasks[0].judge.api_key_env",
         "an API key is never written in a bundle, nor where one is: a judge endpoint's key is "
         "configured with the endpoint on the server (PODIUM_JUDGE_ENDPOINTS)"),
    ],
    ids=["slug and a line break", "task id and a line break", "readiness_s past integer",
         "total_wall_s past integer", "quota past integer", "phase quota past integer",
         ".nan", ".inf", "judge revision past its column", "index with credentials",
         "ftp index", "index as an option", "index and an option", "api_key_env"],
)  # fmt: skip
def test_values_that_crashed_or_slipped_through_the_import_are_named_at_validate(
    bundle, old, new, at, field, message
):
    """Before: a slug or task id ending in a line break passed; integers past the database's
    columns and .nan/.inf crashed the import (DataError); any package index was stored; a
    judge's api_key_env was dropped without a word."""
    edit(bundle, old, new)
    found = problems(bundle)
    line = line_of(bundle, at)
    assert any(p.startswith(f"challenge.yaml:{line}: {field}: ") and message in p for p in found), (
        found
    )


def test_a_slug_with_a_line_break_makes_no_second_challenge(bundle, client):
    """Before, it was imported beside the first, and then every page listing challenges
    failed (NoReverseMatch)."""
    import_bundle(bundle)
    edit(bundle, "slug: bundle-test", 'slug: "bundle-test\\n"')
    with pytest.raises(BundleInvalid):
        import_bundle(bundle)
    assert list(Challenge.objects.values_list("slug", flat=True)) == ["bundle-test"]
    assert client.get("/").status_code == 200


def test_a_split_tar_bomb_in_a_bundle_is_refused_at_its_header(bundle):
    """A split or corpus tar in a bundle is held to the bundle's bytes and ratio: refused at
    the member's header, nothing of it written."""
    import tarfile

    with tarfile.open(bundle / "data" / "bomb.tar.gz", "w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo("zeros.bin")
        info.size = 128 * 1024 * 1024
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    edit(bundle, "files: data/validation", "files: data/bomb.tar.gz")
    (found,) = problems(bundle)
    assert found.startswith(
        f"challenge.yaml:{line_of(bundle, 'bomb.tar.gz')}: tasks[0].splits[0].files: "
        "data/bomb.tar.gz: entry 'zeros.bin': the archive unpacks to more than 67108864 bytes"
    )
