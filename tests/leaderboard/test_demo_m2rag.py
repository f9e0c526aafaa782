"""The demo's M2RAG challenge imported from its bundle, twice (the second finds the first's);
the example agents submitted by their teams, the demo login in each (no Docker: the end-to-end
demo is ``tests/e2e/test_demo.py``)."""

from __future__ import annotations

from pathlib import Path

from leaderboard.demo.setup import M2RAG_AGENTS, demo_user, m2rag_challenge, submit_agents
from leaderboard.models import Challenge, Membership, Split, Submission
from podium.celery import app

REPO = Path(__file__).resolve().parents[2]


def test_the_m2rag_demo_is_published_with_its_split_and_agents(db, settings, tmp_path, monkeypatch):
    settings.VAR_DIR = tmp_path / "var"
    monkeypatch.setattr(app, "send_task", lambda *args, **kwargs: None)
    first = m2rag_challenge()
    again = m2rag_challenge()
    assert first.pk == again.pk and Challenge.objects.get(pk=first.pk).is_published
    (split,) = Split.objects.filter(task__challenge=first)
    assert (split.task.benchmark, split.kind) == ("m2rag", Split.Kind.VALIDATION) and split.bundle
    user = demo_user(first)
    submitted = submit_agents(first, user, REPO, M2RAG_AGENTS)
    assert [s.method_name for s in submitted] == ["m2rag-images", "m2rag-text"]
    assert submit_agents(first, user, REPO, M2RAG_AGENTS) == submitted  # found, not made again
    assert Submission.objects.filter(challenge=first).count() == 2
    teams = {m.team.name for m in Membership.objects.filter(user=user)}
    assert {"Image placers", "Text writers"} <= teams
