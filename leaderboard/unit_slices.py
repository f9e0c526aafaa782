"""Which slice value each unit of a run belongs to (``Scoring.unit_slices``), kept once per
split's units and labels (``UnitSlices``, named by its digest from each run's ``RunUnits``):
a slice value's rank intervals and groups resample its units, a subset of the board's
(``leaderboard.slice_statistics``)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence

import numpy as np

from leaderboard.models.units import CODE_DTYPE, SPANS, UnitSlices


def encoded(slices: Mapping[str, Sequence[str | None]]) -> dict[str, dict[str, object]]:
    """``slices`` (per dimension, each unit's value or None) as ``UnitSlices.dimensions``."""
    stored: dict[str, dict[str, object]] = {}
    for dimension in sorted(slices):
        per_unit = slices[dimension]
        values = sorted({value for value in per_unit if value is not None})
        if len(values) >= SPANS:
            raise ValueError(f"slice dimension {dimension!r}: {len(values)} values, too many")
        index = {value: code for code, value in enumerate(values)}
        codes = np.array([SPANS if v is None else index[v] for v in per_unit], dtype=CODE_DTYPE)
        stored[dimension] = {"values": values, "codes": base64.b64encode(codes.tobytes()).decode()}
    return stored


def keep(slices: Mapping[str, Sequence[str | None]]) -> str:
    """Store ``slices`` once (whoever stored the same first) and return its digest."""
    if not slices:
        return ""
    dimensions = encoded(slices)
    digest = hashlib.sha256(json.dumps(dimensions, sort_keys=True).encode()).hexdigest()
    # runs of a split scored at once store the same row: the first one stays
    UnitSlices.objects.bulk_create(
        [UnitSlices(digest=digest, dimensions=dimensions)], ignore_conflicts=True
    )
    return digest


def slice_units(digest: str, dimension: str) -> dict[str, np.ndarray] | str:
    """The positions of the units of each value of ``dimension``; or why there are none: not
    stored, or some unit's items have several of its values (the units do not nest in it)."""
    row = UnitSlices.objects.filter(digest=digest).values_list("dimensions", flat=True).first()
    if row is None or dimension not in row:
        return f"the benchmark did not say which units each value of {dimension} holds"
    codes = np.frombuffer(base64.b64decode(row[dimension]["codes"]), dtype=CODE_DTYPE)
    spanning = int(np.count_nonzero(codes == SPANS))
    if spanning:
        return (
            f"{spanning} of the split's {codes.size} units hold several values of {dimension} "
            "(a conversation's turns): a slice value's score is not a mean over whole units"
        )
    return {
        str(value): np.flatnonzero(codes == code)
        for code, value in enumerate(row[dimension]["values"])
    }
