from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.workers.search.helpers import draw_entity
from workers.search.encoders import (
    ClipImageEncoder,
    ColourImageEncoder,
    image_encoder,
    minilm_dir,
    text_encoder,
)


def test_clip_encoder_loads_a_local_checkpoint(tiny_clip_dir: Path) -> None:
    encoder = image_encoder(f"clip:{tiny_clip_dir}")
    assert isinstance(encoder, ClipImageEncoder)
    assert encoder.id.startswith("clip:clip-tiny@")
    rows = encoder.encode([draw_entity(0), draw_entity(1), draw_entity(0).convert("L")])
    assert rows.shape == (3, 12) and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(rows[0], rows[1])
    assert np.allclose(encoder.encode([draw_entity(0)])[0], rows[0], atol=1e-5)


def test_encoder_id_follows_the_model_files(tiny_clip_dir: Path, tmp_path: Path) -> None:
    before = image_encoder(f"clip:{tiny_clip_dir}").id
    config = tiny_clip_dir / "preprocessor_config.json"
    original = config.read_text()
    config.write_text(original.replace("32", "33", 1))
    try:
        assert ClipImageEncoder(tiny_clip_dir).id != before
    finally:
        config.write_text(original)


def test_minilm_text_embeddings_are_normalised_and_meaningful(minilm) -> None:
    rows = minilm.encode(["a red sports car", "a fast red automobile", "tomato soup recipe"])
    assert rows.shape == (3, 384)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert rows[0] @ rows[1] > rows[0] @ rows[2]
    assert minilm.id.startswith("hf-mean:model@")  # pooled as the official web index pools
    assert minilm_dir().is_dir()


def test_mean_pooling_matches_sentence_transformers_up_to_its_256_tokens(minilm) -> None:
    """MiniLM's own pooling is the mean too, over at most 256 tokens; the official index
    truncates at 512, so only longer texts differ."""
    own = text_encoder(f"sentence-transformers:{minilm_dir()}")
    short = ["a red sports car", "the lighthouse keeper lights the lamp at dusk"]
    assert np.allclose(minilm.encode(short), own.encode(short), atol=1e-5)
    long = [" ".join(f"word{i % 97} fact{i}" for i in range(300))]  # well over 256 tokens
    assert not np.allclose(minilm.encode(long), own.encode(long), atol=1e-3)


def test_colour_encoder_is_deterministic_and_normalised() -> None:
    encoder = ColourImageEncoder()
    grey = Image.new("RGB", (50, 80), (128, 128, 128))
    rows = encoder.encode([draw_entity(3), draw_entity(3), grey, draw_entity(4).convert("RGBA")])
    assert rows.shape == (4, 260) and rows.dtype == np.float32
    assert np.array_equal(rows[0], rows[1])
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize(
    ("make", "spec", "message"),
    [
        (text_encoder, "bert", "unknown text encoder 'bert'"),
        (text_encoder, "sentence-transformers:/no/such/dir", "model directory /no/such/dir"),
        (image_encoder, "clip:", "unknown image encoder 'clip:'"),
        (image_encoder, "clip:/no/such/dir", "model directory /no/such/dir not found"),
    ],
)
def test_bad_encoder_specs_say_what_is_wrong(make, spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make(spec)


@pytest.mark.parametrize(
    ("wanted", "message"),
    [
        ("gpu", "use 'auto', 'cpu', 'cuda' or 'cuda:<number>'"),
        ("cuda:x", "use 'auto', 'cpu', 'cuda' or 'cuda:<number>'"),
        ("cuda:99", "torch sees"),
    ],
)
def test_the_search_device_setting_is_checked(
    monkeypatch: pytest.MonkeyPatch, wanted: str, message: str
) -> None:
    monkeypatch.setenv("PODIUM_SEARCH_DEVICE", wanted)
    with pytest.raises(ValueError, match=f"PODIUM_SEARCH_DEVICE='{wanted}': {message}"):
        text_encoder("minilm")


def test_a_float16_checkpoint_encodes_in_float32_on_the_cpu(
    monkeypatch: pytest.MonkeyPatch, minilm, tmp_path: Path
) -> None:
    """A checkpoint saved in float16 (as one carried to a GPU machine is) loads in float32, so
    the CPU and the GPU embed alike, as the official index does."""
    from safetensors.torch import load_file, save_file

    for source in minilm_dir().iterdir():
        if source.is_file() and source.name != "model.safetensors":
            (tmp_path / source.name).write_bytes(source.read_bytes())
    weights = load_file(str(minilm_dir() / "model.safetensors"))
    save_file(
        {k: v.half().contiguous() for k, v in weights.items()}, str(tmp_path / "model.safetensors")
    )
    monkeypatch.setenv("PODIUM_SEARCH_DEVICE", "cpu")
    half = text_encoder(f"hf-mean:{tmp_path}")
    assert half.model.dtype.is_floating_point and str(half.model.dtype) == "torch.float32"
    texts = ["a red sports car", "tomato soup recipe"]
    assert np.allclose(half.encode(texts), minilm.encode(texts), atol=2e-3)
