"""The runner's defined outcomes, with real containers of small test agents."""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json

import pytest

from evaluator.benchmarks.crag_mm.agent import TurnPlan
from tests.workers.conftest import (
    TEST_LIMITS,
    TEST_POLICY,
    IdentityTruncator,
    Recorder,
    make_split,
    tar_bytes,
)
from workers.agent_container import OUTPUT_CAP_BYTES, clean_output, keep_output_tail
from workers.builds import build_context
from workers.runner import run_agent

pytestmark = pytest.mark.docker
TASK = "multi-turn-qa"


def run(image, split, sink, limits=TEST_LIMITS, truncator=None, **kwargs):
    plan = TurnPlan(
        split, TASK, (truncator or IdentityTruncator()).truncate, kwargs.get("answered")
    )
    return run_agent(image, plan, TASK, limits, sink, policy=TEST_POLICY, **kwargs)


def test_official_order_and_histories_with_a_recording_agent(
    agent_image, tmp_path, recorder, no_leftovers
):
    split = make_split(tmp_path / "split", [2, 1, 3])
    report = run(agent_image("agents/recorder"), split, recorder)
    assert report.status == "completed" and report.failure_reason is None
    assert (report.batch_size, report.kit, report.restarts) == (2, "A", 0)
    seen = {r.key: json.loads(r.response) for r in recorder.results}
    batches = {}
    for interaction_id, answer in seen.items():
        batches.setdefault(answer["batch"], []).append(interaction_id)
    # batch size 2: one turn per conversation per batch, continuing conversations first
    assert list(batches.values()) == [["c0-t0", "c1-t0"], ["c0-t1", "c2-t0"], ["c2-t1"], ["c2-t2"]]
    # histories: earlier queries and the agent's own answers, nothing else
    third = seen["c2-t2"]["history"]
    assert [m["role"] for m in third] == ["user", "assistant", "user", "assistant"]
    assert third[1]["content"] == recorder.by_id()["c2-t0"].response
    assert third[2]["content"] == split.conversations[2].turns[1].query
    assert "PODIUM-GROUND-TRUTH" not in json.dumps(seen)
    assert seen["c1-t0"]["image_size"] == [65, 48], "the conversation's own image"
    # the agent can read exactly the images of the batch being asked (named by content hash)
    named = {
        c.session_id: hashlib.sha256(split.image_path(c).read_bytes()).hexdigest() + ".jpg"
        for c in split.conversations
    }
    for ids in batches.values():
        expected = sorted({named[i.split("-")[0]] for i in ids})
        assert all(seen[i]["image_dir"] == expected for i in ids), (ids, seen[ids[0]])
    assert [t.outcome for t in report.items] == ["answered"] * 6
    assert recorder.calls == [2, 2, 1, 1], "the sink gets each batch's results in one call"
    assert report.start_to_ready_s is not None and report.total_s >= report.start_to_ready_s
    assert report.image_digest.startswith("sha256:")


def test_the_process_s_earlier_objects_are_left_out_of_collections_while_it_runs(
    agent_image, tmp_path
):
    """A full collection of a worker's heap would fall between two batches: the objects from
    before the run are frozen while it runs, and collected as usual after it."""
    frozen: list[int] = []
    report = run(
        agent_image("agents/recorder"),
        make_split(tmp_path / "split", [2]),  # two batches: a turn each
        lambda results: frozen.append(gc.get_freeze_count()),
    )
    assert report.status == "completed"
    assert len(frozen) == 2 and min(frozen) > 10_000
    assert gc.get_freeze_count() == 0


def test_histories_hold_truncated_answers(agent_image, tmp_path, recorder):
    class FirstWords:
        name = "first-words"

        def truncate(self, text: str) -> str:
            return text[:12]

    split = make_split(tmp_path / "split", [2])
    run(agent_image("agents/recorder"), split, recorder, truncator=FirstWords())
    second = json.loads(recorder.by_id()["c0-t1"].response)
    assert second["history"][1]["content"] == recorder.by_id()["c0-t0"].response[:12]


def test_resume_never_asks_an_answered_turn_again(agent_image, tmp_path, no_leftovers):
    split = make_split(tmp_path / "split", [2, 1, 3])
    earlier = {"c0-t0": "kept answer", "c1-t0": "other", "c2-t0": "x"}
    recorder = Recorder()
    report = run(agent_image("agents/recorder"), split, recorder, answered=earlier)
    assert report.status == "completed" and report.resumed_items == 3
    assert sorted(r.key for r in recorder.results) == ["c0-t1", "c2-t1", "c2-t2"]
    history = json.loads(recorder.by_id()["c0-t1"].response)["history"]
    assert history[1] == {"role": "assistant", "content": "kept answer"}
    # a second run with everything answered asks nothing
    everything = {**earlier, **{r.key: r.response for r in recorder.results}}
    again = Recorder()
    assert (
        run(agent_image("agents/recorder"), split, again, answered=everything).status == "completed"
    )
    assert again.results == []


def test_crash_restarts_and_resumes_at_the_first_unanswered_turn(
    agent_image, tmp_path, recorder, no_leftovers
):
    # The agent dies on the 2nd batch of every container start; 4 batches of 2 turns.
    split = make_split(tmp_path / "split", [1] * 8)
    limits = dataclasses.replace(TEST_LIMITS, max_restarts=3)
    report = run(agent_image("agents/crasher"), split, recorder, limits=limits)
    assert report.status == "completed", report.failure_reason
    assert report.restarts == 3
    ids = [r.key for r in recorder.results]
    assert sorted(ids) == [f"c{i}-t0" for i in range(8)] and len(ids) == len(set(ids))
    assert all(r.outcome == "answered" for r in recorder.results)


def test_crash_loop_ends_the_run(agent_image, tmp_path, recorder, no_leftovers):
    split = make_split(tmp_path / "split", [1] * 8)
    limits = dataclasses.replace(TEST_LIMITS, max_restarts=1)
    report = run(agent_image("agents/crasher"), split, recorder, limits=limits)
    assert report.status == "failed"
    assert "crash loop" in report.failure_reason and "exit code 3" in report.failure_reason
    assert report.restarts == 2
    assert len(recorder.results) == 4  # the answered turns were still recorded


def test_consecutive_timeouts_restart_the_agent(agent_image, tmp_path, recorder, no_leftovers):
    queries = {"c0-t0": "a slow question", "c1-t0": "another one"}
    split = make_split(tmp_path / "split", [1, 1, 1, 1], queries)
    limits = dataclasses.replace(TEST_LIMITS, per_item_s=1, max_consecutive_timeouts=2)
    report = run(agent_image("agents/slow_turns"), split, recorder, limits=limits)
    assert report.status == "completed", report.failure_reason
    outcomes = {r.key: r.outcome for r in recorder.results}
    # c0 hangs; c1 waits behind it until its own deadline; then a fresh container answers
    assert outcomes == {
        "c0-t0": "timeout",
        "c1-t0": "timeout",
        "c2-t0": "answered",
        "c3-t0": "answered",
    }
    assert report.restarts == 1
    assert recorder.by_id()["c0-t0"].response == ""
    assert 1.0 <= recorder.by_id()["c0-t0"].latency_s < 2.0


def test_a_short_last_batch_gets_as_long_as_a_full_one(
    agent_image, tmp_path, recorder, no_leftovers
):
    """The official rule: each call may take 10 s x get_batch_size(), however many turns it
    holds. The agent takes 0.7 s a call with a batch size of 2, at 0.5 s per turn: the last
    call, holding one turn, has 1.0 s (0.5 s under a per-turn-in-the-call rule)."""
    split = make_split(tmp_path / "split", [1, 1, 1])
    limits = dataclasses.replace(TEST_LIMITS, per_item_s=0.5)
    report = run(agent_image("agents/paced"), split, recorder, limits=limits)
    assert report.status == "completed", report.failure_reason
    assert report.batch_size == 2 and recorder.calls == [2, 1]
    assert [r.outcome for r in recorder.results] == ["answered"] * 3


@pytest.mark.parametrize("policy", ["continue", "abort"])
def test_an_agent_error_scores_its_batch_missing_or_ends_the_run(
    agent_image, tmp_path, recorder, no_leftovers, policy
):
    split = make_split(tmp_path / "split", [1, 1, 1], {"c1-t0": "boom secret"})
    limits = dataclasses.replace(TEST_LIMITS, error_policy=policy)
    report = run(agent_image("agents/raises"), split, recorder, limits=limits)
    outcomes = {r.key: r.outcome for r in recorder.results}
    if policy == "continue":
        assert report.status == "completed", report.failure_reason
        assert outcomes == {"c0-t0": "answered", "c1-t0": "error", "c2-t0": "answered"}
        return
    assert report.status == "failed" and outcomes == {"c0-t0": "answered"}
    assert report.failure_reason == (
        "the agent failed on a batch (HTTP 500); this task ends a run on the agent's first "
        "error, as the official evaluation"
    )
    assert "boom secret" in report.agent_text  # kept apart: shown quoted on public splits only


def test_timeout_policy_fail_ends_the_run(agent_image, tmp_path, recorder, no_leftovers):
    split = make_split(tmp_path / "split", [1, 1], {"c0-t0": "slow"})
    limits = dataclasses.replace(TEST_LIMITS, per_item_s=0.5, timeout_policy="fail")
    report = run(agent_image("agents/slow_turns"), split, recorder, limits=limits)
    assert report.status == "failed"
    assert "longer than its 0.5 s deadline" in report.failure_reason
    assert "slow" not in report.failure_reason, "no query text in a reason"


def test_answers_are_capped_and_made_valid_utf8(agent_image, tmp_path, recorder):
    queries = {"c0-t0": "a long one", "c1-t0": "a broken one", "c2-t0": "a plain one"}
    split = make_split(tmp_path / "split", [1, 1, 1], queries)
    limits = dataclasses.replace(TEST_LIMITS, answer_cap_bytes=1000)
    report = run(agent_image("agents/bad_answers"), split, recorder, limits=limits)
    assert report.status == "completed", report.failure_reason
    answers = {r.key: r.response for r in recorder.results}
    assert answers["c0-t0"] == "é" * 500
    assert answers["c1-t0"] == "ok ?? and \ufffd end"
    assert answers["c2-t0"] == "plain"
    for answer in answers.values():
        answer.encode("utf-8")  # never raises


def test_readiness_timeout_and_load_failure_end_the_run(
    agent_image, tmp_path, recorder, no_leftovers
):
    split = make_split(tmp_path / "split", [1])
    limits = dataclasses.replace(TEST_LIMITS, readiness_s=2)
    report = run(agent_image("agents/slow_start"), split, recorder, limits=limits)
    assert report.status == "failed"
    assert report.failure_reason == "the agent was not ready within 2 s"
    assert 2 <= report.total_s < 10
    report = run(agent_image("agents/load_failure"), split, recorder)
    assert report.status == "failed"
    assert report.failure_reason == (
        "the agent reported that it failed to load (/ready answered HTTP 500)"
    )
    assert "model weights not found" in report.agent_text  # its words, kept apart
    assert recorder.results == []


def test_total_wall_time_ends_the_run(agent_image, tmp_path, recorder, no_leftovers):
    split = make_split(tmp_path / "split", [1, 1, 1], {"c0-t0": "slow"})
    limits = dataclasses.replace(TEST_LIMITS, per_item_s=30, total_wall_s=3)
    report = run(agent_image("agents/slow_turns"), split, recorder, limits=limits)
    assert report.status == "failed"
    assert report.failure_reason == "the run exceeded its total wall time of 3 s"
    assert report.total_s < 8


def test_container_is_removed_when_the_caller_is_interrupted(agent_image, tmp_path, no_leftovers):
    split = make_split(tmp_path / "split", [1, 1, 1])

    def interrupting_sink(results):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(agent_image("agents/recorder"), split, interrupting_sink)


def test_an_image_that_exits_at_once_is_a_crash_loop(docker_client, base_image, tmp_path, recorder):
    context = tmp_path / "context.tar"
    context.write_bytes(
        tar_bytes({"Dockerfile": f'FROM {base_image}\nENTRYPOINT ["false"]\n'.encode()})
    )
    image = build_context(context, tag="podium-test/exits-at-once:latest", client=docker_client)
    limits = dataclasses.replace(TEST_LIMITS, max_restarts=1)
    report = run(image, make_split(tmp_path / "split", [1]), recorder, limits=limits)
    assert report.status == "failed"
    assert report.failure_reason == (
        "crash loop: the agent needed a restart 2 times, more than the 1 allowed "
        "(last: the agent stopped unexpectedly (exit code 1))"
    )
    leftovers = docker_client.containers.list(all=True, filters={"ancestor": image.image_id})
    assert leftovers == []


def test_protocol_error_ends_the_run(agent_image, tmp_path, recorder, no_leftovers):
    report = run(agent_image("agents/wrong_shape"), make_split(tmp_path / "s", [1, 1]), recorder)
    assert report.status == "failed"
    assert report.kit == "native" and report.batch_size == 4
    assert report.failure_reason == (
        "protocol error: /batch must answer {'responses': [...]} with 2 responses, one per item"
    )
    assert recorder.results == []


def test_keep_output_tail_keeps_the_last_bytes_on_a_character_boundary():
    assert keep_output_tail("abc", "def", cap_bytes=4) == "cdef"
    assert keep_output_tail("", "ééé", cap_bytes=5) == "éé"
    assert keep_output_tail("ab", "", cap_bytes=10) == "ab"
    assert clean_output(b"a\x00b\xffc") == "ab\ufffdc"


def test_the_report_carries_the_agents_output_tail_across_restarts(
    agent_image, tmp_path, recorder, no_leftovers
):
    # ~42 KiB of output per start, 4 starts (dies on the 2nd batch of each): over the 64 KiB cap.
    split = make_split(tmp_path / "split", [1] * 8)
    limits = dataclasses.replace(TEST_LIMITS, max_restarts=3)
    report = run(agent_image("agents/chatty"), split, recorder, limits=limits)
    assert report.status == "completed", report.failure_reason
    assert report.restarts == 3
    log = report.agent_log
    assert 60 * 1024 < len(log.encode("utf-8")) <= OUTPUT_CAP_BYTES
    assert "chatty batch 1 on" in log[-200:], "the last container's output is at the end"
    assert "chatty batch 2" in log, "the tail reaches into the previous container's output"
    assert "chatty stderr line" in log
    assert "\x00" not in log and "chatty nulbyte bad\ufffdutf8" in log
    assert "line 0000" in log and log.count("chatty start") < 4 * 400, "the front was cut"
