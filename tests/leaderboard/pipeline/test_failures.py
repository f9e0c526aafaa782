"""The pipeline under failure: a worker killed mid-run, the judge endpoint down.

Real Celery worker processes, Redis, PostgreSQL and Docker; the judge is a real HTTP server
speaking the OpenAI API (tests/fake_openai.py), stopped and started again.
"""

from __future__ import annotations

import json
import os
import signal
import socket
from collections import defaultdict
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evaluator.benchmarks.crag_mm.sample import write_sample
from leaderboard.models import Challenge, EvaluationRun, ItemAnswer, ItemVerdict
from leaderboard.pipeline.bundles import store_corpus
from leaderboard.splits import import_split_dir
from tests.e2e.harness import REPO, make_task, pipeline, submit_agent, team_member, write_split
from tests.fake_openai import FAKE_JUDGE, FakeOpenAI, endpoints_setting

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
__all__ = ["pipeline", "team_member"]  # fixtures used by the tests below

State = EvaluationRun.State
COUNTER = REPO / "tests/e2e/agents/counter"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_worker_killed_mid_run_is_replaced_and_no_turn_is_asked_twice(
    pipeline, team_member, tmp_path
):
    team, user = team_member
    challenge = Challenge.objects.create(name="Kill", slug="kill", is_published=True)
    task = make_task(challenge, "multi-turn-qa")
    split = import_split_dir(task, "validation", write_split(tmp_path / "split", 8, 3))
    submission = submit_agent(team, user, challenge, COUNTER, "counter")
    run = EvaluationRun.objects.get(submission=submission)
    answers = ItemAnswer.objects.filter(run=run)

    first = pipeline.start_worker("first")
    pipeline.wait_for("some answers", lambda: answers.count() >= 6, timeout_s=180, every_s=0.1)
    first.send_signal(signal.SIGKILL)
    first.wait()
    stored_at_kill = set(answers.values_list("item_key", flat=True))
    assert 6 <= len(stored_at_kill) < split.items, "the worker must die mid-run"
    run.refresh_from_db()
    assert run.state == State.RUNNING

    # The replacement's beat finds the silent run, re-queues it; the worker resumes it.
    pipeline.start_worker(
        "second", beat=True, PODIUM_HEARTBEAT_TIMEOUT_S="3", PODIUM_REAPER_INTERVAL_S="1"
    )
    (run,) = pipeline.wait_finished(submission, timeout_s=180)
    assert run.state == State.DONE, (run.failure_reason, run.operator_detail)
    assert run.attempt == 1

    rows = list(answers.order_by("created_at", "pk"))
    assert len(rows) == split.items == len({r.item_key for r in rows})  # none lost
    assert all(r.outcome == ItemAnswer.Outcome.ANSWERED for r in rows)
    # The agent's own record: per process, how many turns it had been asked at each answer.
    counts = defaultdict(list)
    for row in rows:
        record = json.loads(row.response)
        counts[record["process"]].append(record["asked"])
    assert len(counts) == 2, "one agent process per worker"
    before, after = counts.values()
    # The first process answered what was stored before the kill (its last, unstored batch
    # was lost with the worker); the second was asked exactly the turns still unanswered.
    assert before == list(range(1, len(before) + 1))
    assert after == list(range(1, len(after) + 1))
    assert len(before) == len(stored_at_kill)
    assert ItemVerdict.objects.filter(answer__run=run).count() == split.items
    assert run.slice_scores.filter(dimension="all").exists()


def test_unjudged_items_wait_while_the_judge_is_down_and_complete_when_it_returns(
    pipeline, team_member, tmp_path
):
    team, user = team_member
    port = _free_port()
    challenge = Challenge.objects.create(name="Judge down", slug="judge-down", is_published=True)
    task = make_task(challenge, "single-source-augmentation", **FAKE_JUDGE)
    split = import_split_dir(task, "validation", write_split(tmp_path / "split", 4, 1))
    submission = submit_agent(team, user, challenge, COUNTER, "counter")
    run = EvaluationRun.objects.get(submission=submission)
    pipeline.start_worker(
        "worker",
        PODIUM_JUDGE_ENDPOINTS=endpoints_setting(f"http://127.0.0.1:{port}/v1"),
        PODIUM_JUDGE_MAX_RETRIES="0",
        PODIUM_JUDGE_ATTEMPT_TIMEOUT_S="2",
        PODIUM_JUDGE_TOTAL_TIMEOUT_S="3",
    )

    # Nothing listens on the judge's port: the run waits in judging, verdicts unjudged.
    def unjudged_seen() -> bool:
        run.refresh_from_db()
        return run.state == State.JUDGING and run.unjudged_items == split.items

    pipeline.wait_for("turns left unjudged", unjudged_seen, timeout_s=180)
    pipeline.wait_for(
        "two more judging attempts", lambda: pipeline.log("worker").count("again in") >= 3
    )
    run.refresh_from_db()
    assert run.state == State.JUDGING
    assert not ItemVerdict.objects.filter(answer__run=run).exists()

    with FakeOpenAI(reply="CORRECT", port=port) as judge:
        (run,) = pipeline.wait_finished(submission, timeout_s=120)
        assert judge.count >= split.items
    assert run.state == State.DONE, (run.failure_reason, run.operator_detail)
    assert run.unjudged_items == 0 and run.scores_complete
    verdicts = ItemVerdict.objects.filter(answer__run=run)
    assert verdicts.count() == split.items
    assert set(verdicts.values_list("verdict", flat=True)) == {"correct"}
    assert run.slice_scores.get(dimension="all").metrics["truthfulness"] == 1.0


def test_an_agent_cannot_leak_the_private_split_through_its_failure_reason(
    pipeline, team_member, tmp_path
):
    """The agent echoes each batch's queries in a malformed status line: its team reads them
    (quoted, capped, marked) for the validation split, never for the private test."""
    team, user = team_member
    challenge = Challenge.objects.create(name="Leak", slug="leak", is_published=True)
    task = make_task(challenge, "single-source-augmentation")
    for kind in ("validation", "private-test"):
        import_split_dir(task, kind, write_split(tmp_path / kind, 4, 1))
    submission = submit_agent(
        team, user, challenge, REPO / "tests/workers/hostile/echo_queries", "leak"
    )
    pipeline.start_worker("leaky")
    runs = {run.split.kind: run for run in pipeline.wait_finished(submission, timeout_s=240)}
    private, public = runs["private-test"], runs["validation"]
    for run in (private, public):
        assert run.state == State.FAILED
        assert run.failure_reason.startswith("protocol error: /batch: malformed HTTP response")
    assert "what is" not in private.failure_reason and "c0-t0" not in private.failure_reason
    assert "not shown for a private split" in private.failure_reason
    said = json.loads(private.operator_detail)["agent_text"]
    assert all(f"what is c{i}-t0?" in said for i in range(4))
    quoted = public.failure_reason.split("; the agent sent (quoted, first 200 of ", 1)[1]
    assert "what is c0-t0?" in quoted and len(public.failure_reason) < 600

    # Everything the team can read about the private run (page, progress, API) holds no query;
    # an organiser reads the agent's text in the operator detail.
    team_reads = Client()
    team_reads.force_login(user)
    for url in (f"/runs/{private.pk}/", f"/runs/{private.pk}/progress.json"):
        page = team_reads.get(url)
        assert page.status_code == 200 and b"not shown for a private split" in page.content
        assert b"what is" not in page.content and b"c0-t0" not in page.content
    assert b"what is c0-t0?" in team_reads.get(f"/runs/{public.pk}/").content
    api = team_reads.get(f"/api/submissions/{submission.pk}/")
    assert api.status_code == 200 and b"not shown for a private split" in api.content
    assert b"what is" in api.content  # the validation run's quote, and only that
    assert api.content.count(b"what is") == public.failure_reason.count("what is")
    organiser = Client()
    organiser.force_login(User.objects.create_user("organiser", is_staff=True))
    detail = organiser.get(f"/runs/{private.pk}/").content
    assert b"Operator detail" in detail and b"what is c3-t0?" in detail


def _descendants(pid: int) -> list[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _search_processes(worker_pid: int) -> list[int]:
    return [
        pid
        for pid in _descendants(worker_pid)
        if b"workers.search.process" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]


def test_a_search_process_killed_mid_run_is_replaced_and_no_turn_is_lost(
    pipeline, team_member, tmp_path
):
    """The run's search process dies while the agent searches: the batch in flight is not
    recorded (its searches failed on Podium's side), the run is retried with a new search
    process and resumes; every turn is answered once, none recorded as an error."""
    team, user = team_member
    sample = tmp_path / "sample"
    write_sample(sample)
    challenge = Challenge.objects.create(name="Search dies", slug="search-dies", is_published=True)
    task = make_task(challenge, "single-source-augmentation", image_search_enabled=True)
    split = import_split_dir(task, "validation", write_split(tmp_path / "split", 12, 1))
    store_corpus(challenge, sample / "corpus")
    submission = submit_agent(
        team, user, challenge, REPO / "tests/e2e/agents/slow_searcher", "searcher"
    )
    run = EvaluationRun.objects.get(submission=submission)
    answers = ItemAnswer.objects.filter(run=run)

    worker = pipeline.start_worker("worker")
    pipeline.wait_for("some answers", lambda: answers.count() >= 3, timeout_s=180, every_s=0.05)
    (first,) = _search_processes(worker.pid)
    os.kill(first, signal.SIGKILL)
    (run,) = pipeline.wait_finished(submission, timeout_s=180)
    assert run.state == State.DONE, (run.failure_reason, run.operator_detail)
    assert "the search process stopped (killed by signal 9)" in pipeline.log("worker")
    rows = list(answers)
    assert len(rows) == split.items == len({r.item_key for r in rows})
    assert {r.outcome for r in rows} == {ItemAnswer.Outcome.ANSWERED}
    assert all(r.response for r in rows)
    (second,) = _search_processes(worker.pid)
    assert second != first
