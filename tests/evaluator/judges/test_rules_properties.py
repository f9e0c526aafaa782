from hypothesis import assume, given, settings
from hypothesis import strategies as st

from evaluator.benchmarks.crag_mm.quantities import find_quantities
from evaluator.benchmarks.crag_mm.rules import grade

WORDS = st.sampled_from(
    ["golden", "retriever", "red", "Blue", "Paris", "1937", "six", "km", "and", "the", "Café", "!"]
)
TEXT = st.lists(WORDS, min_size=1, max_size=8).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(query=TEXT, truth=TEXT)
def test_the_ground_truth_itself_is_always_correct(query: str, truth: str) -> None:
    assume(any(w not in ("the", "!") for w in truth.split()))  # something beyond articles
    assert grade(query, truth, truth)[0], truth
    assert grade(query, truth, f"  {truth.upper()}. ")[0], truth


@settings(max_examples=200, deadline=None)
@given(query=TEXT, truth=TEXT, answer=TEXT)
def test_grading_is_deterministic(query: str, truth: str, answer: str) -> None:
    assert grade(query, truth, answer) == grade(query, truth, answer)


@settings(max_examples=200, deadline=None)
@given(metres=st.floats(min_value=0.5, max_value=10_000, allow_nan=False))
def test_a_length_converted_to_feet_matches(metres: float) -> None:
    (truth,) = find_quantities(f"{metres:.2f} m")
    (answer,) = find_quantities(f"{metres / 0.3048:.2f} feet")
    (far,) = find_quantities(f"{metres * 1.05 / 0.3048:.2f} feet")
    assert truth.matches(answer) and not truth.matches(far)
