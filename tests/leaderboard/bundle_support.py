"""A small challenge bundle for tests: one CRAG-MM task with a validation and a private test
split written by the evaluator, a rules page, no search (no corpus needed)."""

from __future__ import annotations

from pathlib import Path

from tests.leaderboard.factories import write_small_split

MANIFEST = """\
bundle_version: 1
challenge:
  slug: {slug}
  title: Bundle test
  description: a challenge written as code
  status: {status}
  pages:
    overview: pages/overview.md
    rules: pages/rules.md
phases:
  - name: Phase 1
    starts_at: 2026-01-01T00:00:00Z
    ends_at: 2099-01-01T00:00:00Z
tasks:
  - id: multi-turn-qa
    name: Multi-turn QA
    protocol: crag-mm
    settings: {{counting: kit-b}}
    search: {{image: false, web: false}}
    judge: {{kind: rules}}
    quotas: {{per_day: 3}}
    splits:
      - {{kind: validation, files: data/validation}}
      - kind: private-test
        files: data/private-test
        reveal_at: 2099-02-01T00:00:00Z
"""


def write_bundle(root: Path, slug: str = "bundle-test", status: str = "published") -> Path:
    """The bundle directory at ``root``; returns it."""
    (root / "pages").mkdir(parents=True)
    (root / "pages" / "overview.md").write_text("# Bundle test\n\nA challenge from a bundle.\n")
    (root / "pages" / "rules.md").write_text("# Rules\n\nBe kind.\n")
    write_small_split(root / "data" / "validation", conversations=2)
    write_small_split(root / "data" / "private-test", conversations=3)
    (root / "challenge.yaml").write_text(MANIFEST.format(slug=slug, status=status))
    return root


def edit(root: Path, old: str, new: str) -> None:
    """Replace ``old`` (which must be there) by ``new`` in the bundle's challenge.yaml."""
    manifest = root / "challenge.yaml"
    text = manifest.read_text()
    assert old in text, old
    manifest.write_text(text.replace(old, new, 1))


def problems(path: Path) -> list[str]:
    """What importing the bundle at ``path`` refuses, one line each; nothing was imported."""
    import pytest

    from leaderboard.challenge_bundle.importer import import_bundle
    from leaderboard.challenge_bundle.problems import BundleInvalid
    from leaderboard.models import Challenge

    with pytest.raises(BundleInvalid) as raised:
        import_bundle(path)
    assert not Challenge.objects.exists()  # nothing half-imported
    return [str(p) for p in raised.value.problems]
