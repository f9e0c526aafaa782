"""Each answer's image, scaled down for the run page (``leaderboard.views.run_live``).

The judging stage has the split loaded: for every answer, the benchmark names the image the
agent was shown first (``Benchmark.item_image``); it is scaled to at most ``THUMBNAIL_PX`` a
side, stored once per split and image (``thumbnails/<split sha256>/<sha1 of its path>.jpg``,
so the conversations of a split share one file per image and a second run stores nothing), and
its storage name kept on the answer. The images an answer places within its text (M2RAG,
``Benchmark.placed_images``) are stored the same way, larger (``PLACED_PX``), by index on the
answer (``ItemAnswer.images``) once it is graded. Who may see them is the run page's rule:
nothing here is served, the view checks.
"""

from __future__ import annotations

import hashlib
import io
import logging
from pathlib import Path

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from PIL import Image, ImageOps

from evaluator.seam.benchmark import Benchmark, ItemT, PredictionT, SplitT
from leaderboard.models import ItemAnswer, Split

THUMBNAIL_PX = 160
PLACED_PX = 480  # an image shown within an answer's text
JPEG_QUALITY = 80
logger = logging.getLogger(__name__)


def thumbnail_name(split: Split, relative: str, px: int = THUMBNAIL_PX) -> str:
    digest = hashlib.sha1(relative.encode("utf-8")).hexdigest()
    size = "" if px == THUMBNAIL_PX else f"-{px}"
    return f"thumbnails/{split.sha256 or f'split-{split.pk}'}/{digest}{size}.jpg"


def scaled_jpeg(image: Path, px: int = THUMBNAIL_PX) -> bytes:
    """``image`` as a JPEG of at most ``px`` pixels a side (orientation applied)."""
    with Image.open(image) as opened:
        opened.draft("RGB", (px, px))  # JPEG: decode at a reduced scale
        shown = ImageOps.exif_transpose(opened).convert("RGB")
    shown.thumbnail((px, px))
    out = io.BytesIO()
    shown.save(out, "JPEG", quality=JPEG_QUALITY)
    return out.getvalue()


def store_thumbnails(
    split: Split,
    root: Path,
    benchmark: Benchmark[SplitT, PredictionT, ItemT],
    data: SplitT,
    answers: list[ItemAnswer],
) -> int:
    """Give each of ``answers`` its image's thumbnail (made and stored when the split has none
    yet); an image Pillow cannot read gets none. Returns how many answers changed."""
    names: dict[Path, str] = {}
    changed = []
    for answer in answers:
        image = benchmark.item_image(data, answer.item_key)
        if image is None:
            continue
        if image not in names:
            names[image] = _stored(split, root, image)
        if names[image] and answer.thumbnail != names[image]:
            answer.thumbnail = names[image]
            changed.append(answer)
    ItemAnswer.objects.bulk_update(changed, ["thumbnail"], batch_size=1000)
    return len(changed)


def store_placed_images(
    split: Split,
    root: Path,
    benchmark: Benchmark[SplitT, PredictionT, ItemT],
    data: SplitT,
    graded: list[ItemT],
    answers: dict[str, ItemAnswer],
) -> int:
    """Give each graded answer the images it places (``Benchmark.placed_images``), scaled and
    stored once per split and image; returns how many answers changed."""
    changed = []
    for item in graded:
        answer = answers[benchmark.item_key(item)]
        placed = benchmark.placed_images(data, item)
        images = {str(i): _stored(split, root, path, PLACED_PX) for i, path in placed.items()}
        images = {index: name for index, name in images.items() if name}
        if images != answer.images:
            answer.images = images
            changed.append(answer)
    ItemAnswer.objects.bulk_update(changed, ["images"], batch_size=1000)
    return len(changed)


def _stored(split: Split, root: Path, image: Path, px: int = THUMBNAIL_PX) -> str:
    try:
        relative = str(image.relative_to(root))
    except ValueError:
        relative = str(image)
    name = thumbnail_name(split, relative, px)
    if default_storage.exists(name):
        return name
    try:
        data = scaled_jpeg(image, px)
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        logger.warning("split %s: no thumbnail of %s: %s", split.pk, relative, exc)
        return ""
    return default_storage.save(name, ContentFile(data))
