"""The CRAG-MM ``rules`` judge: deterministic, offline, an approximation of the paper's judge rules.

Rules, applied in order (the first that decides wins; the reason is kept in ``Judgment.raw``):

1. empty answer -> wrong;
2. equal after normalisation (unicode, case, accents, punctuation, articles, whitespace, number
   words as digits) -> correct;
3. refusal or uncertainty ("I don't know", "not sure", "maybe", "X or Y"...) -> wrong, unless
   the ground truth itself says so;
4. yes/no ground truth: the answer must give the same polarity and not both -> decides;
5. an answer listing three or more candidates when the ground truth is not a list -> wrong;
6. numbers: every ground-truth number not already in the question must be stated by the answer
   (tolerances and unit conversions in ``quantities``) -> decides;
7. a set of objects ("red, white and blue"): the answer must name every object and no extra
   one, in any order -> decides;
8. grounding: the key words of the ground truth (its content words that the question does not
   already contain) must appear in the answer, not negated: all of them when there are at most
   two, else at least ``KEY_RECALL`` of them; extra detail is allowed.

Known limits: paraphrases and synonyms are not recognised ("automobile" vs "car"); a sentence
ground truth whose numbers match is taken as correct whatever else the answer says; an answer
listing three or more distinct facts ("4 legs, 2 wings and 6 eyes") reads as hedging.
"""

from __future__ import annotations

import re
import unicodedata

from evaluator.benchmarks.crag_mm import quantities
from evaluator.benchmarks.crag_mm.quantities import find_quantities, words_to_digits

RULES_VERSION = "1"
KEY_RECALL = 0.75
ARTICLES = frozenset({"a", "an", "the"})
YES = frozenset({"yes", "yeah", "yep", "yup"})
NO = frozenset({"no", "nope"})
NEGATORS = frozenset({"not", "no", "never", "nt", "isnt", "arent", "wasnt", "doesnt", "dont"})
# fmt: off
REFUSALS = (
    "i dont know", "i do not know", "dont know", "do not know", "not sure", "unsure",
    "cannot determine", "cant determine", "cannot be determined", "cannot tell", "cant tell",
    "cannot identify", "cant identify", "unable to", "no information", "not enough information",
    "insufficient information", "cannot answer", "cant answer", "not possible to",
    "impossible to tell", "im sorry", "sorry",
)
HEDGES = (
    "maybe", "perhaps", "possibly", "probably", "might", "i guess", "either", "not certain",
    "uncertain", "could be", "hard to say", "difficult to say", "or",
)
STOPWORDS = frozenset((
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "am", "of", "in", "on",
    "at", "to", "for", "from", "by", "with", "and", "or", "it", "its", "this", "that", "these",
    "those", "there", "here", "what", "which", "who", "whom", "whose", "when", "where", "why",
    "how", "do", "does", "did", "has", "have", "had", "i", "you", "he", "she", "they", "we", "my",
    "your", "his", "her", "their", "our", "me", "him", "them", "us", "as", "than", "then", "so",
    "such", "can", "will", "would", "should", "could", "very", "also", "just", "about", "into",
    "over", "under", "up", "down", "out", "if", "but", "not", "no", "yes", "one", "some", "any",
    "all", "each", "both", "many", "much", "more", "most", "other", "same", "called", "known",
))
# fmt: on
_SEPARATOR_RE = re.compile(r"\s*(?:,|;|\band\b|&|\bplus\b)\s*")
_TOKEN_RE = re.compile(r"\d+(?:\.\d+)?|[^\W\d_]+")

# Everything that changes a verdict; its hash is the judge's "prompt" hash.
RULE_SET = {
    "version": RULES_VERSION,
    "key_recall": KEY_RECALL,
    "articles": sorted(ARTICLES),
    "yes": sorted(YES),
    "no": sorted(NO),
    "negators": sorted(NEGATORS),
    "refusals": REFUSALS,
    "hedges": HEDGES,
    "stopwords": sorted(STOPWORDS),
    "units": quantities.UNITS,
    "relative_tolerance": quantities.RELATIVE_TOLERANCE,
    "kelvin_tolerance": quantities.KELVIN_TOLERANCE,
}


def lower_text(text: str) -> str:
    """Case-folded, accent-free text with digits for number words and no apostrophes."""
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    text = re.sub(r"['’‘`´]", "", text)
    return words_to_digits(text)


def tokens(text: str) -> list[str]:
    """Words and numbers of lower-cased text, articles dropped, thousands separators removed."""
    found = _TOKEN_RE.findall(re.sub(r"(?<=\d),(?=\d{3})", "", text))
    return [t for t in found if t not in ARTICLES]


def stem(token: str) -> str:
    """Singular of a plural, roughly: "boxes" -> "box", "berries" -> "berry", "dogs" -> "dog"."""
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if token.endswith(("ches", "shes", "xes", "sses")):
        return token[:-2]
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def _phrase_found(phrases: tuple[str, ...], answer: list[str], truth: list[str]) -> str | None:
    for phrase in phrases:
        words = phrase.split()
        if _contains(answer, words) and not _contains(truth, words):
            return phrase
    return None


def _set_items(text: str) -> list[list[str]]:
    """The items of a list ("red, white and blue"), or [] when the text is not a short list."""
    parts = [p for p in _SEPARATOR_RE.split(text) if p.strip()]
    items = [[stem(t) for t in tokens(p)] for p in parts]
    items = [i for i in items if i]
    explicit = bool(re.search(r"\band\b|&|;|\bplus\b", text))
    if len(items) < 2 or (len(items) == 2 and not explicit) or any(len(i) > 4 for i in items):
        return []
    return items


def _grade_set(items: list[list[str]], answer: str) -> tuple[bool, str]:
    sentences = re.split(r"(?<=[.!?])\s+", answer)
    sentence = max(
        sentences, key=lambda s: sum(_contains([stem(t) for t in tokens(s)], i) for i in items)
    )
    stems = [stem(t) for t in tokens(sentence)]
    missing = [" ".join(i) for i in items if not _contains(stems, i)]
    if missing:
        return False, f"set: missing {missing}"
    for part in _SEPARATOR_RE.split(sentence):
        words = [stem(t) for t in tokens(part)]
        content = [w for w in words if w not in STOPWORDS]
        if content and len(content) <= 3 and not any(_contains(words, i) for i in items):
            return False, f"set: extra item {' '.join(content)!r}"
    return True, "set: same objects"


def _grade_key_words(query: list[str], truth: list[str], answer: list[str]) -> tuple[bool, str]:
    asked = {stem(t) for t in query}
    content = [stem(t) for t in truth if t not in STOPWORDS and not t[0].isdigit()]
    key = [t for t in dict.fromkeys(content) if t not in asked] or list(dict.fromkeys(content))
    if not key:
        return False, "ground truth has no key words the rules can check"
    stems = [stem(t) for t in answer]
    truth_negated = any(t in NEGATORS for t in truth)
    present = []
    for word in key:
        if word not in stems:
            continue
        at = stems.index(word)
        if not truth_negated and any(t in NEGATORS for t in stems[max(0, at - 3) : at]):
            return False, f"key word {word!r} is negated"
        present.append(word)
    needed = len(key) if len(key) <= 2 else KEY_RECALL * len(key)
    if len(present) >= needed:
        return True, f"key words present: {present}"
    return False, f"key words missing: {[w for w in key if w not in present]}"


def grade(query: str, ground_truth: str, answer: str) -> tuple[bool, str]:
    """Whether ``answer`` is correct for ``ground_truth``, and the rule that decided."""
    q_text, t_text, a_text = lower_text(query), lower_text(ground_truth), lower_text(answer)
    q_tokens, t_tokens, a_tokens = tokens(q_text), tokens(t_text), tokens(a_text)
    if not a_tokens:
        return False, "empty answer"
    if a_tokens == t_tokens:
        return True, "equal after normalisation"
    if not t_tokens:
        return False, "ground truth has no words the rules can check"
    refusal = _phrase_found(REFUSALS, a_tokens, t_tokens) or _phrase_found(
        HEDGES, a_tokens, t_tokens
    )
    if refusal:
        return False, f"refusal or uncertainty: {refusal!r}"
    if t_tokens[0] in YES | NO:
        says_yes, says_no = bool(YES & set(a_tokens)), bool(NO & set(a_tokens))
        if says_yes and says_no:
            return False, "contradiction: both yes and no"
        if says_yes or says_no:
            same = says_yes == (t_tokens[0] in YES)
            return same, "yes/no: same polarity" if same else "yes/no: opposite polarity"
    items = _set_items(t_text)
    if not items and len(_set_items(a_text)) >= 3:
        return False, "hedge: the answer lists several candidates"
    asked = find_quantities(q_text)
    wanted = [q for q in find_quantities(t_text) if not any(q.matches(a) for a in asked)]
    if wanted:
        stated = find_quantities(a_text)
        missing = [q.text for q in wanted if not any(q.matches(a) for a in stated)]
        if missing:
            return False, f"numbers: {missing} not stated"
        return True, f"numbers: {[q.text for q in wanted]} stated"
    if items:
        return _grade_set(items, a_text)
    return _grade_key_words(q_tokens, t_tokens, a_tokens)
