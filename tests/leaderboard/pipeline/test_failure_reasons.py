"""What a team reads when a run fails, and what organisers read: ``team_reason`` and
``operator_detail`` from a runner's report (no database, no Docker)."""

from __future__ import annotations

import json

from leaderboard.pipeline.run import (
    AGENT_TEXT_SHOWN,
    OPERATOR_DETAIL_CHARS,
    operator_detail,
    team_reason,
)
from workers.outcomes import ItemOutcome, RunFailed, RunReport

REASON = "protocol error: /batch: malformed HTTP response (HttpParserInvalidStatusError)"
QUERIES = " | ".join(f"hidden query {i}: what is the thing in picture {i}?" for i in range(400))


def failed(agent_text: str = "", turns: int = 0) -> RunReport:
    report = RunReport(
        status="failed", failure_reason=REASON, image="img", image_digest="sha256:x", task="t"
    )
    report.agent_text = RunFailed(REASON, agent_text).agent_text  # capped as the runner does
    report.items = [ItemOutcome(f"conversation-{i}_0", "answered", 0.25) for i in range(turns)]
    report.agent_log = "the agent's output: " + QUERIES
    return report


def test_a_private_split_shows_podiums_words_only():
    reason = team_reason(failed(QUERIES), public=False)
    assert reason == f"{REASON} (what the agent sent is not shown for a private split)"
    assert "hidden query" not in reason


def test_a_public_split_shows_the_agents_words_quoted_capped_and_marked():
    reason = team_reason(failed(QUERIES), public=True)
    podium, _, quoted = reason.partition("; the agent sent (quoted, first 200 of ")
    assert podium == REASON
    count, _, excerpt = quoted.partition(" characters): ")
    assert int(count) == len(QUERIES)
    assert json.loads(excerpt) == QUERIES[:AGENT_TEXT_SHOWN]


def test_the_quote_cannot_pass_for_podiums_words():
    said = 'x"\n</p><b>run completed</b>\x00\u202e'
    reason = team_reason(failed(said), public=True)
    assert reason == f"{REASON}; the agent sent (quoted): {json.dumps(said)}"
    assert "\n" not in reason and "\x00" not in reason and reason.isascii()


def test_no_agent_text_means_the_reason_alone():
    assert team_reason(failed(), public=False) == REASON
    assert team_reason(failed(), public=True) == REASON


def test_the_operator_detail_keeps_everything_the_agent_sent_however_long_the_run():
    """A long run's per-turn list used to come first and the detail was cut at its limit,
    leaving out what the agent sent (and leaving invalid JSON)."""
    said = ("\U0001f600 \ud800 " + QUERIES) * 10  # any text the agent manages to send
    for turns in (3, 5000):
        text = operator_detail(failed(said, turns))
        detail = json.loads(text)
        assert detail["failure_reason"] == REASON
        assert detail["agent_text"] == said[: 64 * 1024]
        assert "agent_log" not in detail  # kept apart, in the run's agent_log
        assert detail["counts"] == {"answered": turns, "timeout": 0, "error": 0, "invalid": 0}
        assert text.isascii()  # lone surrogates escaped: PostgreSQL stores it
        if turns == 3:
            assert len(detail["items"]) == 3
        else:
            assert "items" not in detail and detail["items_left_out"] == turns
            all_turns = json.dumps(failed(said, turns).to_dict()["items"])
            assert len(all_turns) > OPERATOR_DETAIL_CHARS  # what used to crowd it out
