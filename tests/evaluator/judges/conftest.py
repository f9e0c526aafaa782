from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_openai import FakeOpenAI


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server
