"""Pillow drawings for the Visual-RAG sample: made-up butterflies, birds and flowers.

An organism is drawn on its own transparent layer, at the photo's scale, in unit coordinates
([-1, 1] both ways), together with one mask per visual feature: the pixels that show it. A pose
hides some features by itself (wings closed, a bird turned away, a flower seen from the side or
in bud, an organism too far away to make anything out); a feature hidden in a pose that could
show it is covered (a leaf, a stone, a beetle) or left out of the frame. The masks check every
photo: a visible feature keeps (nearly) all its pixels in view, a hidden one (nearly) none, so
clue labels are right by construction. Backgrounds, bodies and covers are unsaturated (HSV
saturation < 0.45); only colour features and distractors (a blossom, berries, a beetle) use the
saturated ``COLOURS``, a third of the distractors in the colour of the species' colour feature.
"""

from __future__ import annotations

import colorsys
import io
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageEnhance

Color = tuple[int, int, int]
Point = tuple[float, float]

SIZE = 128  # the photos' side
WORK = 2 * SIZE  # drawn at twice the size, then reduced (anti-aliasing)
LAYER = 256  # the reference size of an organism's layer: line widths are given for it
COLOURS: dict[str, Color] = {
    "red": (220, 30, 35),
    "orange": (240, 130, 20),
    "yellow": (245, 225, 20),
    "turquoise": (20, 195, 185),
    "blue": (35, 85, 230),
    "violet": (140, 55, 225),
    "pink": (235, 65, 170),
}
PALE: Color = (236, 232, 218)
DARK: Color = (40, 34, 30)
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}

HINDWING, SPOTS, UNDERSIDE, ANTENNAE = (
    "hindwing colour", "forewing spots", "underside pattern", "antenna tips",
)  # fmt: skip
BREAST, CREST, BARS, TAIL = "breast colour", "crest", "wing bars", "tail shape"
PETALS, PETAL_COUNT, CENTRE, LEAVES = (
    "petal colour", "number of petals", "centre pattern", "leaf shape",
)  # fmt: skip
COLOUR_FEATURES = (HINDWING, BREAST, PETALS)
# The features each pose can show; "far" shows none (too small).
POSES: dict[str, dict[str, tuple[str, ...]]] = {
    "butterfly": {"open": (HINDWING, SPOTS, ANTENNAE), "closed": (UNDERSIDE, ANTENNAE), "far": ()},
    "bird": {
        "side": (BREAST, CREST, BARS, TAIL),
        "front": (BREAST, CREST),
        "back": (CREST, BARS, TAIL),
        "far": (),
    },
    "flower": {
        "face": (PETALS, PETAL_COUNT, CENTRE, LEAVES),
        "side": (PETALS, LEAVES),
        "bud": (LEAVES,),
        "far": (),
    },
}
# feature: (visible: share of its pixels in view at least, and pixels at least (drawing scale);
# hidden: share at most). A count needs (nearly) all; petals partly covered cannot be counted.
RULES: dict[str, tuple[float, int, float]] = {
    HINDWING: (0.6, 900, 0.03), SPOTS: (0.97, 40, 0.03), UNDERSIDE: (0.8, 900, 0.05),
    ANTENNAE: (0.8, 40, 0.05), BREAST: (0.6, 900, 0.03), CREST: (0.85, 60, 0.05),
    BARS: (0.97, 40, 0.03), TAIL: (0.8, 200, 0.05), PETALS: (0.3, 900, 0.03),
    PETAL_COUNT: (0.9, 900, 0.8), CENTRE: (0.9, 100, 0.05), LEAVES: (0.8, 300, 0.05),
}  # fmt: skip
CROPPABLE = (HINDWING, ANTENNAE, CREST, TAIL, LEAVES)  # at an edge of the organism


@dataclass(frozen=True)
class Look:
    """A species' appearance: its feature values (the first answer) and unsaturated colours."""

    taxon: str
    values: dict[str, str]
    body: Color
    trim: Color  # forewings, bird wings and tails, buds
    pale: Color  # wing undersides, beaks, flower centres


def hsv(hue: float, saturation: float, value: float) -> Color:
    r, g, b = colorsys.hsv_to_rgb(hue % 1.0, saturation, value)
    return round(r * 255), round(g * 255), round(b * 255)


def oval(
    cx: float, cy: float, rx: float, ry: float, angle: float = 0.0, tip: float = 0.0
) -> list[Point]:
    """A rotated ellipse as a polygon; ``tip`` > 0 points its +x end (a leaf)."""
    cos, sin = math.cos(angle), math.sin(angle)
    points = []
    for step in range(28):
        t = 2 * math.pi * step / 28
        x, y = rx * math.cos(t), ry * math.sin(t)
        if tip and step == 0:
            x = rx * (1 + tip)
        points.append((cx + x * cos - y * sin, cy + x * sin + y * cos))
    return points


class Sketch:
    """An organism layer and one mask per feature, drawn together: painting a shape that is
    not part of a feature clears that feature's mask there (it is in front)."""

    def __init__(self, features: Sequence[str], size: int = LAYER) -> None:
        self.size = size  # pixels across the unit square [-1, 1]
        self.layer = Image.new("RGBA", (size, size), (0, 0, 0, 0))
        self.masks = {feature: Image.new("L", (size, size), 0) for feature in features}
        self._pens = [(ImageDraw.Draw(self.layer), "")]
        self._pens += [(ImageDraw.Draw(mask), feature) for feature, mask in self.masks.items()]

    def paint(
        self,
        kind: str,
        points: Sequence[Point],
        fill: Color,
        parts: tuple[str, ...] = (),
        width: int = 0,
    ) -> None:
        half = self.size / 2
        xy = [(half * (1 + x), half * (1 + y)) for x, y in points]
        width = max(1, round(width * self.size / LAYER)) if width else 0
        for pen, feature in self._pens:
            colour: int | tuple[int, ...] = (
                (*fill, 255) if not feature else 255 * (feature in parts)
            )
            if kind == "ellipse":
                pen.ellipse((*xy[0], *xy[1]), fill=colour)
            elif kind == "polygon":
                pen.polygon(xy, fill=colour)
            else:
                pen.line(xy, fill=colour, width=width, joint="curve")

    def circle(
        self, cx: float, cy: float, r: float, fill: Color, parts: tuple[str, ...] = ()
    ) -> None:
        self.paint("ellipse", [(cx - r, cy - r), (cx + r, cy + r)], fill, parts)

    def box(self, feature: str, side: int = 0) -> tuple[float, float, float, float] | None:
        """The feature's bounding box in unit coordinates (of its left or right half: -1, 1)."""
        half = self.size // 2
        left = half if side > 0 else 0
        right = half if side < 0 else self.size
        found = self.masks[feature].crop((left, 0, right, self.size)).getbbox()
        if found is None:
            return None
        x0, y0, x1, y1 = (v / (self.size / 2) for v in found)
        shift = left / (self.size / 2) - 1
        return x0 + shift, y0 - 1, x1 + shift, y1 - 1


def _antennae(sk: Sketch, look: Look, bases: Sequence[Point], tips: Sequence[Point]) -> None:
    kind = look.values[ANTENNAE]
    for (bx, by), (tx, ty) in zip(bases, tips, strict=True):
        sk.paint("line", [(bx, by), (tx, ty)], look.body, (ANTENNAE,), 3)
        if kind == "clubbed":
            sk.circle(tx, ty, 0.045, look.body, (ANTENNAE,))
        elif kind == "hooked":
            sign = 1 if tx >= bx else -1
            hook = [(tx, ty), (tx + sign * 0.08, ty - 0.03), (tx + sign * 0.13, ty + 0.04)]
            sk.paint("line", hook, look.body, (ANTENNAE,), 3)


FOREWING = [(0.04, -0.28), (0.62, -0.58), (0.66, -0.2), (0.42, 0.02), (0.05, 0.06)]


def _butterfly_open(sk: Sketch, look: Look) -> None:
    colour = COLOURS[look.values[HINDWING]]
    for side in (-1, 1):
        sk.paint("ellipse", [(side * 0.3 - 0.3, 0.0), (side * 0.3 + 0.3, 0.5)], colour, (HINDWING,))
        for x, y in ((0.56, 0.2), (0.45, 0.42), (0.22, 0.48)):
            sk.paint("line", [(side * 0.06, 0.12), (side * x, y)], look.body, (HINDWING,), 3)
    count = NUMBERS[look.values[SPOTS]]
    for side in (-1, 1):
        sk.paint("polygon", [(side * x, y) for x, y in FOREWING], look.trim)
        for index in range(count):
            t = index / (count - 1) if count > 1 else 0.5
            sk.circle(side * (0.24 + 0.3 * t), -0.27 - 0.07 * t, 0.045, PALE, (SPOTS,))
    sk.paint("ellipse", [(-0.06, -0.32), (0.06, 0.48)], look.body)
    sk.circle(0, -0.38, 0.075, look.body)
    _antennae(sk, look, [(-0.02, -0.43), (0.02, -0.43)], [(-0.2, -0.8), (0.2, -0.8)])


def _butterfly_closed(sk: Sketch, look: Look) -> None:
    wing = [(-0.3, 0.34), (-0.62, 0.1), (-0.5, -0.35), (0.05, -0.72), (0.28, -0.25), (0.3, 0.34)]
    sk.paint("polygon", wing, look.pale, (UNDERSIDE,))
    pattern = look.values[UNDERSIDE]
    if pattern == "eyespots":
        for x, y in ((-0.38, 0.05), (-0.12, -0.3), (0.08, 0.08)):
            sk.circle(x, y, 0.1, look.body, (UNDERSIDE,))
            sk.circle(x, y, 0.05, look.pale, (UNDERSIDE,))
    elif pattern == "stripes":
        for (x0, y0), (x1, y1) in (
            ((-0.45, 0.12), (-0.35, -0.25)),
            ((-0.22, 0.26), (-0.05, -0.5)),
            ((0.02, 0.28), (0.16, -0.3)),
        ):
            sk.paint("line", [(x0, y0), (x1, y1)], look.body, (UNDERSIDE,), 9)
    else:  # marbled
        for x, y, rx, ry in ((-0.4, 0.0, 0.12, 0.08), (-0.1, -0.35, 0.1, 0.14),
                             (0.1, 0.1, 0.12, 0.1), (-0.2, 0.15, 0.08, 0.06),
                             (0.0, -0.15, 0.07, 0.1)):  # fmt: skip
            sk.paint("polygon", oval(x, y, rx, ry, x + y), look.trim, (UNDERSIDE,))
    sk.paint("ellipse", [(-0.5, 0.3), (0.4, 0.42)], look.body)
    sk.circle(0.46, 0.32, 0.08, look.body)
    for x0, x1 in ((-0.1, -0.16), (0.12, 0.14)):
        sk.paint("line", [(x0, 0.4), (x1, 0.56)], look.body, (), 3)
    _antennae(sk, look, [(0.5, 0.26), (0.48, 0.25)], [(0.78, -0.12), (0.68, -0.18)])


def _crest(sk: Sketch, look: Look, hx: float, hy: float, r: float, sweep: float) -> None:
    kind = look.values[CREST]
    if kind == "pointed":
        tip = (hx - 0.33 * sweep, hy - 2.1 * r)
        sk.paint("polygon", [(hx - 0.09, hy - 0.85 * r), tip, (hx + 0.09, hy - 0.85 * r)],
                 look.trim, (CREST,))  # fmt: skip
    elif kind == "fan-shaped":
        for k in range(5):
            angle = -math.pi / 2 + (k - 2) * 0.3 - 0.35 * sweep
            bx, by = hx + 0.9 * r * math.cos(angle), hy + 0.9 * r * math.sin(angle)
            tip = (hx + 2.0 * r * math.cos(angle), hy + 2.0 * r * math.sin(angle))
            side = (-0.03 * math.sin(angle), 0.03 * math.cos(angle))
            spike = [(bx + side[0], by + side[1]), tip, (bx - side[0], by - side[1])]
            sk.paint("polygon", spike, look.trim, (CREST,))
    else:  # curled
        s = 1 if sweep >= 0 else -1
        curl = [(hx, hy - 0.85 * r), (hx - 0.04 * s, hy - 1.6 * r), (hx - 0.16 * s, hy - 2.0 * r),
                (hx - 0.28 * s, hy - 1.8 * r), (hx - 0.26 * s, hy - 1.5 * r)]  # fmt: skip
        sk.paint("line", curl, look.trim, (CREST,), 9)


def _tail(sk: Sketch, look: Look, base: Point, direction: Point) -> None:
    kind = look.values[TAIL]
    if kind == "forked":
        local = [(0, -0.12), (0.6, -0.22), (0.38, 0), (0.6, 0.22), (0, 0.12)]
    elif kind == "rounded":
        local = [(0, -0.1)] + [
            (0.5 * math.cos(a / 10), 0.5 * math.sin(a / 10)) for a in range(-6, 7)
        ] + [(0, 0.1)]  # fmt: skip
    else:  # pointed
        local = [(0, -0.12), (0.66, 0), (0, 0.12)]
    dx, dy = direction
    norm = math.hypot(dx, dy)
    dx, dy = dx / norm, dy / norm
    points = [(base[0] + a * dx - c * dy, base[1] + a * dy + c * dx) for a, c in local]
    sk.paint("polygon", points, look.trim, (TAIL,))


def _branch(sk: Sketch) -> None:
    sk.paint("line", [(-1, 0.6), (1, 0.64)], (92, 76, 62), (), 12)


def _bird_side(sk: Sketch, look: Look) -> None:
    _tail(sk, look, (-0.36, 0.14), (-1, 0.35))
    for x in (0.04, 0.14):
        sk.paint("line", [(x, 0.35), (x, 0.6)], DARK, (), 4)
    _branch(sk)
    sk.paint("ellipse", [(-0.5, -0.3), (0.4, 0.4)], look.body)
    sk.paint("ellipse", [(0.0, -0.1), (0.38, 0.38)], COLOURS[look.values[BREAST]], (BREAST,))
    wing = [(0.12, -0.1), (-0.2, -0.2), (-0.56, 0.02), (-0.2, 0.2), (0.06, 0.14)]
    sk.paint("polygon", wing, look.trim)
    for index in range(NUMBERS[look.values[BARS]]):
        x = -0.13 - 0.1 * index
        sk.paint("line", [(x + 0.02, -0.1), (x - 0.02, 0.1)], PALE, (BARS,), 6)
    _crest(sk, look, 0.34, -0.3, 0.17, 1)
    sk.circle(0.34, -0.3, 0.17, look.body)
    sk.circle(0.41, -0.34, 0.03, DARK)
    sk.paint("polygon", [(0.48, -0.36), (0.7, -0.29), (0.48, -0.23)], look.pale)


def _bird_front(sk: Sketch, look: Look) -> None:
    for x in (-0.08, 0.08):
        sk.paint("line", [(x, 0.4), (x, 0.62)], DARK, (), 4)
    _branch(sk)
    sk.paint("ellipse", [(-0.36, -0.3), (0.36, 0.5)], look.body)
    sk.paint("ellipse", [(-0.25, -0.14), (0.25, 0.46)], COLOURS[look.values[BREAST]], (BREAST,))
    for side in (-1, 1):
        sk.paint("polygon", [(side * 0.3, -0.12), (side * 0.42, 0.3), (side * 0.24, 0.44)],
                 look.trim)  # fmt: skip
    _crest(sk, look, 0.0, -0.4, 0.19, 0)
    sk.circle(0.0, -0.4, 0.19, look.body)
    for x in (-0.08, 0.08):
        sk.circle(x, -0.43, 0.03, DARK)
    sk.paint("polygon", [(-0.05, -0.36), (0.05, -0.36), (0.0, -0.25)], look.pale)


def _bird_back(sk: Sketch, look: Look) -> None:
    _tail(sk, look, (0.0, 0.36), (0, 1))
    _branch(sk)
    sk.paint("ellipse", [(-0.36, -0.3), (0.36, 0.45)], look.body)
    for side in (-1, 1):
        wing = [(side * 0.34, -0.16), (side * 0.03, -0.2), (side * 0.04, 0.42), (side * 0.28, 0.36)]
        sk.paint("polygon", wing, look.trim)
        for index in range(NUMBERS[look.values[BARS]]):
            y = -0.02 + 0.12 * index
            sk.paint("line", [(side * 0.08, y), (side * 0.28, y + 0.03)], PALE, (BARS,), 6)
    _crest(sk, look, 0.0, -0.4, 0.19, 0)
    sk.circle(0.0, -0.4, 0.19, look.body)


def _stem_and_leaves(sk: Sketch, look: Look) -> None:
    sk.paint("line", [(0, -0.3), (0.02, 1.0)], look.body, (), 8)
    kind = look.values[LEAVES]
    for side, y in ((-1, 0.45), (1, 0.68)):
        cx = side * 0.3
        sk.paint("line", [(0.01, y), (cx, y)], look.body, (), 5)
        if kind == "heart-shaped":
            sk.circle(cx - 0.07 * side, y - 0.06, 0.11, look.body, (LEAVES,))
            sk.circle(cx - 0.07 * side, y + 0.06, 0.11, look.body, (LEAVES,))
            tip = [
                (cx - 0.12 * side, y - 0.14),
                (cx + 0.26 * side, y),
                (cx - 0.12 * side, y + 0.14),
            ]
            sk.paint("polygon", tip, look.body, (LEAVES,))
        elif kind == "needle-like":
            for tilt in (-0.35, 0.0, 0.35):
                end = (cx + side * 0.32 * math.cos(tilt), y + 0.32 * math.sin(tilt))
                sk.paint("line", [(cx - side * 0.12, y), end], look.body, (LEAVES,), 6)
        else:  # lobed
            for dx, dy in ((0.0, -0.1), (0.13, 0.0), (0.0, 0.1)):
                sk.circle(cx + side * dx, y + dy, 0.1, look.body, (LEAVES,))


def _flower_face(sk: Sketch, look: Look) -> None:
    _stem_and_leaves(sk, look)
    count = NUMBERS[look.values[PETAL_COUNT]]
    colour = COLOURS[look.values[PETALS]]
    for index in range(count):
        angle = 2 * math.pi * index / count - math.pi / 2
        cx, cy = 0.31 * math.cos(angle), -0.35 + 0.31 * math.sin(angle)
        sk.paint("polygon", oval(cx, cy, 0.18, 0.095, angle), colour, (PETALS, PETAL_COUNT))
    pattern = look.values[CENTRE]
    sk.circle(0, -0.35, 0.12, look.pale, (CENTRE,))
    if pattern == "ringed":
        sk.circle(0, -0.35, 0.1, DARK, (CENTRE,))
        sk.circle(0, -0.35, 0.065, look.pale, (CENTRE,))
    elif pattern == "dotted":
        for index in range(6):
            angle = 2 * math.pi * index / 6
            sk.circle(0.065 * math.cos(angle), -0.35 + 0.065 * math.sin(angle), 0.022, DARK,
                      (CENTRE,))  # fmt: skip
    else:  # striped
        for y in (-0.41, -0.35, -0.29):
            sk.paint("line", [(-0.09, y), (0.09, y)], DARK, (CENTRE,), 4)


def _flower_side(sk: Sketch, look: Look) -> None:
    _stem_and_leaves(sk, look)
    colour = COLOURS[look.values[PETALS]]
    for angle in (-2.4, -1.95, -1.57, -1.2, -0.75):
        cx, cy = 0.22 * math.cos(angle), -0.22 + 0.22 * math.sin(angle)
        sk.paint("polygon", oval(cx, cy, 0.22, 0.09, angle), colour, (PETALS,))
    sk.paint("polygon", [(-0.12, -0.24), (0.12, -0.24), (0.0, -0.12)], look.trim)


def _flower_bud(sk: Sketch, look: Look) -> None:
    _stem_and_leaves(sk, look)
    sk.paint("polygon", oval(0, -0.4, 0.1, 0.2), look.trim)
    for x in (-0.06, 0.06):
        sk.paint("line", [(0, -0.22), (x, -0.5)], look.body, (), 3)


DRAWINGS: dict[tuple[str, str], Callable[[Sketch, Look], None]] = {
    ("butterfly", "open"): _butterfly_open,
    ("butterfly", "closed"): _butterfly_closed,
    ("bird", "side"): _bird_side,
    ("bird", "front"): _bird_front,
    ("bird", "back"): _bird_back,
    ("flower", "face"): _flower_face,
    ("flower", "side"): _flower_side,
    ("flower", "bud"): _flower_bud,
}
FAR_POSES = {"butterfly": ("open", "closed"), "bird": ("side", "front"), "flower": ("face",)}


def _cover(rng: random.Random, sk: Sketch, feature: str, half: bool = False) -> None:
    """A leaf, stone or beetle over the feature (over one side of it when ``half``); a
    feature in two parts (wings, leaves) gets one cover on each."""
    for side in (-1, 1) if feature in (HINDWING, SPOTS, LEAVES) else (0,):
        found = sk.box(feature, side)
        if found is None:
            continue
        left, top, right, bottom = found
        rx, ry = (right - left) / 2 + 0.03, (bottom - top) / 2 + 0.03
        cx, cy = (left + right) / 2, (top + bottom) / 2
        grow = rng.uniform(1.05, 1.2) if feature == BREAST else rng.uniform(1.25, 1.45)
        if half:
            cx = rng.choice((left, right))
            rx, ry, grow = (right - left) * rng.uniform(0.3, 0.36), ry * 1.1, 1.0
        kind = "beetle" if feature == CENTRE else rng.choice(("leaf", "leaf", "stone"))
        angle = rng.uniform(-0.25, 0.25) + (math.pi if rng.random() < 0.5 else 0.0)
        if kind == "leaf":
            colour = hsv(rng.uniform(0.17, 0.33), rng.uniform(0.28, 0.42), rng.uniform(0.3, 0.5))
            sk.paint("polygon", oval(cx, cy, rx * grow, ry * grow, angle, tip=0.3), colour)
            vein = hsv(0.2, 0.25, 0.6)
            sk.paint("line", oval(cx, cy, rx * grow * 0.8, 0.001, angle)[::14], vein, (), 2)
        elif kind == "stone":
            grey = hsv(rng.uniform(0.05, 0.12), rng.uniform(0.05, 0.15), rng.uniform(0.45, 0.65))
            sk.paint("polygon", oval(cx, cy, rx * grow, ry * grow, angle), grey)
        else:
            sk.paint("polygon", oval(cx, cy, rx * 1.05, ry, angle), (70, 56, 44))
            sk.paint("line", [(cx, cy - ry), (cx, cy + ry)], DARK, (), 2)


def _transform(image: Image.Image, angle: float, flip: bool, mask: bool = False) -> Image.Image:
    """Flipped, then rotated (masks: nearest pixel, so they stay 0 or 255)."""
    if flip:
        image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    if mask:
        return image.rotate(angle, Image.Resampling.NEAREST, expand=True)
    image = image.convert("RGBa")  # premultiplied: no dark fringes
    return image.rotate(angle, Image.Resampling.BILINEAR, expand=True).convert("RGBA")


def _pack(masks: list[Image.Image]) -> Image.Image:
    """Up to four masks as the bands of one image, transformed and counted together."""
    empty = Image.new("L", masks[0].size if masks else (1, 1), 0)
    return Image.merge("RGBA", (masks + [empty] * 4)[:4])


def _counts(packed: Image.Image) -> list[int]:
    histogram = packed.histogram()
    return [histogram[256 * band + 255] for band in range(4)]


def _placement(
    rng: random.Random,
    layer: Image.Image,
    totals: Image.Image,
    masks: Image.Image,
    rules: list[tuple[str, bool]],
    cropped: int | None,
) -> tuple[int, int] | None:
    """Where to paste the layer so that visible features are in view and hidden ones are not;
    ``rules``: each band's feature and whether it must show."""
    box = layer.getchannel("A").getbbox() or (0, 0, layer.width, layer.height)
    width, height = box[2] - box[0], box[3] - box[1]
    full = _counts(totals)
    for _ in range(12):
        x = round(rng.uniform(-0.1 * width, WORK - 0.9 * width) - box[0])
        y = round(rng.uniform(-0.1 * height, WORK - 0.9 * height) - box[1])
        if cropped is not None:
            left, top, right, bottom = totals.getchannel(cropped).getbbox() or box
            gaps = {
                "left": left - box[0],
                "right": box[2] - right,
                "top": top - box[1],
                "bottom": box[3] - bottom,
            }
            side = min(gaps, key=lambda name: gaps[name])
            margin = rng.randint(0, 6)
            if side == "left":
                x = -right - margin
            elif side == "right":
                x = WORK - left + margin
            elif side == "top":
                y = -bottom - margin
            else:
                y = WORK - top + margin
        seen = _counts(masks.crop((-x, -y, WORK - x, WORK - y)))
        if all(
            _shows(feature, full[band], seen[band], show)
            for band, (feature, show) in enumerate(rules)
        ):
            return x, y
    return None


def _shows(feature: str, total: int, seen: int, visible: bool) -> bool:
    least, pixels, most = RULES[feature]
    share = seen / total if total else 0.0
    return share >= least and seen >= pixels if visible else share <= most


_GRADIENT = Image.linear_gradient("L").resize((WORK, WORK))  # black at the top


def _background(rng: random.Random, taxon: str) -> tuple[Image.Image, Color]:
    hue = {"butterfly": 0.22, "bird": 0.57, "flower": 0.16}[taxon] + rng.uniform(-0.05, 0.05)
    top = hsv(hue, rng.uniform(0.1, 0.28), rng.uniform(0.6, 0.85))
    bottom = hsv(hue + rng.uniform(-0.06, 0.06), rng.uniform(0.15, 0.35), rng.uniform(0.35, 0.6))
    frame = Image.composite(Image.new("RGB", (WORK, WORK), bottom),
                            Image.new("RGB", (WORK, WORK), top), _GRADIENT)  # fmt: skip
    pen = ImageDraw.Draw(frame)
    for _ in range(rng.randint(3, 9)):
        x, length = rng.uniform(0, WORK), rng.uniform(30, 110)
        lean = rng.uniform(-25, 25)
        colour = hsv(hue + rng.uniform(-0.05, 0.05), rng.uniform(0.2, 0.38), rng.uniform(0.3, 0.6))
        if taxon == "bird":  # distant foliage
            y = rng.uniform(0, WORK)
            pen.ellipse((x - length / 3, y - length / 4, x + length / 3, y + length / 4), colour)
        else:  # grass blades
            pen.line([(x, WORK), (x + lean, WORK - length)], colour, rng.randint(2, 5))
    return frame, top


def _distractor(rng: random.Random, frame: Image.Image, taxon: str, colour: Color) -> None:
    """Saturated colour that is no feature of the species: a blossom or berries, or beside a
    flower (where those would pass for its petals or buds) a beetle."""
    pen = ImageDraw.Draw(frame)
    r = 7 + 17 * rng.random() ** 2  # mostly small, now and then a big one
    cx, cy = rng.uniform(2 * r, WORK - 2 * r), rng.uniform(2 * r, WORK - 2 * r)
    kind = "beetle" if taxon == "flower" else rng.choice(("blossom", "berries"))
    if kind == "blossom":
        for index in range(5):
            angle = 2 * math.pi * index / 5
            px, py = cx + r * math.cos(angle), cy + r * math.sin(angle)
            pen.ellipse((px - r, py - r, px + r, py + r), colour)
        pen.ellipse((cx - r / 2, cy - r / 2, cx + r / 2, cy + r / 2), PALE)
    elif kind == "berries":
        for _ in range(rng.randint(3, 6)):
            px, py = cx + rng.uniform(-1.5 * r, 1.5 * r), cy + rng.uniform(-1.5 * r, 1.5 * r)
            pen.line([(cx, cy - 2.5 * r), (px, py)], (80, 70, 55), 2)
            pen.ellipse((px - 0.8 * r, py - 0.8 * r, px + 0.8 * r, py + 0.8 * r), colour)
    else:
        big = 1.9 * r
        pen.ellipse((cx - 0.7 * r, cy - big - 0.6 * r, cx + 0.7 * r, cy - big + 0.8 * r), DARK)
        pen.ellipse((cx - big, cy - big, cx + big, cy + big), colour)
        pen.line([(cx, cy - big), (cx, cy + big)], DARK, max(1, round(r / 4)))
        for dx, dy in ((-0.9, -0.6), (0.9, -0.6), (-0.8, 0.6), (0.8, 0.6)):
            x, y = cx + dx * r, cy + dy * r
            pen.ellipse((x - r / 3, y - r / 3, x + r / 3, y + r / 3), DARK)


def photo(
    rng: random.Random,
    look: Look,
    pose: str,
    visible: frozenset[str],
    distractor: Color | None = None,
) -> Image.Image:
    """A 128x128 photo of the species in ``pose`` showing exactly the ``visible`` features."""
    shown = POSES[look.taxon][pose]
    if not visible <= set(shown):
        raise ValueError(f"{pose} cannot show {sorted(visible - set(shown))}")
    for _ in range(40):
        frame, sky = _background(rng, look.taxon)
        if distractor is not None:
            _distractor(rng, frame, look.taxon, distractor)
        drawn = rng.choice(FAR_POSES[look.taxon]) if pose == "far" else pose
        size = rng.randint(36, 56) if pose == "far" else rng.randint(120, 250)
        sk = Sketch(shown, size)
        DRAWINGS[look.taxon, drawn](sk, look)
        hidden = [feature for feature in shown if feature not in visible]
        croppable = [feature for feature in hidden if feature in CROPPABLE]
        cropped = rng.choice(croppable) if croppable and rng.random() < 0.35 else None
        totals = _pack(list(sk.masks.values()))
        for feature in hidden:
            if feature != cropped and not (feature == PETAL_COUNT and PETALS not in visible):
                _cover(rng, sk, feature, half=feature == PETAL_COUNT)
        angle = rng.uniform(-180, 180) if look.taxon == "butterfly" else rng.uniform(-18, 18)
        flip = rng.random() < 0.5
        layer = _transform(sk.layer, angle, flip)
        place = _placement(
            rng,
            layer,
            _transform(totals, angle, flip, mask=True),
            _transform(_pack(list(sk.masks.values())), angle, flip, mask=True),
            [(feature, feature in visible) for feature in sk.masks],
            None if cropped is None else list(sk.masks).index(cropped),
        )
        if place is None:
            continue
        if pose == "far":  # haze: far away, so no feature can be made out
            alpha = layer.getchannel("A")
            haze = Image.new("RGB", layer.size, sky)
            layer = Image.blend(layer.convert("RGB"), haze, rng.uniform(0.6, 0.7)).convert("RGBA")
            layer.putalpha(alpha)
        frame.paste(layer, place, layer)
        frame = ImageEnhance.Brightness(frame).enhance(rng.uniform(0.75, 1.15))
        tint = hsv(rng.random(), 0.5, 0.8)
        frame = Image.blend(frame, Image.new("RGB", frame.size, tint), rng.uniform(0.0, 0.08))
        return frame.resize((SIZE, SIZE), Image.Resampling.BOX)
    raise RuntimeError(f"could not draw a {look.taxon} ({pose}) showing {sorted(visible)}")


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=6)
    return buffer.getvalue()
