"""Synthetic captioned scenes that the bundled ViTs are trained on.

A scene is one clearly visible shape of a named colour on a textured background, placed in one
of five zones, plus up to three small distractors. Everything (image, mask, caption) follows from
one integer seed, so any scene can be rebuilt exactly: the seed draws a `SceneSpec` (what the
caption says, and where) and a `Look` (texture crop, lighting, distractors), and `render` draws
them. A `Composition` chooses the spec by hand instead (the app's "Compose a scene") and is
drawn by the same `render`. Never imports streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache

import numpy as np
import torch
from PIL import Image, ImageDraw
from torch.utils.data import Dataset, IterableDataset, get_worker_info

SIZE = 224  # scenes are SIZE x SIZE RGB
HELDOUT_BASE = 1_000_000_000  # training seeds are below this, held-out seeds at or above it
CLASS_NAMES = ("ball", "box", "triangle", "star", "heart", "ring", "cross", "diamond", "moon",
               "arrow")
COLOURS = {  # RGB values kept far apart so every colour stays nameable after jitter
    "red": (215, 30, 35), "green": (40, 165, 50), "blue": (35, 75, 225), "yellow": (245, 220, 35),
    "orange": (245, 135, 20), "purple": (135, 45, 185), "pink": (250, 125, 195),
    "white": (248, 248, 248), "black": (22, 22, 24),
}
BACKGROUNDS = ("grass", "sky", "sand", "water", "snow", "road")
# Colours never drawn on a background because they would blend into it.
CLASHES = {"grass": ("green",), "sky": ("blue", "white"), "sand": ("yellow", "orange"),
           "water": ("blue",), "snow": ("white",), "road": ("black",)}
POSITIONS = ("centre", "left", "right", "top", "bottom")
POSITION_PHRASES = {"centre": "", "left": "on the left", "right": "on the right",
                    "top": "at the top", "bottom": "at the bottom"}
VOCAB = tuple(sorted({"a", "on", "the", *CLASS_NAMES, *COLOURS, *BACKGROUNDS,
                      *" ".join(POSITION_PHRASES.values()).split()}))
MAX_CAPTION_WORDS = 6 + max(len(p.split()) for p in POSITION_PHRASES.values())
DISTRACTOR_P = 0.4  # share of scenes with 1-3 small distractors
MAX_DISTRACTORS = 3
HEART_TILT = 0.6  # radians: hearts only tilt this far either way, so they still read as hearts
TEXTURE_VARIANTS = 6  # textures per background (_bank)
_ALLOWED = {b: tuple(c for c in COLOURS if c not in CLASHES[b]) for b in BACKGROUNDS}


# ---------------------------------------------------------------- shapes (unit polygons)
def _ring_pts(r=1.0, cx=0.0, n=64, a0=0.0, a1=2 * math.pi, endpoint=False):
    t = np.linspace(a0, a1, n, endpoint=endpoint)
    return np.stack([cx + r * np.cos(t), r * np.sin(t)], 1)


def _unit(p):
    """Move the polygon's area centroid to the origin and scale its farthest point to radius 1."""
    x, y = p.T
    x1, y1 = np.roll(x, -1), np.roll(y, -1)
    cross = x * y1 - x1 * y
    area = cross.sum() / 2
    c = np.array([((x + x1) * cross).sum(), ((y + y1) * cross).sum()]) / (6 * area)
    p = p - c
    return p / np.linalg.norm(p, axis=1).max()


def _moon():
    a, r = 0.45, 0.85  # crescent = unit disc minus a disc of radius r shifted right by a
    x0 = (1 + a * a - r * r) / (2 * a)
    th, ph = math.acos(x0), math.acos((x0 - a) / r)
    outer = _ring_pts(1.0, 0.0, 40, th, 2 * math.pi - th, True)
    inner = _ring_pts(r, a, 40, 2 * math.pi - ph, ph, True)
    return np.concatenate([outer, inner[1:-1]])


def _shapes():
    t = np.linspace(0, 2 * math.pi, 64, endpoint=False)
    heart = np.stack([16 * np.sin(t) ** 3, -(13 * np.cos(t) - 5 * np.cos(2 * t)
                                             - 2 * np.cos(3 * t) - np.cos(4 * t))], 1)
    k = np.arange(10) * math.pi / 5 - math.pi / 2
    star = np.stack([np.cos(k), np.sin(k)], 1) * np.where(np.arange(10) % 2, 0.45, 1.0)[:, None]
    w = 0.32
    cross = [(-w, -1), (w, -1), (w, -w), (1, -w), (1, w), (w, w), (w, 1), (-w, 1), (-w, w),
             (-1, w), (-1, -w), (-w, -w)]
    arrow = [(-1, -0.2), (0.15, -0.2), (0.15, -0.58), (1, 0), (0.15, 0.58), (0.15, 0.2), (-1, 0.2)]
    tri = [(math.cos(a), math.sin(a)) for a in np.radians([-90, 30, 150])]
    polys = {"ball": _ring_pts(), "box": [(-1, -1), (1, -1), (1, 1), (-1, 1)], "triangle": tri,
             "star": star, "heart": heart, "ring": _ring_pts(), "cross": cross,
             "diamond": [(0, -1), (0.62, 0), (0, 1), (-0.62, 0)], "moon": _moon(), "arrow": arrow}
    shapes = {k: (_unit(np.asarray(v, float)), None) for k, v in polys.items()}
    shapes["ring"] = (_ring_pts(), _ring_pts(0.55))  # the hole shows the background
    # The crescent's centroid sits far from its horns; enlarge it so its disc matches the others.
    shapes["moon"] = (1.3 * shapes["moon"][0], None)
    return shapes


SHAPES = _shapes()  # class name -> (outline polygon, hole polygon or None), radius 1


# ---------------------------------------------------------------- background textures
def _noise(rng, cells_y, cells_x, size=256):
    """Smooth value noise in [0, 1]: a coarse random grid upsampled bicubically."""
    grid = Image.fromarray(rng.random((cells_y, cells_x)).astype(np.float32))
    return np.asarray(grid.resize((size, size), Image.Resampling.BICUBIC))


def _fbm(rng, cells=4, octaves=4):
    out = sum(0.5 ** i * _noise(rng, cells << i, cells << i) for i in range(octaves))
    return (out - out.min()) / (out.max() - out.min())


def _mix(a, b, t):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return a + (b - a) * t[..., None]


def _texture(name: str, rng) -> Image.Image:
    n = 256
    yy, xx = np.mgrid[0:n, 0:n].astype(np.float32)
    if name == "grass":  # patchy greens, vertical streaks, then hundreds of short blades
        streaks = 0.8 + 0.4 * _noise(rng, 8, 150)
        img = _mix((40, 95, 25), (100, 160, 45), _fbm(rng)) * streaks[..., None]
    elif name == "sky":  # blue vertical gradient with soft, flattened white clouds
        img = _mix((55, 115, 215), (155, 200, 245), yy / n)
        cloud = np.clip((_fbm(rng, 3, 5) - 0.5) / 0.3, 0, 1) ** 1.5
        img = _mix(img, (250, 250, 252), 0.95 * cloud)
    elif name == "sand":  # beige with fine grain and wavy ripples
        rip = np.sin(2 * math.pi * (yy / 11 + xx / 70 + 2.5 * _fbm(rng, 3)))
        shade = 14 * (_fbm(rng) - 0.5) + 6 * rip + rng.normal(0, 7, (n, n))
        img = np.full((n, n, 3), (220, 194, 142), np.float32) + shade[..., None]
    elif name == "water":  # blue-teal with horizontal wave bands and light highlights
        img = _mix((15, 75, 125), (35, 130, 160), _fbm(rng, 3))
        band = 0.5 + 0.5 * np.sin(2 * math.pi * (yy / 9 + 1.5 * _fbm(rng, 4)))
        high = np.clip((0.7 * band + 0.5 * _noise(rng, 48, 6) - 0.75) * 3, 0, 1) * 0.7
        img = _mix(img * (0.88 + 0.12 * band)[..., None], (150, 205, 225), high)
    elif name == "snow":  # near-white, faint blue-grey drifts, a few sparkles
        img = np.full((n, n, 3), (242, 245, 250), np.float32)
        img -= np.outer(_fbm(rng, 3), (16, 12, 5)).reshape(n, n, 3)
        img += rng.normal(0, 3, (n, n, 1)) + 30 * (rng.random((n, n, 1)) < 0.002)
    else:  # road: grainy grey asphalt
        shade = 12 * (_fbm(rng, 4) - 0.5) + rng.normal(0, 12, (n, n))
        img = np.full((n, n, 3), (84, 84, 88), np.float32) + shade[..., None]
    out = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(out)
    if name == "grass":
        x, y, dx, h = (rng.uniform(a, b, 1800) for a, b in ((0, n), (0, n + 9), (-4, 4), (6, 16)))
        shades = _mix((35, 85, 20), (130, 190, 60), rng.random(1800)).astype(int).tolist()
        for line in zip(x, y, x + dx, y - h, shades, strict=True):
            draw.line(line[:4], fill=tuple(line[4]), width=1)
    elif name == "road":  # a few thin dark cracks
        for _ in range(4):
            pts = np.cumsum(rng.normal(0, 6, (12, 2)), 0) + rng.uniform(0, n, 2)
            draw.line(pts.ravel().tolist(), fill=(48, 48, 50), width=1)
    return out


@cache
def _bank(background: str, variants: int = TEXTURE_VARIANTS) -> tuple[Image.Image, ...]:
    """A few 256x256 textures per background, built once per process; scenes crop from them."""
    i = BACKGROUNDS.index(background)
    return tuple(_texture(background, np.random.default_rng([7919, i, v]))
                 for v in range(variants))


# ---------------------------------------------------------------- scene sampling
@dataclass(frozen=True)
class SceneSpec:
    """What a seed's scene shows, decided before any pixel is drawn (cheap to compute)."""

    seed: int | None  # None for a composed scene
    label: int
    colour: str
    background: str
    position: str  # one of POSITIONS
    diameter: float  # of the shape's bounding circle, in pixels
    angle: float  # rotation in radians
    centre: tuple[float, float]  # (x, y) of the shape's area centroid

    @property
    def label_name(self) -> str:
        return CLASS_NAMES[self.label]

    @property
    def caption(self) -> str:
        words = f"a {self.colour} {self.label_name} on the {self.background}"
        return f"{words} {POSITION_PHRASES[self.position]}".strip()


@dataclass(frozen=True)
class Distractor:
    """A pebble, leaf or twig: <= 20 px and never a class shape, drawn under the object."""

    kind: int  # 0 pebble (ellipse), 1 leaf (thin polygon), 2 twig (line)
    x: float  # centre of a pebble or leaf, one end of a twig (pixels)
    y: float
    size: float  # half length in pixels, 4-10
    angle: float  # radians (leaf and twig)
    fill: tuple[int, int, int]


@dataclass(frozen=True)
class Look:
    """Everything in a scene's pixels that its caption does not say."""

    variant: int  # which of the background's TEXTURE_VARIANTS textures
    crop: tuple[int, int]  # (x, y) of the SIZE x SIZE crop in the 256 x 256 texture
    flip: bool  # mirrored left-right
    brightness: float  # of the background, 0.9-1.1
    distractors: tuple[Distractor, ...]
    shade: float  # brightness of the object's colour, 0.88-1.06


def size_range(position: str) -> tuple[int, int]:
    """Diameters (px) the world draws in this zone: edge zones a little smaller."""
    return (80, 150) if position == "centre" else (70, 124)


def _edge_range(diameter: float) -> tuple[float, float]:
    """How far from its edge (px) an edge zone's centroid may lie: may clip a tip, never more."""
    return max(0.85 * diameter / 2, 36), 66


def _place(position: str, along: float, across: float) -> tuple[float, float]:
    """The (x, y) centroid `along` px from the zone's edge, `across` px along that edge."""
    along = SIZE - along if position in ("right", "bottom") else along
    return (along, across) if position in ("left", "right") else (across, along)


def _sample(seed: int, rng) -> SceneSpec:
    label = int(rng.integers(len(CLASS_NAMES)))
    background = BACKGROUNDS[rng.integers(len(BACKGROUNDS))]
    colour = _ALLOWED[background][rng.integers(len(_ALLOWED[background]))]
    position = POSITIONS[rng.integers(len(POSITIONS))]
    diameter = rng.uniform(*size_range(position))
    if position == "centre":
        centre = tuple(SIZE / 2 + rng.uniform(-8, 8, 2))
    else:  # edge zones: centroid <= 66 px from its edge (the image centre is 112)
        along = rng.uniform(*_edge_range(diameter))
        centre = _place(position, along, SIZE / 2 + rng.uniform(-12, 12))
    # Hearts only tilt, so they still read as hearts; every other shape spins freely.
    angle = (rng.uniform(-HEART_TILT, HEART_TILT) if CLASS_NAMES[label] == "heart"
             else rng.uniform(0, 2 * math.pi))
    return SceneSpec(seed, label, colour, background, position, float(diameter), float(angle),
                     (float(centre[0]), float(centre[1])))


def _sample_look(rng, distractors: int | None = None) -> Look:
    """Draw a Look; `distractors` None = as the world does (1-3 in DISTRACTOR_P of scenes)."""
    x, y = rng.integers(0, 256 - SIZE + 1, 2)
    variant, flip = int(rng.integers(TEXTURE_VARIANTS)), bool(rng.random() < 0.5)
    brightness = float(rng.uniform(0.9, 1.1))
    if distractors is None:  # the world's own choice
        some = rng.random() < DISTRACTOR_P
        distractors = int(rng.integers(1, MAX_DISTRACTORS + 1)) if some else 0
    items = []
    for _ in range(distractors):
        (px, py), s, a = rng.uniform(12, SIZE - 12, 2), rng.uniform(4, 10), rng.uniform(0, 6.3)
        fill, kind = tuple(int(v) for v in rng.integers(0, 256, 3)), int(rng.integers(3))
        items.append(Distractor(kind, float(px), float(py), float(s), float(a), fill))
    shade = float(rng.uniform(0.88, 1.06))
    return Look(variant, (int(x), int(y)), flip, brightness, tuple(items), shade)


def scene_spec(seed: int) -> SceneSpec:
    """The label, colour, background, position and caption of `seed`'s scene, without drawing."""
    return _sample(seed, np.random.default_rng(seed))


def find_seed(caption: str, start: int = 0, limit: int = 200_000) -> int | None:
    """The first seed in [start, start + limit) whose caption is exactly `caption`, or None."""
    return next((s for s in range(start, start + limit) if scene_spec(s).caption == caption), None)


def heldout_seeds(n: int, seed: int = 0) -> list[int]:
    """`n` seeds that training never uses (all >= HELDOUT_BASE); `seed` picks another block."""
    return [HELDOUT_BASE + seed * 1_000_000 + i for i in range(n)]


# ---------------------------------------------------------------- rendering
def _xy(poly, spec: SceneSpec, shift=(0.0, 0.0)) -> list[float]:
    c, s = math.cos(spec.angle), math.sin(spec.angle)
    pts = poly @ np.array([[c, s], [-s, c]]) * (spec.diameter / 2)
    return (pts + np.add(spec.centre, shift)).ravel().tolist()


def render(spec: SceneSpec, look: Look) -> tuple[Image.Image, np.ndarray]:
    """Draw a scene: (SIZE x SIZE RGB image, [SIZE, SIZE] uint8 mask, label + 1 on the object)."""
    x, y = look.crop
    img = _bank(spec.background)[look.variant].crop((x, y, x + SIZE, y + SIZE))
    if look.flip:
        img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    lut = np.clip(np.arange(256) * look.brightness, 0, 255).astype(int).tolist()
    img = img.point(lut * 3)  # brightness jitter
    draw = ImageDraw.Draw(img)
    for d in look.distractors:  # pebbles, leaves, twigs
        px, py, s, a = d.x, d.y, d.size, d.angle
        if d.kind == 0:
            draw.ellipse((px - s, py - 0.7 * s, px + s, py + 0.7 * s), fill=d.fill)
        elif d.kind == 1:
            leaf = _ring_pts(n=12) * (s, 0.4 * s) @ np.array([[math.cos(a), math.sin(a)],
                                                             [-math.sin(a), math.cos(a)]])
            draw.polygon((leaf + (px, py)).ravel().tolist(), fill=d.fill)
        else:
            draw.line((px, py, px + 2 * s * math.cos(a), py + 2 * s * math.sin(a)), d.fill, 2)
    outline, hole = SHAPES[spec.label_name]
    mask, shadow = Image.new("L", (SIZE, SIZE)), Image.new("L", (SIZE, SIZE))
    mdraw, sdraw = ImageDraw.Draw(mask), ImageDraw.Draw(shadow)
    mdraw.polygon(_xy(outline, spec), fill=255)
    sdraw.polygon(_xy(outline, spec, (5, 6)), fill=100)  # soft drop shadow, light from top-left
    if hole is not None:
        mdraw.polygon(_xy(hole, spec), fill=0)
        sdraw.polygon(_xy(hole, spec, (5, 6)), fill=0)
    colour = tuple(min(255, int(v * look.shade)) for v in COLOURS[spec.colour])
    for fill, alpha in (((0, 0, 0), shadow), (colour, mask)):  # blend only inside the bbox
        box = alpha.getbbox()
        if box:
            img.paste(fill, box, alpha.crop(box))
    labels = (np.asarray(mask) > 0).astype(np.uint8) * np.uint8(spec.label + 1)
    return img, labels


def _render(seed: int) -> tuple[SceneSpec, Image.Image, np.ndarray]:
    rng = np.random.default_rng(seed)
    spec = _sample(seed, rng)
    return spec, *render(spec, _sample_look(rng))


@dataclass(frozen=True, eq=False)
class Scene:
    """One rendered scene. `mask` is 0 for background and label + 1 on the object's pixels."""

    image: Image.Image  # SIZE x SIZE RGB
    label: int
    label_name: str
    colour: str
    background: str
    position: str
    caption: str
    mask: np.ndarray  # [SIZE, SIZE] uint8
    seed: int | None  # None for a composed scene


def _scene(spec: SceneSpec, img: Image.Image, mask: np.ndarray) -> Scene:
    return Scene(img, spec.label, spec.label_name, spec.colour, spec.background, spec.position,
                 spec.caption, mask, spec.seed)


def make_scene(seed: int) -> Scene:
    """Render the scene for `seed`; the same seed always gives the same pixels."""
    return _scene(*_render(int(seed)))


# ---------------------------------------------------------------- composed scenes
MAX_VARIATION = 9999
_COMPOSE_STREAM = 0xC0405E  # keeps a composition's random stream apart from every seed's


def rotation_range(shape: str) -> tuple[int, int]:
    """Rotations (whole degrees, clockwise) the world draws this shape at."""
    tilt = int(math.degrees(HEART_TILT)) if shape == "heart" else 180
    return -tilt, tilt


@dataclass(frozen=True)
class Composition:
    """A scene chosen by hand: what a caption says, plus size, rotation and distractors.

    The rest (texture crop, lighting, where the distractors lie, the colour's shade) is drawn
    from `variation`, the way a seed draws it. Only what the world itself draws is allowed, so
    the bundled models see a scene like those they were trained on; a value outside that
    raises ValueError with one sentence. `code` / `parse` carry it in a link:
    shape_colour_background_position_size_rotation_distractors_variation, e.g.
    'ball_red_grass_left_100_0_2_7'.
    """

    shape: str  # one of CLASS_NAMES
    colour: str  # one of COLOURS, not in CLASHES[background]
    background: str  # one of BACKGROUNDS
    position: str  # one of POSITIONS
    size: int  # diameter of the shape's bounding circle in px, within size_range(position)
    rotation: int  # degrees clockwise, within rotation_range(shape)
    distractors: int = 0  # 0-MAX_DISTRACTORS pebbles, leaves or twigs
    variation: int = 0  # 0-MAX_VARIATION

    def __post_init__(self):
        for value, allowed, what in ((self.shape, CLASS_NAMES, "shape"),
                                     (self.colour, COLOURS, "colour"),
                                     (self.background, BACKGROUNDS, "background"),
                                     (self.position, POSITIONS, "position")):
            if value not in allowed:
                raise ValueError(f"'{value}' is not a {what} of this world "
                                 f"({', '.join(allowed)})")
        if self.colour in CLASHES[self.background]:
            raise ValueError(f"the world never draws {self.colour} on the {self.background}: "
                             f"it would blend in")
        where = POSITION_PHRASES[self.position] or "in the centre"
        for value, (lo, hi), what in (
                (self.size, size_range(self.position), f"size (px) of a shape {where}"),
                (self.rotation, rotation_range(self.shape), f"rotation (°) of a {self.shape}"),
                (self.distractors, (0, MAX_DISTRACTORS), "number of distractors"),
                (self.variation, (0, MAX_VARIATION), "variation")):
            if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
                raise ValueError(f"the {what} is {lo} to {hi} in this world, not {value!r}")

    @property
    def code(self) -> str:
        return "_".join(str(v) for v in (self.shape, self.colour, self.background, self.position,
                                          self.size, self.rotation, self.distractors,
                                          self.variation))

    @classmethod
    def parse(cls, code: str) -> Composition:
        """The composition a `code` names; ValueError (one sentence) if it names none."""
        parts = str(code).split("_")
        if len(parts) != 8:
            raise ValueError("a scene is written shape_colour_background_position_size_"
                             "rotation_distractors_variation")
        try:
            numbers = [int(v) for v in parts[4:]]
        except ValueError:
            raise ValueError("size, rotation, distractors and variation are whole "
                             "numbers") from None
        return cls(*parts[:4], *numbers)

    @property
    def spec(self) -> SceneSpec:
        """Placed at the middle of its zone, as far from the edge as the world allows."""
        d = float(self.size)
        if self.position == "centre":
            centre = (SIZE / 2, SIZE / 2)
        else:
            centre = _place(self.position, sum(_edge_range(d)) / 2, SIZE / 2)
        return SceneSpec(None, CLASS_NAMES.index(self.shape), self.colour, self.background,
                         self.position, d, math.radians(self.rotation), centre)

    @property
    def look(self) -> Look:
        """Drawn with all MAX_DISTRACTORS, then the first `distractors` kept: adding one leaves
        the rest of the scene as it was."""
        look = _sample_look(np.random.default_rng([_COMPOSE_STREAM, self.variation]),
                            distractors=MAX_DISTRACTORS)
        return replace(look, distractors=look.distractors[:self.distractors])


def compose(c: Composition) -> Scene:
    """Render a composed scene with the generator the bundled models were trained on."""
    spec = c.spec
    return _scene(spec, *render(spec, c.look))


# ---------------------------------------------------------------- torch datasets
class _ToItem:
    """Renders a seed into the dict both datasets return (picklable for DataLoader workers)."""

    def __init__(self, mean, std, raw: bool):
        mean, std = torch.tensor(mean).view(3, 1, 1), torch.tensor(std).view(3, 1, 1)
        self.scale, self.shift, self.raw = 1 / (255 * std), mean / std, raw

    def __call__(self, seed: int) -> dict:
        spec, img, mask = _render(seed)
        # Splitting into planes in PIL is ~5x faster than permuting a channels-last tensor.
        pixels = torch.from_numpy(np.stack([np.asarray(band) for band in img.split()]))
        if not self.raw:  # (x/255 - mean)/std, written as x * scale - shift
            pixels, mask = pixels.float().mul_(self.scale).sub_(self.shift), mask.astype(np.int64)
        return {"pixels": pixels, "label": torch.tensor(spec.label),
                "mask": torch.from_numpy(mask), "caption": spec.caption, "seed": seed}


def normalise(pixels: torch.Tensor, mean=(0.5,) * 3, std=(0.5,) * 3) -> torch.Tensor:
    """uint8 pixels [..., 3, H, W] from a `raw=True` dataset -> what `raw=False` would give."""
    norm = _ToItem(mean, std, raw=False)
    return pixels.float().mul_(norm.scale).sub_(norm.shift)


class SceneDataset(Dataset):
    """Scenes for a fixed sequence of seeds (e.g. `heldout_seeds(n)` for evaluation).

    Items: pixels float32 [3, 224, 224] normalised, label int64, mask int64 [224, 224], caption,
    seed. raw=True keeps pixels and mask uint8 (a fifth of the bytes through the DataLoader
    workers' pipe: 196 KB a scene instead of 980 KB); run `normalise` on the batch in the
    training process instead.
    """

    def __init__(self, seeds: Sequence[int], mean=(0.5,) * 3, std=(0.5,) * 3, raw=False):
        self.seeds, self.to_item = seeds, _ToItem(mean, std, raw)

    def __len__(self) -> int:
        return len(self.seeds)

    def __getitem__(self, i: int) -> dict:
        return self.to_item(int(self.seeds[i]))


class FreshSceneStream(IterableDataset):
    """An endless stream of fresh training scenes (or `limit` of them), sharded over workers.

    Item g of the stream is training seed (offset + g) mod HELDOUT_BASE, the offset set by
    `base_seed`; worker w of W yields items g = start + w, start + w + W, ..., so no two workers
    ever share a seed. Pass `start` = items already consumed to resume a run. Items and `raw`
    as in SceneDataset.
    """

    def __init__(self, base_seed: int = 0, start: int = 0, limit: int | None = None,
                 mean=(0.5,) * 3, std=(0.5,) * 3, raw=False):
        self.offset = int(np.random.default_rng([base_seed, 1]).integers(HELDOUT_BASE))
        self.start, self.limit, self.to_item = start, limit, _ToItem(mean, std, raw)

    def seed_at(self, g: int) -> int:
        return (self.offset + g) % HELDOUT_BASE

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        end = math.inf if self.limit is None else self.start + self.limit
        g = self.start + worker
        while g < end:
            yield self.to_item(self.seed_at(g))
            g += workers
