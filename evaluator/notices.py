"""The notices every benchmark's summary carries (a non-LLM judge, an incomplete run): the
benchmarks' summaries import them, so this module imports no benchmark."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any


def judge_notices(
    document: Mapping[str, Any], judge_errors: Iterable[str | None], units: str, withheld: str
) -> list[str]:
    """What a reader must not miss, for every benchmark: a non-LLM judge (rules, or a
    transcript written by hand), an incomplete run (with its judge errors, most common first;
    ``units`` names what went unjudged, ``withheld`` which figures are withheld)."""
    found = []
    judge = document["judge"]
    if judge["kind"] == "rules":
        found.append(
            f"NOTICE: verdicts by the '{judge['id']}' judge (deterministic rules), NOT an LLM "
            "judge: do not compare these numbers with LLM-judged results."
        )
    if judge["kind"] == "written":
        found.append(
            "NOTICE: verdicts read from a transcript whose lines name no judge (written by "
            "hand): no judge model or prompt stands behind these numbers."
        )
    if not document["complete"]:
        reasons = Counter(error for error in judge_errors if error)
        detail = "; ".join(f"{count} x {reason}" for reason, count in reasons.most_common(3))
        found.append(
            f"INCOMPLETE: {document['unjudged']} {units} unjudged (the judge failed"
            + (f": {detail}" if detail else "")
            + f"); {withheld} are withheld (exit code 3). Re-run the same command "
            "to judge them (verdicts already made are cached)."
        )
    return found
