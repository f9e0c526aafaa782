"""challenge.yaml's ``public_board`` section: imported, diffed, exported, refused when wrong,
and said on the challenge page (``leaderboard.public_board``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse
from ruamel.yaml import YAML

from leaderboard.challenge_bundle.exporter import export
from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.models import Challenge
from tests.leaderboard.bundle_support import edit, problems, write_bundle

pytestmark = pytest.mark.django_db

SECTION = "public_board:\n  freeze_days: 3\n  ladder_threshold: 0.01\ntasks:\n"


@pytest.fixture
def bundle(tmp_path) -> Path:
    return write_bundle(tmp_path / "bundle")


def test_the_section_is_imported_diffed_and_exported(bundle, tmp_path):
    import_bundle(bundle)
    assert Challenge.objects.values_list("freeze_days", "ladder_threshold").get() == (None, None)
    edit(bundle, "tasks:\n", SECTION)
    preview = import_bundle(bundle, dry_run=True)
    assert preview.changes == [  # an empty section reads as {}, as the overall ranking's
        "- public_board: {}",
        "+ public_board.freeze_days: 3",
        "+ public_board.ladder_threshold: 0.01",
    ]
    import_bundle(bundle)
    assert Challenge.objects.values_list("freeze_days", "ladder_threshold").get() == (3, 0.01)
    export(Challenge.objects.get(), tmp_path / "out", private=True)
    written = YAML(typ="safe").load((tmp_path / "out" / "challenge.yaml").read_text())
    assert written["public_board"] == {"freeze_days": 3, "ladder_threshold": 0.01}
    edit(bundle, "  ladder_threshold: 0.01\n", "")
    assert import_bundle(bundle).changes == ["- public_board.ladder_threshold: 0.01"]
    assert Challenge.objects.get().ladder_threshold is None


@pytest.mark.parametrize(
    ("section", "wrong"),
    [
        ("public_board:\n  freeze_days: 0\n", "freeze_days"),
        ("public_board:\n  ladder_threshold: 0\n", "ladder_threshold"),
        ("public_board:\n  ladder_threshold: -0.5\n", "ladder_threshold"),
        ("public_board:\n  freeze: 3\n", "freeze"),
    ],
)
def test_wrong_values_are_refused_by_name(bundle, section, wrong):
    edit(bundle, "tasks:\n", f"{section}tasks:\n")
    found = problems(bundle)
    assert any("public_board" in p and wrong in p for p in found), found


def test_the_challenge_page_says_what_applies(client, challenge):
    url = reverse("leaderboard:challenge", args=[challenge.slug]) + "?tab=leaderboards"
    assert 'id="public-board"' not in client.get(url).content.decode()
    challenge.freeze_days, challenge.ladder_threshold = 3, 0.01
    challenge.save()
    page = client.get(url).content.decode()
    assert "The public board freezes 3 days before each phase ends" in page
    assert "Scores are published when they beat your best by more than 0.01" in page


def test_organisers_set_both_in_the_admin(client, challenge, make_user):
    admin = make_user("admin", staff=True)
    admin.is_superuser = True
    admin.save()
    client.force_login(admin)
    url = reverse("admin:leaderboard_challenge_change", args=[challenge.pk])
    page = client.get(url).content.decode()
    assert 'name="freeze_days"' in page and 'name="ladder_threshold"' in page
