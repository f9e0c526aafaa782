"""The starter kit of each benchmark's challenge: the page, the download and the API's kit,
each carrying the benchmark's own example agent (``Samples.example_agent``), or saying there
is none."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from evaluator.benchmarks import benchmark_class
from leaderboard import api_tokens
from leaderboard.kits import contents
from leaderboard.models import Challenge, Task

from .kit_support import body_of, kit_members, kit_settings

__all__ = ["kit_settings"]  # fixtures used by name

# benchmark -> its example agent and the class its Dockerfile names
EXAMPLES = {
    "mrag-suite": ("mrag-grounded", b"agent:GroundedAgent"),
    "m2rag": ("m2rag-text", b"agent:TextAgent"),
}


@pytest.fixture
def signed_in(client, make_user, teams):
    user = make_user("ann", team=teams["alpha"])
    client.force_login(user)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_tokens.create(user, 'tests')[1]}")
    return client, api


def _challenge(benchmark: str) -> Challenge:
    challenge = Challenge.objects.create(name=benchmark, slug=f"{benchmark}-2026",
                                         is_published=True)  # fmt: skip
    Task.objects.create(challenge=challenge, task_id="answers", name="Answers",
                        benchmark=benchmark, web_search_enabled=False)  # fmt: skip
    return challenge


@pytest.mark.parametrize("benchmark", sorted(EXAMPLES))
def test_the_kit_of_a_challenge_carries_its_benchmarks_example_agent(
    kit_settings, signed_in, benchmark
):
    client, api = signed_in
    agent, spec = EXAMPLES[benchmark]
    slug = _challenge(benchmark).slug
    page = client.get(reverse("leaderboard:kit", args=[slug]))
    assert page.status_code == 200
    assert f"<code>agents/{agent}/</code>" in page.content.decode()

    download = client.get(reverse("leaderboard:kit-download", args=[slug]))
    assert download.status_code == 200, download.content
    files = kit_members(body_of(download))
    assert f"ENV PODIUM_AGENT={spec.decode()}".encode() in files[f"agents/{agent}/Dockerfile"]
    assert f"agents/{agent}/agent.py" in files
    readme = files["README.md"].decode()
    assert f"docker build -t my-agent agents/{agent}" in readme
    assert f"--image my-agent --protocol {benchmark} --task answers" in readme
    assert f"python -m evaluator score --protocol {benchmark} --split" in readme

    kit = api.get(reverse("api:kit", args=[slug]))
    assert kit.status_code == 200
    assert kit.json()["agents"] == [agent]


def test_crag_mm_commands_name_the_benchmark_too(kit_settings, challenge, task):
    readme = contents.plan(challenge).readme
    assert "python -m workers.cli --image my-agent --protocol crag-mm --task" in readme
    assert "python -m evaluator score --protocol crag-mm --split" in readme


def test_a_benchmark_without_an_example_agent_gets_a_kit_that_says_so(
    kit_settings, signed_in, monkeypatch
):
    monkeypatch.setattr(benchmark_class("m2rag"), "example_agent", lambda self: None)
    client, _ = signed_in
    challenge = _challenge("m2rag")
    plan = contents.plan(challenge)
    assert plan.agents == () and plan.manifest["tasks"][0]["example_agent"] is None
    assert "Podium has no example agent for M2RAG: write your own agent" in plan.readme
    assert "docker build" not in plan.readme
    download = client.get(reverse("leaderboard:kit-download", args=[challenge.slug]))
    assert download.status_code == 200
    assert not [name for name in kit_members(body_of(download)) if name.startswith("agents/")]
