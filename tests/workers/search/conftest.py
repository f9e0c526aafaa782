"""The encoders load once per session (the CPU is shared); each test gets its own corpus."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.workers.search.helpers import SMALL_CHUNKS, CorpusFiles, CountingEncoder, write_corpus
from workers.search.encoders import ColourImageEncoder, text_encoder
from workers.search.engine import SearchEngine


@pytest.fixture(scope="session")
def minilm():
    return text_encoder("minilm")


@pytest.fixture
def corpus(tmp_path: Path) -> CorpusFiles:
    """A small corpus of this test's own, to change at will."""
    return write_corpus(tmp_path / "corpus", count=8)


@pytest.fixture(scope="session")
def shared_corpus(tmp_path_factory: pytest.TempPathFactory) -> CorpusFiles:
    """A corpus that tests only read (never change), so its indexes are built once."""
    return write_corpus(tmp_path_factory.mktemp("shared") / "corpus")


@pytest.fixture(scope="session")
def engine(shared_corpus: CorpusFiles, minilm, tmp_path_factory) -> SearchEngine:
    return SearchEngine(
        shared_corpus.root,
        text_encoder=minilm,
        image_encoder=ColourImageEncoder(),
        cache_dir=tmp_path_factory.mktemp("shared-cache"),
        chunk_policy=SMALL_CHUNKS,
    )


@pytest.fixture
def make_engine(tmp_path: Path, minilm):
    """Engines over a corpus sharing the session's encoders, with counting wrappers."""

    def make(root: Path, **options) -> tuple[SearchEngine, CountingEncoder, CountingEncoder]:
        text, image = CountingEncoder(minilm), CountingEncoder(ColourImageEncoder())
        options.setdefault("cache_dir", tmp_path / "cache")
        options.setdefault("chunk_policy", SMALL_CHUNKS)
        engine = SearchEngine(root, text_encoder=text, image_encoder=image, **options)
        return engine, text, image

    return make


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    """A short path (Unix socket paths are limited to 107 bytes) others may traverse."""
    path = Path(tempfile.mkdtemp(prefix="podium-sock-"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path)


@pytest.fixture(scope="session")
def tiny_clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised, very small CLIP saved like a downloaded checkpoint, with a
    tokenizer (one token per letter) for its text tower."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPTokenizer

    torch.manual_seed(0)
    config = CLIPConfig(
        text_config={
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "vocab_size": 100,
        },
        vision_config={
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": 32,
            "patch_size": 8,
        },
        projection_dim=12,
    )
    path = tmp_path_factory.mktemp("tiny-clip") / "clip-tiny"
    CLIPModel(config).save_pretrained(path)
    letters = [token for c in "abcdefghijklmnopqrstuvwxyz" for token in (c, f"{c}</w>")]
    vocab = {token: n for n, token in enumerate(["<|startoftext|>", "<|endoftext|>", *letters])}
    (path / "vocab.json").write_text(json.dumps(vocab))
    (path / "merges.txt").write_text("#version: 0.2\n")
    CLIPTokenizer(str(path / "vocab.json"), str(path / "merges.txt")).save_pretrained(path)
    CLIPImageProcessor(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
    ).save_pretrained(path)
    return path
