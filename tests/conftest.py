"""For every test: Django's default cache starts empty, so the API throttles (and cached pages)
carry nothing over from another test."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _empty_cache() -> None:
    from django.core.cache import cache

    cache.clear()
