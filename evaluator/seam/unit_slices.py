"""``Scoring.unit_slices`` of a benchmark whose unit is one graded item (M2RAG's answer,
MRAG-Suite's (mode, item) answer, Visual-RAG's (setting, query) item): a unit's value of a slice
dimension is its item's label, the name the benchmark's scores give that slice value. One item
has one value of each dimension, so no unit spans several (None never comes from a label).

An item without a label of a dimension is where its benchmark's scores put it: under
``unlabelled`` (MRAG-Suite's and Visual-RAG's ``(unlabelled)`` value); or, with ``unlabelled``
None, in no value (M2RAG's scores), and then the dimension is left out: a unit in no value is
not one the server can store (None reads "spans several values"), so the benchmark does not say
for that dimension rather than say something false."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evaluator.seam.scoring import UnitSlices


def item_unit_slices(labels: Sequence[Mapping[str, str]], unlabelled: str | None) -> UnitSlices:
    """Per dimension (every label any unit has), each unit's value, where unit ``i`` is one
    item whose labels are ``labels[i]``; ``unlabelled``: the value of an item without the
    label (None: in no value, the dimension left out)."""
    slices: UnitSlices = {}
    for name in sorted({name for found in labels for name in found}):
        values = [found.get(name, unlabelled) for found in labels]
        if None not in values:
            slices[name] = values
    return slices


def keyed_unit_slices(
    labels: Mapping[tuple[str, str], Mapping[str, str]], unlabelled: str | None
) -> UnitSlices:
    """``item_unit_slices`` of units keyed (setting, item) and ordered by their keys, as
    ``units`` orders them (MRAG-Suite's, Visual-RAG's): ``labels``, each key's item's
    labels."""
    return item_unit_slices([labels[key] for key in sorted(labels)], unlabelled)
