"""A missing engine, browser or package skips a test on a developer's machine and fails it in CI."""

from __future__ import annotations

import pytest

from tests import required


@pytest.mark.parametrize("ci", ["", "0", "false"])
def test_outside_ci_a_missing_requirement_skips(monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception, match="no Docker engine"):
        required.unavailable("no Docker engine")


@pytest.mark.parametrize("ci", ["true", "1", "yes"])
def test_in_ci_a_missing_requirement_fails(monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match="missing in CI: no Chromium"):
        required.unavailable("no Chromium")


def test_a_missing_package_is_named(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="the no_such_podium_pkg package"):
        required.module("no_such_podium_pkg")
    monkeypatch.delenv("CI")
    assert required.module("json").dumps([1]) == "[1]"
