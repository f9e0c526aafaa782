import pytest

from evaluator.benchmarks.crag_mm.quantities import find_quantities, words_to_digits


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("three", "3"),
        ("twenty-one dogs", "21 dogs"),
        ("twenty one", "21"),
        ("one hundred and five", "105"),
        ("three thousand four hundred", "3400"),
        ("two million", "2000000"),
        ("one two three", "1 2 3"),
        ("thousand", "thousand"),  # a scale word alone is not a number
        ("someone often", "someone often"),  # only whole words
    ],
)
def test_number_words_become_digits(text: str, expected: str) -> None:
    assert words_to_digits(text) == expected


def _one(text: str):
    found = find_quantities(text)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("truth", "answer"),
    [
        ("324 m", "1,063 feet"),
        ("5 feet", "1.52 m"),
        ("250 km/h", "155 mph"),
        ("100 km/h", "62 mph"),
        ("20 °c", "68°f"),
        ("37 celsius", "98.6 fahrenheit"),
        ("100 degrees celsius", "212 f"),
        ("2 liters", "0.53 gallons"),
        ("500 ml", "0.5 l"),
        ("5 pounds", "2.27 kg"),
        ("$20", "20 dollars"),
        ("$24.99", "24.99 us dollars"),
        ("€5", "5 euros"),
        ("£5", "5 pounds"),  # "pound" reads as a mass and as a currency
        ("25%", "25 percent"),
        ("2 hours", "120 minutes"),
        ("2.5 million", "2,510,000"),  # within 1 %
        ("2.0-liter", "2.0l"),
        ("12", "12 cm"),  # a bare number compares as written
    ],
)
def test_quantities_match_across_units(truth: str, answer: str) -> None:
    assert _one(truth).matches(_one(answer))


@pytest.mark.parametrize(
    ("truth", "answer"),
    [
        ("1998", "1999"),  # bare integers (years, counts) must be equal
        ("3", "3.02"),
        ("250 km/h", "200 km/h"),
        ("20 °c", "20 °f"),
        ("$20", "20 euros"),  # currencies are never converted
        ("5 kg", "5 l"),  # different dimensions
        ("2.5 million", "2,600,000"),  # 4 % off
        ("20 °c", "21 °c"),  # temperatures within 0.5 K
    ],
)
def test_quantities_that_differ(truth: str, answer: str) -> None:
    assert not _one(truth).matches(_one(answer))


@pytest.mark.parametrize("text", ["i30", "2000-2005", "model x5"])
def test_numbers_inside_names_and_ranges(text: str) -> None:
    values = [q.value for q in find_quantities(text)]
    assert values == {"i30": [], "2000-2005": [2000.0, 2005.0], "model x5": []}[text]


def test_negative_and_scaled_numbers() -> None:
    assert _one("-5°c").value == -5.0
    assert _one("1.2 billion").value == 1.2e9
    assert not _one("1,200").readings and _one("1,200").exact
