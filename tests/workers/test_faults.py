"""The one taxonomy of failures: each error the pipeline acts on says whose fault it is."""

from __future__ import annotations

import pytest

from workers.builds import BaseImageMissing
from workers.faults import PodiumFault, TeamFault, TransientFault
from workers.images import ImageError
from workers.outcomes import RunFailed, SearchUnavailable
from workers.pipeline.bundles import BundleError


@pytest.mark.parametrize(
    ("error", "fault"),
    [
        (RunFailed, TeamFault),
        (ImageError, TeamFault),
        (BundleError, PodiumFault),
        (BaseImageMissing, PodiumFault),
        (SearchUnavailable, TransientFault),
    ],
)
def test_each_error_names_whose_fault_it_is_and_only_one(error, fault):
    kinds = [kind for kind in (TeamFault, PodiumFault, TransientFault) if issubclass(error, kind)]
    assert kinds == [fault]
