"""Visual-RAG ROUGE-1 recall: the arithmetic of the `rouge` package 1.0.1, re-implemented.

What the package computes for `Rouge(metrics=["rouge-1"]).get_scores(hyp, ref)[0]["rouge-1"]["r"]`:
- A text is split into pieces on every "." (`text.split(".")`); empty pieces are dropped; each
  remaining piece is re-joined from its `str.split()` words (any Unicode whitespace) with one
  space, then every piece is split on " ". So tokens are whitespace-separated, case-sensitive,
  and keep their punctuation ("red," and "Red" and "red" are three tokens) except "." (a
  sentence break, never part of a token: "3.5" is the two tokens "3" and "5").
- A piece made only of whitespace (" " in "red. ", "a. . b", "red.\\n") becomes the empty token
  "", which is then a unigram like any other: the reference "red. " has the two unigrams
  {"red", ""}, so the prediction "red" scores 0.5 against it and "red. " scores 1.0.
- The unigrams of a text form a set: a repeated word counts once, on both sides.
- recall = |prediction unigrams & reference unigrams| / |reference unigrams|.
- The package raises ValueError when a text has no piece at all ("", "...").

Podium rules on top (`rouge1_recall`):
- A text with no word, i.e. no non-empty token (the package refuses "" and "..."; it scores " "
  or ". " as the lone token ""), is unusable: as the prediction it scores 0.0, as a reference it
  is skipped. So a blank prediction never earns credit from a reference's stray ". ", and a blank
  reference never gives credit to a prediction that ends in ". ".
- The score is the maximum over the usable references; 0.0 if there is none (or no reference).
Wherever the prediction and the reference both have a word, `rouge1_recall_one` equals the
package's number exactly (same counts, same division).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["rouge1_recall", "rouge1_recall_one", "unigrams"]


def unigrams(text: str) -> frozenset[str] | None:
    """The package's unigram set of `text`, or None when the text has no word (Podium: unusable).

    None covers both what the package refuses (no non-empty piece between dots) and texts whose
    only token is the empty one (whitespace and dots only).
    """
    tokens: set[str] = set()
    has_word = False
    for piece in text.split("."):
        if not piece:
            continue
        words = piece.split()
        if words:
            has_word = True
            tokens.update(words)
        else:
            tokens.add("")  # a whitespace-only piece: the package's empty token
    return frozenset(tokens) if has_word else None


def _recall(prediction: frozenset[str], reference: frozenset[str]) -> float:
    return len(prediction & reference) / len(reference)


def rouge1_recall_one(prediction: str, reference: str) -> float | None:
    """ROUGE-1 recall of `prediction` against one reference, or None if the reference is unusable.

    An unusable prediction (no word) scores 0.0 against a usable reference.
    """
    ref = unigrams(reference)
    if ref is None:
        return None
    pred = unigrams(prediction)
    return 0.0 if pred is None else _recall(pred, ref)


def rouge1_recall(prediction: str, references: Sequence[str]) -> float:
    """ROUGE-1 recall of `prediction`: the maximum over the usable references (module rules)."""
    if isinstance(references, str):
        raise TypeError("references must be a sequence of strings, not a string")
    pred = unigrams(prediction)
    if pred is None:
        return 0.0
    best = 0.0
    for reference in references:
        ref = unigrams(reference)
        if ref is not None:
            best = max(best, _recall(pred, ref))
    return best
