"""A real Chromium (Debian's, never a downloaded one) driven by Playwright against ``live_server``.

The tests skip, saying why, only when Playwright or Chromium is missing or cannot start, and
fail instead in CI (``tests/required.py``).
Screenshots go to ``tests/artifacts/`` (ignored by git).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import required

# The app's fixtures: a challenge with three splits, teams, users, stored entries.
from tests.leaderboard.conftest import (  # noqa: F401 - fixtures used by name
    _test_settings,
    challenge,
    make_entry,
    make_user,
    pipeline_run,
    splits,
    task,
    teams,
)

CHROMIUM = os.environ.get("PODIUM_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


# Module scope: Playwright's sync API keeps an event loop running in the test thread while it is
# open, and later tests (which call asyncio.run) must not inherit it.
@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        required.unavailable("the playwright package is not installed (pip install playwright)")
    if not Path(CHROMIUM).exists():
        required.unavailable(
            f"no Chromium at {CHROMIUM} (apt-get install chromium, or set PODIUM_CHROMIUM)"
        )
    # The ORM calls these tests make around Playwright (fixtures, checks) are ordinary blocking
    # calls in the thread where Playwright's loop runs, not calls from async code.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        yield from _launch(sync_playwright, Error)
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def _launch(sync_playwright, error_type) -> Iterator[object]:
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        except error_type as exc:
            required.unavailable(
                f"Chromium at {CHROMIUM} does not start: {exc.message.splitlines()[0]}"
            )
        yield browser
        browser.close()


@pytest.fixture
def page(chromium, live_server):
    context = chromium.new_context(
        base_url=live_server.url, viewport={"width": 1280, "height": 900}
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def public_entries(teams, splits, make_entry):  # noqa: F811 - the imported fixtures
    """Two teams and an organisers' baseline on the public test (its bundle named as stored)."""
    from leaderboard.models import Team
    from tests.leaderboard.factories import block

    slices = {"domain": {"food": block(0.6, turns=12), "vehicle": block(0.2, turns=8)}}
    public = splits["public-test"]
    public.bundle.name, public.items = "splits/public-test.tar", 20
    public.save(update_fields=["bundle", "items"])
    make_entry(teams["beta"], public, 0.30, method="beta-rag", slices=slices)
    make_entry(teams["gamma"], public, 0.10, method="gamma-agent", slices=slices)
    organisers = Team.objects.create(name="organisers")
    make_entry(organisers, public, 0.05, method="llava-baseline", baseline=True, slices=slices)
    return public
