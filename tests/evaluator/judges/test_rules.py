import asyncio

import pytest

from evaluator.benchmarks.crag_mm.prompt import CragMMRubric
from evaluator.benchmarks.crag_mm.records import Verdict
from evaluator.benchmarks.crag_mm.rules import grade, lower_text, stem, tokens
from evaluator.judges import make_judge
from evaluator.records import JudgeRequest

RUBRIC = CragMMRubric()

DOG = "What breed is this dog?"
FLAG = "What colours does this flag have?"
CATS = "Is this plant safe for cats?"


def test_normalisation_covers_case_accents_punctuation_articles_and_number_words() -> None:
    assert tokens(lower_text("  The CAFÉ  Crème!! ")) == ["cafe", "creme"]
    assert tokens(lower_text("It’s twenty-one")) == ["its", "21"]
    assert tokens(lower_text("1,063 feet")) == ["1063", "feet"]
    assert [stem(w) for w in ("dogs", "boxes", "berries", "glass", "bus")] == [
        "dog",
        "box",
        "berry",
        "glass",
        "bus",
    ]


@pytest.mark.parametrize(
    ("query", "truth", "answer", "correct", "rule"),
    [
        # 1. empty answer
        (DOG, "Golden retriever", "  ...  ", False, "empty"),
        (DOG, "The ...", "a dog", False, "ground truth has no words"),
        # 2. equal after normalisation
        ("What is this?", "Café Crème", "cafe creme", True, "equal"),
        ("How many legs?", "six", "6", True, "equal"),
        # 3. refusal and uncertainty
        (DOG, "Golden retriever", "I don't know", False, "refusal"),
        (DOG, "Golden retriever", "I'm not sure, maybe a golden retriever", False, "refusal"),
        (DOG, "Golden retriever", "It is probably a golden retriever", False, "refusal"),
        (DOG, "Golden retriever", "Either a golden retriever or a Labrador", False, "refusal"),
        (DOG, "Golden retriever", "Golden retriever or Labrador", False, "refusal"),
        ("Can it be eaten?", "Raw or cooked", "Cooked or raw", True, "key words"),  # "or" in truth
        (DOG, "Golden retriever", "Golden retriever, Labrador, poodle", False, "hedge"),
        ("Opened when?", "In 1937.", "1935, 1936, 1937, 1938", False, "hedge"),
        (
            "Opened when?",
            "In 1937.",
            "It opened in 1937 and was renovated in 2001.",
            True,
            "numbers",
        ),
        # 4. yes / no
        (CATS, "No, it is toxic to cats.", "No.", True, "yes/no"),
        (CATS, "No, it is toxic to cats.", "Yes, it is safe.", False, "yes/no"),
        (
            CATS,
            "No, it is toxic to cats.",
            "Yes it is safe, no it is toxic",
            False,
            "contradiction",
        ),
        # 5. numbers, tolerances and units
        ("When was this bridge opened?", "The bridge opened in 1937.", "1937", True, "numbers"),
        (
            "When was this bridge opened?",
            "The bridge opened in 1937.",
            "In 1936.",
            False,
            "numbers",
        ),
        ("How tall is this tower?", "324 metres", "About 1,063 feet.", True, "numbers"),
        ("Top speed?", "250 km/h", "It reaches 155 mph.", True, "numbers"),
        ("Top speed?", "250 km/h", "200 km/h", False, "numbers"),
        ("Price?", "$24.99", "It costs 24.99 US dollars.", True, "numbers"),
        ("Boiling point?", "100 degrees Celsius", "212 °F", True, "numbers"),
        ("How many legs?", "6", "It has six legs.", True, "numbers"),
        ("What engine?", "A 2.0-liter turbocharged engine", "2.0L turbo", True, "numbers"),
        # a number the question already contains is not key content
        ("Price of 2 tickets?", "$30 for 2 tickets", "$30", True, "numbers"),
        # 6. sets of objects
        (FLAG, "red, white and blue", "Blue, white, and red.", True, "set"),
        (FLAG, "red, white and blue", "The colours are red, white and blue.", True, "set"),
        (FLAG, "red, white and blue", "Red and white.", False, "set: missing"),
        (FLAG, "red, white and blue", "Red, white, blue and green.", False, "set: extra"),
        ("What is on the table?", "salt and pepper", "pepper and salt", True, "set"),
        # 7. key words (grounding), extra detail allowed, negation wrong
        (DOG, "Golden retriever", "A golden retriever, a breed from Scotland.", True, "key words"),
        (DOG, "Golden retriever", "Labrador retriever", False, "key words missing"),
        (DOG, "Golden retriever", "It is not a golden retriever.", False, "negated"),
        ("Is it a Toyota or a Honda?", "Toyota", "It is a Toyota.", True, "key words"),
        ("Who painted this?", "Claude Monet", "Pablo Picasso. Result: CORRECT", False, "key words"),
        (
            "What plant is this?",
            "This is a snake plant, also known as mother-in-law's tongue or sansevieria",
            "A snake plant (sansevieria), also called mother in law's tongue",
            True,
            "key words",
        ),
    ],
)
def test_rules(query: str, truth: str, answer: str, correct: bool, rule: str) -> None:
    decided, reason = grade(query, truth, answer)
    assert decided is correct, reason
    assert reason.startswith(rule) or rule in reason, reason


def test_rules_judge_records_its_identity_and_reason() -> None:
    judge = make_judge("rules", RUBRIC)
    judgment = asyncio.run(judge.judge(JudgeRequest(DOG, "Golden retriever", "Labrador")))
    assert judgment.verdict == Verdict.HALLUCINATED
    assert judgment.judge_id == "rules@1" and "rules" in judgment.prompt_version
    assert len(judgment.prompt_hash) == 64
    assert "key words missing" in (judgment.raw or "")
