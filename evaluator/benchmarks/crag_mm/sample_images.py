"""Pillow drawings for the sample data: each entity's look, its photos and their degradations.

An entity's look (``Design``) is a few colour bands and shapes in a palette built around one
hue, so entities differ at thumbnail scale. Egocentric photos place the entity in a cluttered
960x1280 scene and apply the turn's ``image_quality`` (rotated, truncated, occluded, low light,
blurred or normal); web photos show it plainly.
"""

from __future__ import annotations

import colorsys
import io
import random
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageEnhance, ImageFilter

EGO_SIZE = (960, 1280)  # the size CRAG-MM resizes egocentric pictures to
WEB_SIZE = (640, 480)
CORPUS_SIZE = (256, 256)
SHAPES = ("ellipse", "rectangle", "triangle")
Color = tuple[int, int, int]


@dataclass(frozen=True)
class Shape:
    kind: str
    box: tuple[float, float, float, float]  # left, top, right, bottom as fractions of the side
    color: Color


@dataclass(frozen=True)
class Design:
    vertical_bands: bool
    bands: tuple[Color, ...]
    shapes: tuple[Shape, ...]


def _hsv(hue: float, saturation: float, value: float) -> Color:
    r, g, b = colorsys.hsv_to_rgb(hue % 1.0, saturation, value)
    return round(r * 255), round(g * 255), round(b * 255)


def make_design(rng: random.Random, hue: float) -> Design:
    """A look built around ``hue``: 2-3 bands and 3 shapes in contrasting colours."""
    bands = tuple(
        _hsv(hue + rng.uniform(-0.03, 0.03), rng.uniform(0.5, 0.9), rng.uniform(0.45, 0.95))
        for _ in range(rng.choice((2, 3)))
    )
    shapes = []
    for index in range(3):
        left, top = rng.uniform(0.05, 0.5), rng.uniform(0.05, 0.5)
        side = rng.uniform(0.3, 0.45)
        color = _hsv(hue + 0.33 * (index + 1), rng.uniform(0.6, 1.0), rng.uniform(0.6, 1.0))
        shapes.append(Shape(rng.choice(SHAPES), (left, top, left + side, top + side), color))
    return Design(rng.random() < 0.5, bands, tuple(shapes))


def similar_design(rng: random.Random, design: Design) -> Design:
    """A hard negative: the same palette family with the shapes moved."""
    moved = []
    for shape in design.shapes:
        dx, dy = rng.uniform(-0.15, 0.15), rng.uniform(-0.15, 0.15)
        left, top, right, bottom = shape.box
        moved.append(
            Shape(rng.choice(SHAPES), (left + dx, top + dy, right + dx, bottom + dy), shape.color)
        )
    return Design(not design.vertical_bands, design.bands, tuple(moved))


def render(design: Design, size: tuple[int, int]) -> Image.Image:
    width, height = size
    image = Image.new("RGB", size)
    draw = ImageDraw.Draw(image)
    count = len(design.bands)
    for index, color in enumerate(design.bands):
        if design.vertical_bands:
            box = (index * width // count, 0, (index + 1) * width // count, height)
        else:
            box = (0, index * height // count, width, (index + 1) * height // count)
        draw.rectangle(box, fill=color)
    for shape in design.shapes:
        left, top, right, bottom = shape.box
        shape_box = (left * width, top * height, right * width, bottom * height)
        if shape.kind == "ellipse":
            draw.ellipse(shape_box, fill=shape.color)
        elif shape.kind == "rectangle":
            draw.rectangle(shape_box, fill=shape.color)
        else:
            draw.polygon(
                [
                    (shape_box[0], shape_box[3]),
                    ((shape_box[0] + shape_box[2]) / 2, shape_box[1]),
                    (shape_box[2], shape_box[3]),
                ],
                fill=shape.color,
            )
    return image


def corpus_view(rng: random.Random, design: Design, view: int) -> Image.Image:
    """View 0 is the plain look; later views are slightly cropped or shifted."""
    image = render(design, CORPUS_SIZE)
    if view == 0:
        return image
    side = CORPUS_SIZE[0]
    if view % 2:
        margin = rng.randint(side // 12, side // 6)
        left, top = rng.randint(0, margin), rng.randint(0, margin)
        return image.crop((left, top, left + side - margin, top + side - margin)).resize(
            CORPUS_SIZE
        )
    dx, dy = rng.randint(-side // 8, side // 8), rng.randint(-side // 8, side // 8)
    return image.rotate(0, translate=(dx, dy), fillcolor=(235, 235, 235))


def ego_photo(rng: random.Random, design: Design, image_quality: str) -> Image.Image:
    """A 960x1280 egocentric photo of the entity, degraded as ``image_quality`` says."""
    width, height = EGO_SIZE
    scene = Image.new("RGB", EGO_SIZE, _hsv(rng.random(), 0.15, rng.uniform(0.5, 0.8)))
    draw = ImageDraw.Draw(scene)
    for _ in range(4):  # clutter around the subject
        x, y = rng.randint(0, width), rng.randint(0, height)
        draw.rectangle(
            (x, y, x + rng.randint(80, 300), y + rng.randint(80, 300)),
            fill=_hsv(rng.random(), 0.2, 0.6),
        )
    side = rng.randint(520, 760)
    subject = render(design, (side, side))
    if image_quality == "truncated":  # over half of the subject leaves the frame
        left, top = width - side // 2 + rng.randint(-60, 0), rng.randint(0, height - side)
    else:
        left, top = rng.randint(0, width - side), rng.randint(0, height - side)
    scene.paste(subject, (left, top))
    if image_quality == "occluded":  # a hand-coloured blob over part of the subject
        cover = side * 2 // 3
        x, y = left + rng.randint(0, side - cover), top + rng.randint(0, side - cover)
        ImageDraw.Draw(scene).ellipse((x, y, x + cover, y + cover), fill=(196, 150, 120))
    if image_quality == "rotated":
        scene = scene.rotate(rng.choice((90, 180, 270, 35, -35)), fillcolor=(20, 20, 20))
    elif image_quality == "low light":
        scene = ImageEnhance.Brightness(scene).enhance(rng.uniform(0.15, 0.3))
    elif image_quality == "blurred":
        scene = scene.filter(ImageFilter.GaussianBlur(rng.uniform(10, 16)))
    return scene


def web_photo(design: Design) -> Image.Image:
    """A plain catalogue-style picture, as found on the web (non-egocentric)."""
    photo = Image.new("RGB", WEB_SIZE, (245, 245, 245))
    side = WEB_SIZE[1] * 4 // 5
    photo.paste(
        render(design, (side, side)), ((WEB_SIZE[0] - side) // 2, (WEB_SIZE[1] - side) // 2)
    )
    return photo


def distractor_view(rng: random.Random) -> Image.Image:
    """A picture of no entity at all (an empty scene)."""
    return render(make_design(rng, rng.random()), CORPUS_SIZE).filter(ImageFilter.GaussianBlur(6))


def jpeg(image: Image.Image, quality: int = 70) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality, optimize=True)
    return buffer.getvalue()
