"""Podium's M2RAG judge prompts: one system prompt per judged quantity.

The five 0-10 prompts ask for the score alone on the last line, so the official parser (the
last integer in the reply) never misreads a well-behaved judge. The three list prompts ask for
one JSON object. Untrusted text (the answer, the pages) is quoted (``rubric.quote``).
"""

from __future__ import annotations

SCORE_TAIL = "Reply with a short reason, then the score alone, an integer 0-10, on the last line."
SCORE_PROMPTS: dict[str, str] = {
    "fluency": "You rate the fluency of an answer: grammatical, coherent, well organised "
    "text that reads naturally. " + SCORE_TAIL,
    "relevance": "You rate how relevant an answer is to the user's query: it addresses what "
    "was asked, without digressions. " + SCORE_TAIL,
    "coherence": "You see one image an answer placed, with the answer's text above and below "
    "it. Rate how coherent the image is with that text: it fits the place it is put in. "
    + SCORE_TAIL,
    "helpfulness": "You see one image an answer placed, with the answer's text above and below "
    "it. Rate how much the image helps a reader understand the answer to the query. " + SCORE_TAIL,
    "reference": "You see one image an answer placed, with the answer's text above and below "
    "it. Rate how well the text refers to the image: it introduces or explains what the image "
    "shows. " + SCORE_TAIL,
}
LIST_PROMPTS: dict[str, str] = {
    "statements": "Break the answer into short standalone factual statements, each "
    'understandable alone. Reply with one JSON object: {"statements": ["...", ...]}; an empty '
    "list when the answer states nothing.",
    "verdicts": "For each numbered statement, decide whether the contexts support it (1) or "
    'not (0). Reply with one JSON object: {"verdicts": [1, 0, ...]}, one per statement, in '
    "order.",
    "context_precision": "For each numbered context, decide whether it was useful in arriving "
    'at the answer to the query (1) or not (0). Reply with one JSON object: {"verdicts": '
    "[1, 0, ...]}, one per context, in order.",
}
IMAGE_PROMPTS = ("coherence", "helpfulness", "reference")
ANSWER_PROMPTS = ("fluency", "relevance", "context_precision", "statements")
