"""Judge processes share one endpoint's concurrency limit (workers.judge_slots, real Redis)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import uuid

import pytest
import redis

from evaluator.benchmarks.crag_mm.prompt import CragMMRubric
from evaluator.benchmarks.crag_mm.records import Verdict
from evaluator.judges import judge_all, make_judge
from evaluator.records import JudgeRequest
from tests.fake_openai import FakeOpenAI
from tests.services import redis_url
from workers.judge_slots import judge_slots

URL = redis_url("reaper")  # unique keys per test; the reaper tests empty it only around theirs
NS = "podium:judge-slots-test:"  # an install's namespace (podium.install)


@pytest.fixture
def client():
    with redis.Redis.from_url(URL) as client:
        yield client


def test_the_slots_go_to_the_first_and_come_back_when_it_is_done(client):
    endpoint = uuid.uuid4().hex
    with judge_slots(endpoint, 3, client, namespace=NS) as taken:
        assert taken == 3
        with (
            pytest.raises(TimeoutError, match="no judge slot"),
            judge_slots(endpoint, 3, client, wait_s=0.3, namespace=NS),
        ):
            pass
    with judge_slots(endpoint, 3, client, wait_s=0.3, namespace=NS) as taken:
        assert taken == 3


def test_two_installs_on_one_redis_have_slots_of_their_own(client):
    endpoint = uuid.uuid4().hex
    with judge_slots(endpoint, 2, client, namespace="podium:a:") as taken:
        assert taken == 2
        with judge_slots(endpoint, 2, client, wait_s=0.3, namespace="podium:b:") as theirs:
            assert theirs == 2  # the other install's endpoint of the same name: not shared
            keys = (f"podium:a:judge-slots:{endpoint}", f"podium:b:judge-slots:{endpoint}")
            assert client.exists(*keys) == 2


def _hold_forever(endpoint: str, url: str, ready) -> None:
    with (
        redis.Redis.from_url(url) as client,
        judge_slots(endpoint, 2, client, lease_s=1.0, namespace=NS),
    ):
        ready.send(True)
        time.sleep(600)


def test_a_dead_processs_slots_lapse_and_a_live_ones_are_renewed(client):
    endpoint = uuid.uuid4().hex
    receive, send = multiprocessing.Pipe(duplex=False)
    holder = multiprocessing.get_context("spawn").Process(
        target=_hold_forever, args=(endpoint, URL, send)
    )
    holder.start()
    try:
        assert receive.poll(30) and receive.recv()
        # renewed past its 1 s lease while it lives
        with (
            pytest.raises(TimeoutError),
            judge_slots(endpoint, 2, client, wait_s=2.0, namespace=NS),
        ):
            pass
        os.kill(holder.pid, signal.SIGKILL)
        holder.join()
        started = time.monotonic()
        with judge_slots(endpoint, 2, client, wait_s=5.0, namespace=NS) as taken:
            assert taken == 2 and time.monotonic() - started < 1.5
    finally:
        holder.kill()


def _judge_with_slots(endpoint: str, url: str, base_url: str, turns: int) -> None:
    with (
        redis.Redis.from_url(url) as client,
        judge_slots(endpoint, 4, client, namespace=NS) as taken,
    ):
        judge = make_judge(
            "openai", CragMMRubric(), base_url=base_url, model="m", concurrency=taken,
            structured="none", max_retries=0,
        )  # fmt: skip
        requests = [JudgeRequest(f"q{os.getpid()}-{i}", "a", "a") for i in range(turns)]
        judged = judge_all(judge, requests, None, progress=False)
        assert all(j.verdict == Verdict.CORRECT for j in judged), judged


def test_three_judge_processes_never_exceed_the_endpoints_limit():
    with FakeOpenAI(latency_s=0.05) as fake_openai:
        _three_processes(fake_openai)


def _three_processes(fake_openai: FakeOpenAI) -> None:
    endpoint = uuid.uuid4().hex
    context = multiprocessing.get_context("spawn")
    judges = [
        context.Process(target=_judge_with_slots, args=(endpoint, URL, fake_openai.url, 24))
        for _ in range(3)
    ]
    for process in judges:
        process.start()
    for process in judges:
        process.join(120)
    assert [p.exitcode for p in judges] == [0, 0, 0]
    assert fake_openai.count == 72
    assert fake_openai.peak_in_flight <= 4
