"""End to end: a repository laid out as the CRAG-MM kit (its Dockerfile, requirements.txt,
aicrowd.json and agents/user_config.py), built on Podium's base with its requirements installed
from the challenge's package index (a local index started by the test), then evaluated and
scored by a real Celery worker."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User

from leaderboard import run_actions
from leaderboard.models import Challenge, EvaluationRun, ItemAnswer, SliceScore
from leaderboard.splits import import_split_dir
from tests.e2e.harness import make_task, pipeline, submit_agent, team_member, write_split
from tests.package_index import serve_index, wheel

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
__all__ = ["pipeline", "team_member"]  # fixtures used by the test below

# The kit's own Dockerfile, with Podium's base image in its FROM line.
KIT_DOCKERFILE = """\
FROM podium/agent-base:py3.11

RUN pip install --progress-bar off --no-cache-dir -U pip
COPY requirements.txt /tmp/requirements.txt
RUN pip install --progress-bar off --no-cache-dir -r /tmp/requirements.txt

WORKDIR /home/aicrowd
COPY . .
"""
USER_CONFIG = "from agents.echo_agent import EchoAgent\n\nUserAgent = EchoAgent\n"
ECHO_AGENT = """\
from kit_answers import answer
from cragmm_search.search import UnifiedSearchPipeline


class EchoAgent:
    def __init__(self, search_pipeline: UnifiedSearchPipeline):
        self.search_pipeline = search_pipeline

    def get_batch_size(self) -> int:
        return 4

    def batch_generate_response(self, queries, images, message_histories):
        return [answer(q) for q in queries]
"""


def test_a_kit_repository_installs_from_the_package_index_and_is_scored(
    pipeline, team_member, tmp_path
):
    team, user = team_member
    index = tmp_path / "index"
    (index / "files").mkdir(parents=True)
    # "what is c0-t1?" -> "answer c0-t1", the split's ground truth
    source = "def answer(query):\n    return 'answer ' + query.removeprefix('what is ')[:-1]\n"
    wheel(index / "files", "kit-answers", "2.0", {"kit_answers.py": source})
    repo = tmp_path / "kit"
    (repo / "agents").mkdir(parents=True)
    (repo / "Dockerfile").write_text(KIT_DOCKERFILE)
    (repo / "requirements.txt").write_text("kit-answers==2.0\ncragmm-search-pipeline>=0.2.12\n")
    (repo / "aicrowd.json").write_text(json.dumps({"challenge_id": "x", "hf_models": []}))
    (repo / "agents/__init__.py").write_text("")
    (repo / "agents/user_config.py").write_text(USER_CONFIG)
    (repo / "agents/echo_agent.py").write_text(ECHO_AGENT)

    with serve_index(index) as (url, requests):
        challenge = Challenge.objects.create(
            name="Kit", slug="kit", package_index=url, is_published=True
        )
        task = make_task(challenge, "multi-turn-qa")
        split = import_split_dir(task, "validation", write_split(tmp_path / "split", 3, 2))
        submission = submit_agent(team, user, challenge, repo, "kit-repository")
        pipeline.start_worker("worker")
        (run,) = pipeline.wait_finished(submission, timeout_s=300)
    assert run.state == EvaluationRun.State.DONE, (run.failure_reason, run.operator_detail)
    submission.refresh_from_db()  # the team's own build log, kept; no notice
    assert "Successfully installed kit-answers-2.0" in submission.build_log
    assert "podium: " not in submission.build_log
    assert "/simple/kit-answers/" in requests  # installed from the index, not shipped
    assert "/simple/cragmm-search-pipeline/" not in requests  # Podium's stand-in satisfies it
    answers = run.answers.filter(outcome=ItemAnswer.Outcome.ANSWERED)
    assert answers.count() == split.items == 6
    assert all(a.response == f"answer {a.item_key}" for a in answers)
    overall = SliceScore.objects.get(run=run, dimension="all")
    assert overall.metrics["accuracy"] == 1.0

    # An organiser re-judges it, then re-runs it: the worker takes both up from the queues.
    organiser = User.objects.create_superuser("org", password="pw-secret-123")
    assert run_actions.rejudge([run], organiser, "judge prompt fixed") == []
    (run,) = pipeline.wait_finished(submission)
    assert run.state == EvaluationRun.State.DONE and run.answers.count() == 6
    assert SliceScore.objects.get(run=run, dimension="all").metrics == overall.metrics
    first_answers = set(run.answers.values_list("pk", flat=True))
    assert run_actions.rerun([run], organiser, "split corrected") == []
    (run,) = pipeline.wait_finished(submission)
    assert run.state == EvaluationRun.State.DONE, (run.failure_reason, run.operator_detail)
    assert run.answers.count() == 6 and not first_answers & set(
        run.answers.values_list("pk", flat=True)
    )
    assert [a.kind for a in run.actions.order_by("at")] == ["rejudge", "rerun"]
