"""ui.figures against independent references: what the patch grid draws, and where."""

import base64
import io

import numpy as np
from PIL import Image

from tests.test_app import photo_bytes
from ui import figures


def crop(size=224):
    return Image.open(io.BytesIO(photo_bytes())).convert("RGB").resize((size, size))


def decode(source: str) -> np.ndarray:
    head, data = source.split(",", 1)
    assert head == "data:image/jpeg;base64"
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"), float)


def test_patch_grid_shows_the_crop_itself_pixel_for_pixel():
    img = crop()
    fig = figures.patch_grid(img, 16)
    shown = decode(fig.data[0].source)
    want = np.asarray(img, float)
    assert shown.shape == want.shape  # one image pixel per axis unit: cells line up
    assert np.abs(shown - want).mean() < 2.0  # JPEG quality 90, full-resolution colour
    # every 16 x 16 patch keeps its mean colour (what the model's patch embedding averages over)
    means = lambda a: a.reshape(14, 16, 14, 16, 3).mean((1, 3))  # noqa: E731
    assert np.abs(means(shown) - means(want)).max() < 3.0
    assert fig.data[0].x0 in (None, 0) and fig.data[0].dx in (None, 1)


def test_patch_grid_cells_markers_and_lines_sit_on_patch_boundaries():
    fig = figures.patch_grid(crop(112), 16, selected=19)
    lines, cells = fig.data[1], fig.data[2]
    xs = {x for x in lines.x if x is not None}
    assert xs == {-0.5, 111.5} | {16 * i - 0.5 for i in range(1, 7)}
    # the clickable marker of patch k sits on the centre of row k // 7, column k % 7
    k = np.asarray(cells.customdata)
    np.testing.assert_array_equal(k, np.arange(49))
    np.testing.assert_allclose(cells.x, (k % 7) * 16 + 7.5)
    np.testing.assert_allclose(cells.y, (k // 7) * 16 + 7.5)
    box = fig.layout.shapes[0]  # the highlighted patch 19: row 2, column 5
    assert (box.x0, box.x1, box.y0, box.y1) == (79.5, 95.5, 31.5, 47.5)
