"""axe-core (the copy bundled with axe-playwright-python) run on the page a test is showing.

``assert_accessible`` fails on every violation axe rates "serious" or "critical", naming each
rule, its impact, what it asks for and the first elements it found; minor and moderate ones are
left to review. Without the axe-playwright-python package the checking test is skipped (failed
in CI), as ``tests/required.py`` does for a missing browser.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from tests import required

BLOCKING = ("serious", "critical")
NODES_SHOWN = 3


@cache
def axe_script() -> str:
    """axe.min.js as the package bundles it."""
    return required.module("axe_playwright_python.sync_playwright").Axe().axe_script


def violations(
    page: Any, include: list[str] | None = None, exclude: list[str] | None = None
) -> list[dict[str, Any]]:
    """axe's violations on ``page`` (only in the parts matched by the ``include`` selectors,
    when given), leaving out the parts matched by the ``exclude`` selectors."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(axe_script())
    context: dict[str, Any] = {"include": [[s] for s in include or ["html"]]}
    if exclude:
        context["exclude"] = [[selector] for selector in exclude]
    results = page.evaluate(
        "([context, options]) => axe.run(context, options)",
        [context, {"resultTypes": ["violations"]}],
    )
    return results["violations"]


def describe(violation: dict[str, Any]) -> str:
    nodes = violation["nodes"]
    targets = "; ".join(" ".join(map(str, n["target"])) for n in nodes[:NODES_SHOWN])
    more = f" (+{len(nodes) - NODES_SHOWN} more)" if len(nodes) > NODES_SHOWN else ""
    return f"{violation['id']} ({violation['impact']}): {violation['help']} at {targets}{more}"


def assert_accessible(
    page: Any, where: str, include: list[str] | None = None, exclude: list[str] | None = None
) -> None:
    """No serious or critical axe violation on the page shown (``where`` names it)."""
    found = [v for v in violations(page, include, exclude) if v["impact"] in BLOCKING]
    assert not found, f"axe on {where} ({page.url}):\n" + "\n".join(map(describe, found))
