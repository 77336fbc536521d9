"""The segmentation stage's pictures (ui/stages/segmentation.py draws them): the class map
enlarged, and the class map with its patch grid and its class edges marked."""

from __future__ import annotations

import numpy as np
from PIL import Image

from ui.drawing import figures

SCALE = 2  # the class map and its edges are drawn at this many screen pixels per image pixel
ON_BORDER, INSIDE, GRID = (255, 214, 10), (255, 0, 255), (235, 235, 235)  # the edges' colours


def big(img: Image.Image) -> Image.Image:
    return img.resize((img.size[0] * SCALE, img.size[1] * SCALE), Image.Resampling.NEAREST)


def edges_picture(crop: Image.Image, lab: np.ndarray, c) -> Image.Image:
    """The class map `lab` ([H, W] class per pixel) over `crop` with the patch grid, and every
    pixel where the class changes to its right or below marked: on a patch border in yellow,
    inside a patch in magenta."""
    P = c.patch_size
    img = np.asarray(figures.class_map_image(crop, lab, c.seg_classes - 1)).copy()
    cut = np.arange(1, lab.shape[1]) % P == 0  # pixel x + 1 starts a new patch
    grid = np.zeros(lab.shape, bool)
    grid[:, :-1] |= cut[None, :]
    grid[:-1, :] |= cut[:, None]
    img[grid] = (0.5 * img[grid] + 0.5 * np.array(GRID)).astype(np.uint8)
    h, v = lab[:, 1:] != lab[:, :-1], lab[1:, :] != lab[:-1, :]
    on, inside = np.zeros(lab.shape, bool), np.zeros(lab.shape, bool)
    on[:, :-1] |= h & cut[None, :]
    inside[:, :-1] |= h & ~cut[None, :]
    on[:-1, :] |= v & cut[:, None]
    inside[:-1, :] |= v & ~cut[:, None]
    img[inside] = INSIDE
    img[on] = ON_BORDER
    return big(Image.fromarray(img))
