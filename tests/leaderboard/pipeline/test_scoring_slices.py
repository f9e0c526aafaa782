"""The scoring stage keeps which slice value each unit belongs to (``Scoring.unit_slices``,
once per split's units: ``UnitSlices``) and the judge's verdicts per slice value, through the
real stages on the fake engine (no Docker)."""

from __future__ import annotations

from leaderboard.models import EvaluationRun, RunUnits, UnitSlices
from leaderboard.slice_statistics import slice_statistics
from leaderboard.unit_slices import slice_units

from .test_fake_engine import broker, drive, fake_run, pytestmark  # noqa: F401 (fixtures)


def test_the_scoring_stage_keeps_the_units_slices_and_verdicts(fake_run):  # noqa: F811
    drive(fake_run)
    fake_run.refresh_from_db()
    assert fake_run.state == EvaluationRun.State.DONE
    kept = RunUnits.objects.get(run=fake_run)
    assert kept.slices and UnitSlices.objects.filter(digest=kept.slices).exists()
    # 3 conversations of 2 turns: a unit per conversation, each in one domain, in no turn
    assert kept.array().size == 3
    by_domain = slice_units(kept.slices, "domain")
    assert isinstance(by_domain, dict)
    assert sorted(i for idx in by_domain.values() for i in idx.tolist()) == [0, 1, 2]
    assert "hold several values of turn" in str(slice_units(kept.slices, "turn"))
    # every turn counted once per dimension, by the judge's verdict
    for dimension in ("domain", "turn"):
        counted = kept.slice_verdicts[dimension]
        assert sum(n for value in counted.values() for n in value.values()) == 6
    assert sum(kept.slice_verdicts["turn"]["0"].values()) == 3
    found = slice_statistics(fake_run.split, fake_run.setting, "turn")
    assert "hold several values of turn" in found.unavailable
