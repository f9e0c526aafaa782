"""Which slice value each unit belongs to, kept once per split's units (``leaderboard.
unit_slices``): the same labels give one row whoever stores them, positions read back per
value, and a dimension whose units span several values, or that was never stored, says why."""

from __future__ import annotations

import pytest

from leaderboard.models import UnitSlices
from leaderboard.unit_slices import keep, slice_units


@pytest.mark.django_db
def test_the_same_labels_are_kept_once_and_read_back_by_value():
    slices = {"domain": ["food", "plants", "food"], "turn": ["0", None, "1"]}
    digest = keep(slices)
    assert keep({"turn": ["0", None, "1"], "domain": ["food", "plants", "food"]}) == digest
    assert UnitSlices.objects.count() == 1
    found = slice_units(digest, "domain")
    assert isinstance(found, dict)
    assert {value: positions.tolist() for value, positions in found.items()} == {
        "food": [0, 2], "plants": [1],
    }  # fmt: skip
    assert keep({"domain": ["food", "food", "food"]}) != digest  # other labels, another row
    assert UnitSlices.objects.count() == 2


@pytest.mark.django_db
def test_what_cannot_be_read_by_value_says_why():
    digest = keep({"turn": ["0", None, "1"]})
    assert slice_units(digest, "turn") == (
        "1 of the split's 3 units hold several values of turn (a conversation's turns): a "
        "slice value's score is not a mean over whole units"
    )
    assert "did not say which units each value of domain" in str(slice_units(digest, "domain"))
    assert "did not say" in str(slice_units("0" * 64, "turn"))
    assert keep({}) == ""


def test_too_many_values_for_the_codes_are_refused():
    with pytest.raises(ValueError, match="too many"):
        keep({"id": [str(i) for i in range(0xFFFF)]})
