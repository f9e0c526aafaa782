"""Building graded runs for the metrics, statistics and comparison tests.

A conversation is written as a string of verdict codes, one per turn:
``C`` judge-correct, ``E`` exact match (correct), ``H`` hallucinated, ``M`` missing,
``X`` an exact match that also says "i don't know" (Podium: missing; the kits: correct *and*
missing), ``U`` unjudged.
"""

from __future__ import annotations

import json
from pathlib import Path

from evaluator.benchmarks.crag_mm.records import GradedTurn, Verdict

PARITY_DIR = Path(__file__).parent / "data" / "parity"

_CODES = {
    "C": (False, False, Verdict.CORRECT),
    "E": (True, False, Verdict.CORRECT),
    "H": (False, False, Verdict.HALLUCINATED),
    "M": (False, True, Verdict.MISSING),
    "X": (True, True, Verdict.MISSING),
    "U": (False, False, Verdict.UNJUDGED),
}


def graded_turn(
    session_id: str,
    turn_idx: int,
    code: str,
    is_ego: bool = False,
    labels: dict[str, str] | None = None,
) -> GradedTurn:
    exact, miss, verdict = _CODES[code]
    return GradedTurn(
        session_id=session_id,
        interaction_id=f"{session_id}-{turn_idx}",
        turn_idx=turn_idx,
        is_ego=is_ego,
        labels=dict(labels or {}),
        query=f"question {turn_idx}",
        ground_truth="answer",
        agent_response="answer" if exact else "something",
        is_exact_match=exact,
        is_miss=miss,
        verdict=verdict,
        judge_id="rules@1",
        prompt_version="1",
    )


def conversation(
    session_id: str, codes: str, is_ego: bool = False, labels: list[dict[str, str]] | None = None
) -> list[GradedTurn]:
    """One conversation; ``labels[i]`` (when given) labels turn ``i``."""
    return [
        graded_turn(session_id, i, code, is_ego, labels[i] if labels else None)
        for i, code in enumerate(codes)
    ]


def run(*codes: str, ego: str = "") -> list[GradedTurn]:
    """Conversations ``c0``, ``c1``... from code strings; ``ego`` marks which are egocentric
    (``"10"``: the first is, the second is not)."""
    turns: list[GradedTurn] = []
    for n, codes_of_one in enumerate(codes):
        turns += conversation(f"c{n}", codes_of_one, is_ego=ego[n : n + 1] == "1")
    return turns


def load_parity_fixture(name: str) -> list[GradedTurn]:
    """A parity fixture: one graded turn per line, the flags the official kits read."""
    turns = []
    for line in (PARITY_DIR / f"{name}.jsonl").read_text().splitlines():
        row = json.loads(line)
        turns.append(
            GradedTurn(
                session_id=row["session_id"],
                interaction_id=row["interaction_id"],
                turn_idx=row["turn_idx"],
                is_ego=row["is_ego"],
                labels=row["labels"],
                query="",
                ground_truth="",
                agent_response="",
                is_exact_match=row["is_exact_match"],
                is_miss=row["is_miss"],
                verdict=Verdict(row["verdict"]),
                judge_id="fixture",
                prompt_version="1",
            )
        )
    return turns
