"""ui.drawing.figures against independent references: what the patch grid draws, and where."""

import base64
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from tests.support import photo_bytes
from ui.drawing import figures


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
    lines, cells = fig.data[1], fig.data[-1]  # the grid lines (dark under light), the cells
    xs = {x for x in lines.x if x is not None}
    assert xs == {-0.5, 111.5} | {16 * i - 0.5 for i in range(1, 7)}
    # the clickable marker of patch k sits on the centre of row k // 7, column k % 7
    k = np.asarray(cells.customdata)
    np.testing.assert_array_equal(k, np.arange(49))
    np.testing.assert_allclose(cells.x, (k % 7) * 16 + 7.5)
    np.testing.assert_allclose(cells.y, (k // 7) * 16 + 7.5)
    box = fig.layout.shapes[0]  # the highlighted patch 19: row 2, column 5
    assert (box.x0, box.x1, box.y0, box.y1) == (79.5, 95.5, 31.5, 47.5)


def test_mlp_figures_draw_what_they_are_given():
    u = np.array([-2.0, 0.5, 3.0], np.float32)
    fig = figures.gelu_scatter(u, u.clip(0), np.linspace(-3, 3, 5), np.linspace(0, 3, 5), "CLS")
    curve, units = fig.data
    assert (curve.mode, units.mode, units.name) == ("lines", "markers", "CLS: 3 hidden units")
    np.testing.assert_array_equal(units.x, u)
    assert fig.layout.title.text == "GELU with this token's 3 pre-activations"
    bars = figures.top_units_bars(np.array([3.0, 2.0]), [7, 1]).data[0]
    assert list(bars.y) == ["unit 7", "unit 1"] and bars.orientation == "h"
    fig = figures.residual_norms([1.0, 2.0], [3.0, 4.0], [5.0, 6.0, 7.0])
    assert fig.layout.barmode == "group"  # norms of vectors do not add up: never stacked
    assert list(fig.data[2].x) == ["embed", "block 0", "block 1"]
    assert list(fig.data[0].x) == list(fig.data[1].x) == ["block 0", "block 1"]


def test_class_map_image_and_enlarged_patch():
    img = crop(32)
    labels = np.zeros((32, 32), int)
    labels[:, 16:] = 2
    painted = np.asarray(figures.class_map_image(img, labels, 3, alpha=1.0))
    assert (painted[:, :16] == 0).all()  # background is black
    want = (np.array(figures.class_colours(3)[1][:3]) * 255).astype(int)
    assert np.abs(painted[:, 16:].astype(int) - want).max() <= 1  # class 2: its palette colour
    patch = np.asarray(figures.enlarged_patch(img, 1, 0, 16, 64))
    np.testing.assert_array_equal(patch[::4, ::4], np.asarray(img)[16:32, 0:16])


def test_figures_are_drawn_without_streamlit():
    """Figures are pure functions: importing every module of ui/drawing/figures/ and
    ui/drawing/phone_figures.py
    in a fresh interpreter loads no streamlit."""
    root = Path(__file__).resolve().parents[1]
    folder = root / "ui" / "drawing" / "figures"
    names = [f"ui.drawing.figures.{p.stem}" for p in sorted(folder.glob("*.py"))]
    probe = ("import sys; import " + ", ".join(names + ["ui.drawing.phone_figures"])
             + "; print(sorted(m for m in sys.modules if m.split('.')[0] == 'streamlit'))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    assert len(names) > 5  # the package's modules were found
