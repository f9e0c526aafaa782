"""Placement parsing as the official code does it, edge cases computed by hand."""

from __future__ import annotations

from evaluator.benchmarks.m2rag.answer import parse_answer, shown_answer


def test_the_first_digit_run_inside_the_parentheses_is_the_index() -> None:
    parsed = parse_answer("A ![cat](image 2 of 10) b ![dog](img_1.png) c", images=3)
    assert parsed.indices == (2, 1)
    assert [p.caption for p in parsed.placements] == ["cat", "dog"]
    assert parsed.text == "A  b  c" and parsed.dropped == 0


def test_out_of_range_and_repeated_indices_are_dropped() -> None:
    parsed = parse_answer("![a](image 0) ![b](image 3) ![c](image 0) ![d](image 2)", images=3)
    assert parsed.indices == (0, 2)
    assert parsed.dropped == 2


def test_indices_count_from_zero_and_leading_zeros_read_as_a_number() -> None:
    assert parse_answer("![x](image 007)", images=8).indices == (7,)
    assert parse_answer("![x](image 3)", images=3).indices == ()  # 3 images: 0, 1, 2


def test_the_official_pattern_runs_past_a_parenthesis_to_a_digit_on_the_same_line() -> None:
    parsed = parse_answer("![a](no digit) then 1) end", images=2)
    assert parsed.indices == (1,)
    # ... but not across a line, and a placement with no digit at all is no placement
    assert parse_answer("![a](none)\n1)", images=2).indices == ()
    assert parse_answer("![a](none) text", images=2).dropped == 0


def test_the_text_around_an_image_is_cut_to_256_tokens_with_other_placements_removed() -> None:
    above = " ".join(f"w{i}" for i in range(300))
    below = " ".join(f"v{i}" for i in range(300))
    parsed = parse_answer(f"{above} ![x](image 0) {below} ![y](image 1) tail", images=2)
    first, second = parsed.placements
    assert first.above.split() == above.split()[-256:]
    assert first.below.split() == below.split()[:256]
    assert second.above.split()[-1] == "v299" and "![" not in second.above
    assert second.below == "tail"


def test_ten_thousand_placements_keep_one_per_image() -> None:
    answer = " ".join(f"![c](image {i % 50})" for i in range(10_000))
    parsed = parse_answer(answer, images=5)
    assert parsed.indices == (0, 1, 2, 3, 4)
    assert parsed.dropped == 10_000 - 5


def test_the_shown_answer_writes_kept_placements_plainly_and_drops_the_rest() -> None:
    answer = "x ![ a ](https://evil/1.png) y ![b](image 1) ![c](image 9)"
    assert parse_answer(answer, images=2).indices == (1,)
    assert shown_answer(answer, placed=[1]) == "x ![a](image:1) y  "
    # a caption cannot close the image's brackets early
    assert shown_answer("![a]b\\](image 0)", placed=[0]) == r"![a\]b\\](image:0)"
