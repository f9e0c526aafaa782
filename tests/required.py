"""What a test needs from the machine (a Docker engine, a browser, an installed package).

Where it is missing the test cannot run. On a developer's machine it is skipped, saying what is
missing; in CI (``CI`` set in the environment, as ``.ci/run`` runs) it fails instead, so a
missing engine, browser or package never turns a red run into a green one with skips.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> NoReturn:
    """Skip (or, in CI, fail) the calling test or fixture because ``reason``."""
    if in_ci():
        pytest.fail(f"required for this test, missing in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def module(name: str) -> ModuleType:
    """``import name``, or :func:`unavailable` naming the package."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        unavailable(f"the {name} package is not installed: {exc}")
