"""Visual-RAG retrieval metrics: Recall@k, NDCG@k, Hit@k and Hit Count@k of one query's ranking.

Rules (`score_ranking`):
- Binary relevance: an id is relevant iff it is one of the query's clues. `clues` must be
  non-empty and every clue must be a candidate (ValueError otherwise); repeated clues in `clues`
  count once.
- Recall@k = clues in the top k / number of clues. Hit@k = 1.0 if at least one clue is in the
  top k, else 0.0. Hit Count@k = clues in the top k.
- NDCG@k = DCG@k / ideal DCG@k, with DCG@k = sum over 1-based ranks i <= k of rel_i / log2(i + 1)
  and ideal DCG@k = sum over i = 1 .. min(k, number of clues) of 1 / log2(i + 1); so NDCG@1 is
  Hit@1, and a ranking with all of its top min(k, #clues) places on clues scores exactly 1.0.
- A ranking shorter than k is scored as it is (missing places count as non-clues); an empty
  ranking scores 0 everywhere.
- An id repeated in the ranking counts once, at its first place: later occurrences keep their
  places but count as non-clues, so repeating a clue never raises a metric. One warning per
  repeated id, naming it and its first rank.
- An id that is not a candidate counts as a non-clue at its place; one warning per such id.
- `ks` must be a non-empty sequence of positive integers (ValueError otherwise).
Warnings are prefixed with `where` (e.g. "query 17: ") and come in order of first appearance.

Cost: one pass over the first max(ks) places plus a set check of the whole ranking for warnings
(a per-id scan only when that check finds a repeated or unknown id).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import accumulate, islice

KS: tuple[int, ...] = (1, 5, 10, 20, 30)

# _DISCOUNT[i] = 1 / log2(i + 1) for rank i >= 1; _IDEAL[m] = sum of _DISCOUNT[1..m], in order.
_DISCOUNT: list[float] = [0.0]
_IDEAL: list[float] = [0.0]


def _grow(n: int) -> None:
    """Extend the discount and ideal-DCG tables to rank n."""
    for i in range(len(_DISCOUNT), n + 1):
        _DISCOUNT.append(1.0 / math.log2(i + 1))
        _IDEAL.append(_IDEAL[-1] + _DISCOUNT[i])


_grow(max(KS))


@dataclass(frozen=True)
class RankingScore:
    """The metrics of one ranking at each k, and the warnings about its ids."""

    recall: dict[int, float]  # k -> clues in the top k / all clues, in [0, 1]
    ndcg: dict[int, float]  # k -> NDCG@k in [0, 1]
    hit: dict[int, float]  # k -> 1.0 if at least one clue in the top k else 0.0
    hit_count: dict[int, int]  # k -> number of clues in the top k
    warnings: tuple[str, ...]  # repeated and unknown ids, each naming the id (and `where`)


def _as_set(ids: Collection[str], name: str) -> set[str] | frozenset[str]:
    if isinstance(ids, str):
        raise TypeError(f"{name} must be a collection of ids, not a string")
    return ids if isinstance(ids, set | frozenset) else set(ids)


def _check_ks(ks: Sequence[int]) -> None:
    if not ks:
        raise ValueError("ks must not be empty")
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"ks must be positive integers, got {k!r}")


def _warnings(
    ranking: Sequence[str], candidates: set[str] | frozenset[str], where: str
) -> tuple[str, ...]:
    """One warning per repeated id and per id that is not a candidate, in order of appearance."""
    if len(set(ranking)) == len(ranking) and candidates.issuperset(ranking):
        return ()
    first: dict[str, int] = {}
    found: list[str] = []
    repeated: set[str] = set()
    for rank, id_ in enumerate(ranking, start=1):
        if id_ not in first:
            first[id_] = rank
            if id_ not in candidates:
                found.append(
                    f"{where}ranking: id {id_!r} is not a candidate "
                    f"(scored as a non-clue, at rank {rank})"
                )
        elif id_ not in repeated:
            repeated.add(id_)
            found.append(
                f"{where}ranking: id {id_!r} repeated (counted once, at rank {first[id_]})"
            )
    return tuple(found)


def score_ranking(
    ranking: Sequence[str],
    clues: Collection[str],
    candidates: Collection[str],
    ks: Sequence[int] = KS,
    where: str = "",
) -> RankingScore:
    """Score one query's ranking (best first) against its clue ids at each k (module rules)."""
    if isinstance(ranking, str):
        raise TypeError("ranking must be a sequence of ids, not a string")
    clue_set = _as_set(clues, "clues")
    candidate_set = _as_set(candidates, "candidates")
    if not clue_set:
        raise ValueError(f"{where}no clue: a query needs at least one clue id")
    outside = [c for c in clue_set if c not in candidate_set]
    if outside:
        raise ValueError(f"{where}clue ids not among the candidates: {sorted(outside)!r}")
    _check_ks(ks)
    k_max = max(ks)
    n_clues = len(clue_set)
    _grow(k_max)

    # Ranks (1-based, increasing) of the first occurrence of each clue within the top k_max.
    ranks: list[int] = []
    counted: set[str] = set()
    for rank, id_ in enumerate(islice(ranking, k_max), start=1):
        if id_ in clue_set and id_ not in counted:
            counted.add(id_)
            ranks.append(rank)
    dcg = [0.0, *accumulate(_DISCOUNT[r] for r in ranks)]  # dcg[j]: gain of the first j clues

    recall: dict[int, float] = {}
    ndcg: dict[int, float] = {}
    hit: dict[int, float] = {}
    hit_count: dict[int, int] = {}
    for k in ks:
        count = bisect_right(ranks, k)
        hit_count[k] = count
        recall[k] = count / n_clues
        hit[k] = 1.0 if count else 0.0
        ndcg[k] = dcg[count] / _IDEAL[min(k, n_clues)]
    return RankingScore(recall, ndcg, hit, hit_count, _warnings(ranking, candidate_set, where))
