"""Judge transcripts: written by every score, replayed with zero model calls, refused when they
do not fit the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.benchmarks.crag_mm.records import Verdict
from evaluator.cli import EXIT_BAD_INPUT, EXIT_OK
from evaluator.report import SCORES_JSON, read_items, read_scores
from tests.evaluator.test_cli import (
    openai_flags,
    predictions,
    sample,
    score,
    server,
    split,
)

__all__ = ["predictions", "sample", "server", "split"]  # fixtures


def _calls(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "transcript.jsonl").read_text().splitlines()]


def _replay(split: Path, predictions: Path, out: Path, transcript: Path) -> int:
    return score(split, predictions, out, "--judge=replay", f"--transcript={transcript}")


def _changed(predictions: Path, key: str, out: Path) -> Path:
    """``predictions`` with another answer for the turn of judge call ``key``."""
    rows = [json.loads(line) for line in predictions.read_text().splitlines()]
    for row in rows:
        if f"turn/{row['interaction_id']}" == key:
            row["response"] = "Another answer altogether."
    out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return out


def test_a_rules_run_is_transcribed_and_replayed_to_the_same_scores(split, predictions, tmp_path):
    first = tmp_path / "first"
    assert score(split, predictions, first, "--no-cache") == EXIT_OK
    calls = _calls(first)
    sent = [t for t in read_items(first) if not t.is_miss and not t.is_exact_match]
    assert [c["key"] for c in calls] == [f"turn/{t.interaction_id}" for t in sent]
    assert {c["judge"] for c in calls} == {"rules@1"}
    for call, turn in zip(calls, sent, strict=True):
        assert call["judged"] == [turn.query, turn.ground_truth, turn.agent_response]
        assert json.loads(call["reply"])["verdict"] == (
            "CORRECT" if turn.verdict is Verdict.CORRECT else "WRONG"
        )
    again = tmp_path / "again"
    assert _replay(split, predictions, again, first / "transcript.jsonl") == EXIT_OK
    assert (again / SCORES_JSON).read_bytes() == (first / SCORES_JSON).read_bytes()
    assert (again / "turns.jsonl").read_bytes() == (first / "turns.jsonl").read_bytes()
    assert not (again / "transcript.jsonl").exists()  # a replay writes none of its own


def test_an_llm_run_replays_without_a_single_model_call(split, predictions, server, tmp_path):
    server.replies["What"] = "CORRECT"  # some turns correct, the rest WRONG
    first = tmp_path / "first"
    assert score(split, predictions, first, *openai_flags(server, tmp_path / "c.db")) == EXIT_OK
    calls = _calls(first)
    assert len(calls) == server.count > 0
    assert calls[0]["request"]["model"] == "fake-judge"
    assert [m["role"] for m in calls[0]["request"]["messages"]] == ["system", "user"]
    assert {c["judge"] for c in calls} == {"openai:fake-judge@unspecified"}
    # Again from the warm cache: no model call, the same transcript.
    cached = tmp_path / "cached"
    assert score(split, predictions, cached, *openai_flags(server, tmp_path / "c.db")) == EXIT_OK
    assert _calls(cached) == calls
    asked = server.count
    again = tmp_path / "again"
    assert _replay(split, predictions, again, first / "transcript.jsonl") == EXIT_OK
    assert server.count == asked
    assert (again / SCORES_JSON).read_bytes() == (first / SCORES_JSON).read_bytes()


def test_a_missing_key_or_another_answer_is_refused_by_name(split, predictions, tmp_path, capsys):
    first = tmp_path / "first"
    assert score(split, predictions, first, "--no-cache") == EXIT_OK
    calls = _calls(first)
    short = tmp_path / "short.jsonl"
    short.write_text("".join(json.dumps(c) + "\n" for c in calls[1:]))
    capsys.readouterr()
    assert _replay(split, predictions, tmp_path / "x", short) == EXIT_BAD_INPUT
    assert f"no judge call for key {calls[0]['key']!r}" in capsys.readouterr().err

    changed = _changed(predictions, calls[0]["key"], tmp_path / "changed.jsonl")
    assert _replay(split, changed, tmp_path / "y", first / "transcript.jsonl") == EXIT_BAD_INPUT
    assert "judged another question, ground truth or answer" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json\n", "short.jsonl:1: malformed JSON"),
        ("[1]\n", "short.jsonl:1: expected a JSON object, got list"),
        ('{"key": "turn/x"}\n', "short.jsonl:1: field 'reply' missing"),
        ('{"reply": "CORRECT"}\n', "short.jsonl:1: field 'key' missing"),
        ('{"key": "turn/x", "reply": 3}\n', "short.jsonl:1: field 'reply' must be a string"),
        ('{"key": "turn/x", "reply": "x", "judged": ["q"]}\n', "short.jsonl:1: field 'judged'"),
        ("", "no judge call for key"),
    ],
)
def test_a_broken_transcript_is_named_with_its_line(
    split, predictions, tmp_path, capsys, content, message
):
    broken = tmp_path / "short.jsonl"
    broken.write_text(content)
    assert _replay(split, predictions, tmp_path / "x", broken) == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err


def _written(calls: list[dict]) -> str:
    """An organiser's transcript: each call's key and reply only."""
    return "".join(json.dumps({"key": c["key"], "reply": c["reply"]}) + "\n" for c in calls)


def test_a_written_transcript_of_keys_and_replies_replays_to_the_same_scores(
    split, predictions, server, tmp_path, capsys
):
    server.replies["What"] = "CORRECT"  # some turns correct, the rest WRONG
    first = tmp_path / "first"
    assert score(split, predictions, first, *openai_flags(server, tmp_path / "c.db")) == EXIT_OK
    calls = _calls(first)  # replies {"verdict": ...}: the judge's structured output
    # the organiser writes the bare verdict words CRAG-MM's rubric reads
    words = [{**c, "reply": json.loads(c["reply"])["verdict"]} for c in calls]
    assert {c["reply"] for c in words} == {"CORRECT", "WRONG"}
    written = tmp_path / "written.jsonl"
    written.write_text(_written(words))
    capsys.readouterr()
    again = tmp_path / "again"
    assert _replay(split, predictions, again, written) == EXIT_OK
    assert "NOTICE: verdicts read from a transcript whose lines name no judge" in (
        capsys.readouterr().out
    )
    expected, replayed = read_scores(first), read_scores(again)
    assert replayed["judge"] == {"id": "replay:written", "prompt_version": "",
                                 "prompt_hash": "", "kind": "written"}  # fmt: skip
    assert {**replayed, "judge": expected["judge"]} == expected
    verdicts = [(t.interaction_id, t.verdict) for t in read_items(first)]
    assert [(t.interaction_id, t.verdict) for t in read_items(again)] == verdicts
    # a written line is for whatever answer the run has under its key: with no `judged`, a
    # changed answer takes the line's reply (the organiser wrote it for these predictions)
    changed = _changed(predictions, calls[0]["key"], tmp_path / "changed.jsonl")
    assert _replay(split, changed, tmp_path / "y", written) == EXIT_OK
    assert read_scores(tmp_path / "y")["all"] == expected["all"]


def test_what_a_written_line_has_beyond_key_and_reply_is_checked(
    split, predictions, tmp_path, capsys
):
    first = tmp_path / "first"
    assert score(split, predictions, first, "--no-cache") == EXIT_OK
    calls = _calls(first)
    assert len(calls) >= 2
    one, two = calls[0], calls[1]
    bare = {"key": two["key"], "reply": two["reply"]}
    cases = [
        # a line naming part of its judge
        ([{"key": one["key"], "reply": one["reply"], "judge": "rules@1"}],
         "short.jsonl:1: fields judge, prompt_version, prompt_hash go together"),
        # a line recorded for another prompt
        ([{**one, "prompt_hash": "0" * 64}, *calls[1:]],
         "short.jsonl:1: field 'prompt_hash': recorded for another prompt"),
        # two judges in one file
        ([one, {**two, "judge": "openai:other@1"}, *calls[2:]],
         "short.jsonl:2: judge ('openai:other@1'"),
        # a recorded line beside a written one
        ([one, bare, *calls[2:]], "short.jsonl:2: line 1 names its judge"),
        # one key twice with two replies
        ([{"key": one["key"], "reply": "CORRECT"}, {"key": one["key"], "reply": "WRONG"}],
         f"short.jsonl:2: key {one['key']!r} again (line 1)"),
        # a key no turn of the split has
        ([bare, {"key": "turn/no-such-turn", "reply": "CORRECT"}],
         "short.jsonl:2: key 'turn/no-such-turn': this split never asks"),
        # `judged`, when present, is still this run's question, ground truth and answer
        ([{"key": one["key"], "reply": one["reply"], "judged": ["q", "gt", "other"]}],
         "short.jsonl:1: the call for key"),
    ]  # fmt: skip
    for lines, message in cases:
        broken = tmp_path / "short.jsonl"
        broken.write_text("".join(json.dumps(line) + "\n" for line in lines))
        capsys.readouterr()
        assert _replay(split, predictions, tmp_path / "x", broken) == EXIT_BAD_INPUT, message
        assert message in capsys.readouterr().err, message


def test_transcript_and_replay_go_together(split, predictions, tmp_path, capsys):
    assert score(split, predictions, tmp_path / "x", "--judge=replay") == EXIT_BAD_INPUT
    flag = f"--transcript={tmp_path / 't.jsonl'}"
    assert score(split, predictions, tmp_path / "y", flag) == EXIT_BAD_INPUT
    assert "--transcript goes with --judge replay" in capsys.readouterr().err
