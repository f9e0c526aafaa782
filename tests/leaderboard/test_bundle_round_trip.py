"""The round trip as a property: any valid bundle, imported, exported, imported into an empty
database and exported again gives the same challenge and the same files, byte for byte (its
logo, starter-kit files, phase quotas, baselines, overall ranking and public board included)."""

from __future__ import annotations

import shutil
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from ruamel.yaml import YAML

from leaderboard.challenge_bundle import state
from leaderboard.challenge_bundle.exporter import export
from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.models import Challenge, Task
from tests.leaderboard.bundle_support import write_bundle
from tests.leaderboard.test_bundle_baselines import write_baseline
from tests.leaderboard.test_bundle_import import digests

pytestmark = pytest.mark.django_db

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40)
quota = st.one_of(st.none(), st.integers(0, 1000))
moment = st.datetimes(min_value=datetime(2100, 1, 1), max_value=datetime(2200, 1, 1)).map(
    lambda d: d.replace(microsecond=0).isoformat() + "Z"
)


@st.composite
def documents(draw: Any) -> dict[str, Any]:
    starts = draw(moment)
    task = {
        "id": "multi-turn-qa",
        "name": draw(text.filter(lambda s: s.strip())),
        "description": draw(text),
        "protocol": "crag-mm",
        "settings": draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "counting": st.sampled_from(["paper", "kit-a", "kit-b"]),
                    "missing_variant": st.sampled_from(["kit-a", "kit-b"]),
                },
            )
        ),
        "limits": {"readiness_s": draw(st.integers(1, 10_000)), "per_item_s": draw(
            st.floats(0.1, 1000, allow_nan=False).map(lambda f: round(f, 3)))},
        "search": {"image": False, "web": False},
        "judge": {"kind": "rules"},
        "entry_rule": draw(st.sampled_from(Task.EntryRule.values)),
        "tie_rule": draw(st.sampled_from(Task.TieRule.values)),
        "multiple_comparisons": draw(st.sampled_from(Task.MultipleComparisons.values)),
        "final_repeats": draw(st.integers(1, 5)),
        "quotas": {"per_day": draw(quota), "total": draw(quota), "concurrent": draw(quota)},
        "splits_selectable": draw(st.booleans()),
        "splits": [
            {"kind": "validation", "files": "data/validation",
             "visibility": draw(st.sampled_from(["public", "hidden"]))},
            {"kind": "private-test", "files": "data/private-test", "reveal_at": draw(moment)},
        ],
    }  # fmt: skip
    head = {
        "slug": draw(st.from_regex(r"[a-z0-9]{1,12}(-[a-z0-9]{1,8})?", fullmatch=True)),
        "title": draw(text.filter(lambda s: s.strip())),
        "description": draw(text),
        "status": "draft",
        "kit_includes_corpus": draw(st.booleans()),
        "registration_approval": draw(st.booleans()),
        "pages": {"overview": "pages/overview.md", "rules": "pages/rules.md"},
        "kit_files": draw(st.lists(st.sampled_from(KIT_FILES), unique=True, max_size=3)),
    }
    if logo := draw(st.sampled_from([None, *LOGOS])):
        head["logo"] = logo
    baseline = {
        "method_name": draw(text.filter(str.strip)),
        "description": draw(text),
        "context": "baselines/echo",
        "tasks": ["multi-turn-qa"],
    }
    overall = draw(
        st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {"method": st.sampled_from(["average-rank", "mean"])},
                optional={"title": text.filter(bool), "tasks": st.just(["multi-turn-qa"])},
            ),
        )
    )
    if overall is not None and overall["method"] == "mean" and draw(st.booleans()):
        overall["metrics"] = {"multi-turn-qa": draw(st.sampled_from(["accuracy", "exact_match"]))}
    public_board = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "freeze_days": st.integers(1, 60),
                "ladder_threshold": st.floats(0.0001, 10, allow_nan=False).map(
                    lambda f: round(f, 4)
                ),
            },
        )
    )
    return {
        **({"overall": overall} if overall is not None else {}),
        **({"public_board": public_board} if public_board else {}),
        "bundle_version": 1,
        "challenge": head,
        "phases": [
            {
                "name": draw(text.filter(str.strip)),
                "starts_at": starts,
                "ends_at": "2201-01-01T00:00:00Z",
                "quotas": {"per_day": draw(quota), "total": draw(quota)},
            }
        ]
        if draw(st.booleans())
        else [],
        "tasks": [task],
        "baselines": [baseline] if draw(st.booleans()) else [],
        "pages": (draw(text), draw(text)),
    }


LOGOS = ("art/logo.png", "art/logo.webp")
# a file, a directory, and a page (which the export writes itself: the same bytes)
KIT_FILES = ("starter/README.md", "starter/notebooks", "pages/rules.md")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = write_bundle(tmp_path_factory.mktemp("round-trip") / "bundle")
    for name, kind in zip(LOGOS, ("PNG", "WEBP"), strict=True):
        (root / name).parent.mkdir(exist_ok=True)
        Image.new("RGB", (24, 12), (10, 120, 200)).save(root / name, kind)
    (root / "starter" / "notebooks").mkdir(parents=True)
    (root / "starter" / "README.md").write_text("# Notes\n")
    (root / "starter" / "notebooks" / "explore.py").write_text("print(1)\n")
    write_baseline(root / "baselines" / "echo")
    return root


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(document=documents())
def test_export_import_export_is_the_identity(data, document):
    Challenge.objects.all().delete()
    overview, rules = document.pop("pages")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "bundle"
        shutil.copytree(data, root)
        (root / "pages" / "overview.md").write_text(overview, encoding="utf-8")
        (root / "pages" / "rules.md").write_text(rules, encoding="utf-8")
        with (root / "challenge.yaml").open("w", encoding="utf-8") as f:
            YAML(typ="safe", pure=True).dump(document, f)
        import_bundle(root)
        challenge = Challenge.objects.get()
        assert challenge.registration_approval == document["challenge"]["registration_approval"]
        public = document.get("public_board", {})
        assert challenge.freeze_days == public.get("freeze_days")
        assert challenge.ladder_threshold == public.get("ladder_threshold")
        live = state.live(challenge)
        export(challenge, Path(scratch) / "first", private=True)
        Challenge.objects.all().delete()
        import_bundle(Path(scratch) / "first")
        assert state.live(Challenge.objects.get()) == live
        export(Challenge.objects.get(), Path(scratch) / "second", private=True)
        assert digests(Path(scratch) / "first") == digests(Path(scratch) / "second")
        assert import_bundle(Path(scratch) / "second").unchanged
