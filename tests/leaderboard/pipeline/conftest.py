"""Fixtures for the pipeline's tests (the Django side that drives the engine in ``workers/``)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def local_storage(settings, tmp_path) -> Path:
    """Podium's storage (``media/``) and cache (``var/``) in this test's directory."""
    settings.VAR_DIR = tmp_path / "var"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "media"), "base_url": None},
        },
    }
    return tmp_path
