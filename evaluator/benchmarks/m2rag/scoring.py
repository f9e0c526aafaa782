"""M2RAG's per-answer arithmetic: judge scores, the two ragas definitions, image recall.

- A 0-10 judge score, official parsing: the LAST integer in the reply, clamped to 0..10 ("8/10"
  reads 10; a reply with no digit reads 0). Strict parsing (Podium's option): the reply's last
  line must be the integer alone, else the reply is unreadable (the answer stays unjudged).
  Either way the metric is the score / 10.
- Context precision (ragas, no reference): per-context 0/1 verdicts v_1..v_K, in order (the
  page texts, then the captions of the placed images); the average precision
  sum_k (precision@k x v_k) / (sum_k v_k + 1e-10), so 0 when no context is useful.
- Faithfulness (ragas): the share of the answer's statements the contexts support; no
  statement gives NaN, which the official clamp reads as 1.0.
- Image recall, counted by image (the file; the official code's cached URL), as the official
  code counts: |distinct positive images placed| / |positive listings| (a listing: an image's
  place among the query's images; positive: stored score >= 8), 1.0 when there is none. An
  image listed twice as a positive counts twice below and once above the line, so placing it
  (once or at both places) gives 1/2; placing a listing scored below 8 of an image another
  listing holds as positive counts, as the same image.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence

_INTEGER = re.compile(r"\d+")
_ALONE = re.compile(r"\s*(\d+)\s*")
EPSILON = 1e-10  # ragas' guard in the average precision's denominator


def official_score(reply: str) -> int:
    """The last integer in ``reply``, clamped to 0..10; 0 when there is none."""
    found = _INTEGER.findall(reply)
    return min(10, max(0, int(found[-1]))) if found else 0


def strict_score(reply: str) -> int | None:
    """The integer alone on the reply's last non-empty line, if it is 0..10; else None."""
    lines = [line for line in reply.strip().splitlines() if line.strip()]
    match = _ALONE.fullmatch(lines[-1]) if lines else None
    if match is None or int(match.group(1)) > 10:
        return None
    return int(match.group(1))


def average_precision(verdicts: Sequence[int]) -> float:
    """ragas' context precision of ordered 0/1 verdicts."""
    useful = 0
    total = 0.0
    for k, verdict in enumerate(verdicts, start=1):
        useful += verdict
        total += (useful / k) * verdict
    return total / (useful + EPSILON)


def faithfulness(verdicts: Sequence[int]) -> float:
    """The share of supported statements; NaN when there is no statement."""
    return sum(verdicts) / len(verdicts) if verdicts else math.nan


def official_clamp(value: float) -> float:
    """The official code's clamp: NaN reads 1.0; else clamped to [0, 1]."""
    return 1.0 if math.isnan(value) else min(1.0, max(0.0, value))


def image_recall(placed: Collection[str], positives: Sequence[str]) -> float:
    """|distinct ``positives`` among ``placed``| / |``positives``| (one entry per positive
    listing, repeats kept); 1.0 when there are none."""
    return len(set(positives) & set(placed)) / len(positives) if positives else 1.0
