"""MRAG-Suite's rule metrics: the short answer's exact match, the long answer's ROUGE-L.

- ``exact_match``: 1.0 when the short answer equals the reference after SQuAD's normalisation
  (lower case, ASCII punctuation removed, the articles "a", "an", "the" removed, whitespace
  collapsed), else 0.0.
- ``rouge_l``: ROUGE-L F-measure of the long answer against the reference explanation, by the
  ``rouge-score`` package (pinned in requirements.txt) with stemming off; 0.0 when either side
  has no token.
"""

from __future__ import annotations

import functools
import re
import string
from typing import Any

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalise(text: str) -> str:
    """SQuAD's answer normalisation."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(answer: str, reference: str) -> float:
    return 1.0 if normalise(answer) == normalise(reference) else 0.0


def rouge_l(answer: str, reference: str) -> float:
    """ROUGE-L F-measure (``rouge-score``, no stemming)."""
    return float(_scorer().score(reference, answer)["rougeL"].fmeasure)


@functools.cache
def _scorer() -> Any:
    """The scorer, made at the first long answer scored: ``rouge-score`` imports nltk (1.7 s),
    which neither the CLI's help nor the server's pages need."""
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
