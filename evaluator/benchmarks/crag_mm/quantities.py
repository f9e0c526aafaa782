"""Numbers in answers: number words, scale words, units and their conversions.

A ground-truth number must match almost exactly:

- a bare integer (a count, a year, a house number) must be equal;
- any other value (decimals, scale words such as "2.5 million", a unit) may differ by
  ``RELATIVE_TOLERANCE`` (1 %) after conversion to the dimension's base unit; temperatures
  by ``KELVIN_TOLERANCE`` (0.5 K), since a relative tolerance on kelvins would be far too loose;
- a number written without a unit on one side is compared as written with the other's number.

Currencies are never converted into one another (no exchange rates); "$20", "20 dollars"
and "USD 20" are the same. Ambiguous unit words carry every reading ("pound" is a mass and a
currency, "oz" a mass and a volume, a bare "degrees" Celsius or Fahrenheit) and match if any
reading does.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

RELATIVE_TOLERANCE = 0.01
KELVIN_TOLERANCE = 0.5

# A reading of a unit: (dimension, factor, offset) with value_in_base = value * factor + offset.
Reading = tuple[str, float, float]

_C, _F = ("temperature", 1.0, 273.15), ("temperature", 5 / 9, 273.15 - 32 * 5 / 9)


def _readings(dimension: str, factor: float, *aliases: str) -> dict[str, list[Reading]]:
    return {alias: [(dimension, factor, 0.0)] for alias in aliases}


UNITS: dict[str, list[Reading]] = {
    **_readings("length", 0.001, "mm", "millimeter", "millimeters", "millimetre", "millimetres"),
    **_readings("length", 0.01, "cm", "centimeter", "centimeters", "centimetre", "centimetres"),
    **_readings("length", 1.0, "m", "meter", "meters", "metre", "metres"),
    **_readings("length", 1000.0, "km", "kilometer", "kilometers", "kilometre", "kilometres"),
    **_readings("length", 0.0254, "inch", "inches", "″"),
    **_readings("length", 0.3048, "ft", "foot", "feet", "′"),
    **_readings("length", 0.9144, "yd", "yard", "yards"),
    **_readings("length", 1609.344, "mi", "mile", "miles"),
    **_readings("mass", 1e-6, "mg", "milligram", "milligrams"),
    **_readings("mass", 0.001, "g", "gram", "grams", "gr"),
    **_readings("mass", 1.0, "kg", "kilogram", "kilograms", "kilo", "kilos"),
    **_readings("mass", 1000.0, "tonne", "tonnes", "metric ton", "metric tons"),
    **_readings("mass", 0.45359237, "lb", "lbs"),
    **_readings("mass", 0.028349523125, "ounce", "ounces"),
    **_readings("volume", 0.001, "ml", "milliliter", "milliliters", "millilitre", "millilitres"),
    **_readings("volume", 0.001, "cc", "cubic centimeter", "cubic centimeters"),
    **_readings("volume", 1.0, "l", "liter", "liters", "litre", "litres"),
    **_readings("volume", 3.785411784, "gal", "gallon", "gallons"),
    **_readings("volume", 0.946352946, "qt", "quart", "quarts"),
    **_readings("volume", 0.2365882365, "cup", "cups"),
    **_readings("volume", 0.0295735295625, "fl oz", "fluid ounce", "fluid ounces"),
    **_readings(
        "speed", 1 / 3.6, "km/h", "kmh", "kph", "kilometers per hour", "kilometres per hour"
    ),
    **_readings("speed", 0.44704, "mph", "miles per hour"),
    **_readings("speed", 1.0, "m/s", "meters per second", "metres per second"),
    **_readings("speed", 0.514444, "knot", "knots", "kn"),
    **_readings("time", 1.0, "sec", "secs", "second", "seconds"),
    **_readings("time", 60.0, "min", "mins", "minute", "minutes"),
    **_readings("time", 3600.0, "h", "hr", "hrs", "hour", "hours"),
    **_readings("time", 86400.0, "day", "days"),
    **_readings("time", 604800.0, "week", "weeks"),
    **_readings("percent", 1.0, "%", "percent", "per cent", "pct"),
    **_readings("currency:usd", 1.0, "usd", "dollar", "dollars", "us dollars", "bucks"),
    **_readings("currency:usd", 0.01, "cent", "cents"),
    **_readings("currency:eur", 1.0, "eur", "euro", "euros"),
    **_readings("currency:gbp", 1.0, "gbp", "sterling", "pounds sterling"),
    **_readings("currency:jpy", 1.0, "jpy", "yen"),
    **_readings("currency:inr", 1.0, "inr", "rupee", "rupees"),
    **{a: [_C] for a in ("°c", "° c", "ºc", "c", "celsius", "degrees celsius", "degree celsius")},
    **{a: [_F] for a in ("°f", "° f", "ºf", "f", "fahrenheit", "degrees fahrenheit")},
    **{a: [_C, _F] for a in ("°", "degrees", "degree")},
    **_readings("temperature", 1.0, "kelvin", "kelvins"),
    "pound": [("mass", 0.45359237, 0.0), ("currency:gbp", 1.0, 0.0)],
    "pounds": [("mass", 0.45359237, 0.0), ("currency:gbp", 1.0, 0.0)],
    "oz": [("mass", 0.028349523125, 0.0), ("volume", 0.0295735295625, 0.0)],
    "ton": [("mass", 907.18474, 0.0), ("mass", 1000.0, 0.0)],
    "tons": [("mass", 907.18474, 0.0), ("mass", 1000.0, 0.0)],
    "pint": [("volume", 0.473176473, 0.0), ("volume", 0.56826125, 0.0)],
    "pints": [("volume", 0.473176473, 0.0), ("volume", 0.56826125, 0.0)],
}

# fmt: off
# Currency written before the number.
CURRENCY_PREFIXES: dict[str, str] = {
    "us$": "usd", "$": "usd", "usd": "usd", "€": "eur", "eur": "eur", "£": "gbp", "gbp": "gbp",
    "¥": "jpy", "jpy": "jpy", "₹": "inr", "inr": "inr",
}
SCALES: dict[str, float] = {
    "thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9,
    "trillion": 1e12,
}
NUMBER_WORDS: dict[str, int] = {w: i for i, w in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen",
))}
TENS_WORDS: dict[str, int] = {w: 10 * i for i, w in enumerate((
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"), 2)}
# fmt: on
_BIG_WORDS = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}


def _alternation(words: object) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))  # type: ignore[call-overload]


_QUANTITY_RE = re.compile(
    rf"(?:(?<!\w)(?P<currency>{_alternation(CURRENCY_PREFIXES)})\s?)?"
    r"(?<![\w.,])(?P<sign>-)?(?P<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    rf"(?:\s?(?P<scale>{_alternation(SCALES)})(?![a-z]))?"
    rf"(?:\s?-?\s?(?P<unit>{_alternation(UNITS)})(?![a-z]))?"
)
_WORD_RUN_RE = re.compile(
    rf"\b(?:{_alternation([*NUMBER_WORDS, *TENS_WORDS, *_BIG_WORDS])})"
    rf"(?:(?:[\s-]+|\s+and\s+)(?:{_alternation([*NUMBER_WORDS, *TENS_WORDS, *_BIG_WORDS])}))*\b"
)


def _parse_number_words(words: list[str]) -> list[int]:
    """Values of a run of number words; "twenty one" is 21, "one two" is 1 and 2."""
    values: list[int] = []
    total, current, last = 0, 0, ""
    for word in words:
        small, tens, big = NUMBER_WORDS.get(word), TENS_WORDS.get(word), _BIG_WORDS.get(word)
        continues = (
            (small is not None and (last in ("", "big") or (last == "tens" and small < 10)))
            or (tens is not None and last in ("", "big"))
            or (big is not None and last in ("small", "tens"))
        )
        if not continues and last:
            values.append(total + current)
            total, current, last = 0, 0, ""
        if small is not None:
            current += small
            last = "small"
        elif tens is not None:
            current += tens
            last = "tens"
        elif big == 100:
            current = max(current, 1) * 100
            last = "big"
        elif big is not None:
            total += max(current, 1) * big
            current, last = 0, "big"
    if last:
        values.append(total + current)
    return values


def words_to_digits(text: str) -> str:
    """Replace number words with digits ("twenty-one" -> "21") in lower-case text."""

    def replace(match: re.Match[str]) -> str:
        words = [w for w in re.split(r"[\s-]+", match.group(0)) if w != "and"]
        if all(w in _BIG_WORDS for w in words):  # "thousand" alone stays a word
            return match.group(0)
        return " ".join(str(v) for v in _parse_number_words(words))

    return _WORD_RUN_RE.sub(replace, text)


@dataclass(frozen=True)
class Quantity:
    value: float  # as written, scale words applied
    readings: tuple[Reading, ...]  # empty for a bare number
    exact: bool  # a bare integer: must be equal
    text: str

    def matches(self, other: Quantity) -> bool:
        """Whether ``other`` (from an answer) states this (ground-truth) quantity."""
        if not self.readings or not other.readings:
            if self.exact:
                return other.value == self.value
            return math.isclose(other.value, self.value, rel_tol=RELATIVE_TOLERANCE)
        for dimension, factor, offset in self.readings:
            for other_dimension, other_factor, other_offset in other.readings:
                if dimension != other_dimension:
                    continue
                mine = self.value * factor + offset
                theirs = other.value * other_factor + other_offset
                if dimension == "temperature":
                    if abs(mine - theirs) <= KELVIN_TOLERANCE:
                        return True
                elif math.isclose(mine, theirs, rel_tol=RELATIVE_TOLERANCE):
                    return True
        return False


def find_quantities(text: str) -> list[Quantity]:
    """The numbers in lower-case ``text`` with their units (number words already digits)."""
    found = []
    for m in _QUANTITY_RE.finditer(text):
        written = m.group("number").replace(",", "")
        value = float(written) * (-1 if m.group("sign") else 1)
        scale, unit, currency = m.group("scale"), m.group("unit"), m.group("currency")
        if scale:
            value *= SCALES[scale]
        readings: tuple[Reading, ...] = ()
        if currency:
            readings = ((f"currency:{CURRENCY_PREFIXES[currency]}", 1.0, 0.0),)
        elif unit:
            readings = tuple(UNITS[unit])
        exact = not readings and not scale and "." not in written
        found.append(Quantity(value, readings, exact, m.group(0).strip()))
    return found
