"""Pictures (PIL images) drawn from the crop and per-patch maps: overlays, colour scales,
tiles, class maps and their legends. Text drawn into a picture is PICTURE_TEXT_PX and the picture
says so (with_text_px), since it shrinks with the picture. Pure: never imports streamlit."""

from __future__ import annotations

import numpy as np
from PIL import Image

from ui.drawing.readable import PICTURE_TEXT_PX


def _colormap(values: np.ndarray, cmap: str = "inferno") -> np.ndarray:
    from matplotlib import colormaps

    return (colormaps[cmap](values)[..., :3] * 255).astype(np.uint8)


def overlay(crop: Image.Image, grid_values: np.ndarray, alpha: float = 0.5,
            cmap: str = "inferno", normalise: bool = True) -> Image.Image:
    """A g x g map (e.g. attention per patch) upsampled over the image, blended with it."""
    v = np.asarray(grid_values, dtype=np.float64)
    if normalise:
        v = (v - v.min()) / max(v.max() - v.min(), 1e-12)
    size = crop.size[0]
    heat = Image.fromarray(_colormap(np.clip(v, 0, 1), cmap)).resize((size, size),
                                                                    Image.Resampling.NEAREST)
    return Image.blend(crop.convert("RGB"), heat, alpha)


def with_scale(img: Image.Image, lo: float, hi: float, label: str, cmap: str = "inferno",
               fmt: str = "{:.1%}", font_size: int = PICTURE_TEXT_PX) -> Image.Image:
    """The image with a colour scale under it: the colour map from `lo` (left) to `hi` (right),
    both printed, and what the colour is (an overlay's colour bar, readable without hovering).
    A label too long for one line takes two; the picture is enlarged only as far as the
    longer line needs (a larger picture is drawn smaller on a slide or a phone, its text too)."""
    from PIL import ImageDraw, ImageFont

    low, high = fmt.format(lo), fmt.format(hi)
    draw = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    font = ImageFont.load_default(size=font_size)

    def width(lines: list[str]) -> float:  # the first line holds low and high too
        return max([draw.textlength(lines[0], font=font) + draw.textlength(low + high, font=font)
                    + 3 * font_size, *(draw.textlength(t, font=font) + 2 * font_size
                                       for t in lines[1:])])

    words = label.split()
    lines = min(([label], *([" ".join(words[:i]), " ".join(words[i:])]
                            for i in range(1, len(words)))), key=width)
    if width([label]) <= img.size[0]:
        lines = [label]
    grow = max(1.0, width(lines) / img.size[0])
    img = img.resize((int(np.ceil(img.size[0] * grow)), int(np.ceil(img.size[1] * grow))),
                     Image.Resampling.NEAREST)
    W, H = img.size
    bar_h, pad, line = font_size, 6, font_size + 8
    sheet = Image.new("RGB", (W, H + pad + bar_h + 4 + line * len(lines) + pad), "white")
    sheet.paste(img.convert("RGB"), (0, 0))
    ramp = _colormap(np.tile(np.linspace(0, 1, W - 2 * pad), (bar_h, 1)), cmap)
    sheet.paste(Image.fromarray(ramp), (pad, H + pad))
    draw = ImageDraw.Draw(sheet)
    y = H + pad + bar_h + 4
    draw.text((pad, y), low, fill=(30, 30, 30), font=font)
    draw.text((W - pad - draw.textlength(high, font=font), y), high, fill=(30, 30, 30), font=font)
    for k, text in enumerate(lines):
        draw.text(((W - draw.textlength(text, font=font)) / 2, y + k * line), text,
                  fill=(30, 30, 30), font=font)
    return with_text_px(sheet, font_size)


def with_text_px(img: Image.Image, px: int) -> Image.Image:
    """Say on the picture how large the text drawn into it is (ui/show.image tells the page,
    and a test reads the size it is drawn at: it shrinks with the picture)."""
    img.info["text_px"] = min(px, img.info.get("text_px", px))
    return img


def tile(images: list[Image.Image], cols: int, pad: int = 4, labels: list[str] | None = None,
         cell: int | None = None, font_size: int = PICTURE_TEXT_PX,
         framed: int | None = None) -> Image.Image:
    """Images in a grid on white, optionally each with a label above it (the cells are widened
    until the longest label fits), image number `framed` in a red frame."""
    from PIL import ImageDraw, ImageFont

    cell = cell or images[0].size[0]
    font = ImageFont.load_default(size=font_size)
    draw = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    if labels:
        cell = max(cell, int(max(draw.textlength(t, font=font) for t in labels)) + 2)
    label_h = font_size + 6 if labels else 0
    rows = (len(images) + cols - 1) // cols
    sheet = Image.new("RGB", (cols * (cell + pad) + pad, rows * (cell + pad + label_h) + pad),
                      "white")
    draw = ImageDraw.Draw(sheet)
    for i, im in enumerate(images):
        r, c = divmod(i, cols)
        x, y = pad + c * (cell + pad), pad + r * (cell + pad + label_h)
        if labels:
            draw.text((x, y), labels[i], fill=(40, 40, 40), font=font)
        sheet.paste(im.resize((cell, cell), Image.Resampling.NEAREST), (x, y + label_h))
        if i == framed:
            draw.rectangle([x, y + label_h, x + cell - 1, y + label_h + cell - 1],
                           outline="#ff2d55", width=4)
    return with_text_px(sheet, font_size) if labels else sheet


def array_image(a: np.ndarray, cell: int) -> Image.Image:
    """A [C, P, P] array in [0, 1] (or [P, P]) as an upscaled RGB/grey image."""
    a = np.asarray(a, dtype=np.float64)
    a = a.transpose(1, 2, 0) if a.ndim == 3 else a
    img = Image.fromarray((np.clip(a, 0, 1) * 255).astype(np.uint8).squeeze())
    return img.convert("RGB").resize((cell, cell), Image.Resampling.NEAREST)


def class_colours(n: int) -> list[tuple[float, ...]]:
    """n distinct colours for class maps (RGB in [0, 1]): Okabe–Ito's six (no black: the
    background is black; no yellow: the segmentation's edge picture marks edges in yellow), then
    Paul Tol's wine, teal, olive and indigo, cycling. Ten classes cannot all be told apart by
    colour, so a class map also prints each class's name on it (with_region_names) and lists the
    colours under it (with_legend)."""
    from ui.drawing import palette

    hexes = [palette.OKABE_ITO[k] for k in ("orange", "sky blue", "bluish green", "blue",
                                            "vermillion", "reddish purple")]
    hexes += ["#882255", "#44AA99", "#999933", "#332288"]
    return [tuple(int(h[i:i + 2], 16) / 255 for i in (1, 3, 5)) + (1.0,)
            for h in (hexes[k % len(hexes)] for k in range(n))]


def class_palette(n_classes: int) -> np.ndarray:
    """[n_classes + 1, 3] uint8 colours of a class map: background (0) black, then classes
    1..n_classes in class_colours(n_classes)."""
    return (np.array([[0, 0, 0]] + [[int(255 * v) for v in col[:3]] for col in
            class_colours(n_classes)])).astype(np.uint8)


def class_map_image(crop: Image.Image, labels: np.ndarray, n_classes: int,
                    alpha: float = 0.55) -> Image.Image:
    """A per-pixel class map painted over the crop: background (0) black, classes 1..n_classes
    in class_colours(n_classes)."""
    return Image.blend(crop, Image.fromarray(class_palette(n_classes)[labels]), alpha)


def _inside(region: np.ndarray) -> tuple[int, int]:
    """A pixel (row, col) deep inside a boolean region: the last one left when the region is
    eroded step by step (a 4-neighbour erosion), nearest the centre of what is left."""
    core = region
    while True:
        thin = core.copy()
        thin[1:, :] &= core[:-1, :]
        thin[:-1, :] &= core[1:, :]
        thin[:, 1:] &= core[:, :-1]
        thin[:, :-1] &= core[:, 1:]
        thin[[0, -1], :] = False
        thin[:, [0, -1]] = False
        if not thin.any():
            break
        core = thin
    rows, cols = np.nonzero(core)
    k = np.argmin((rows - rows.mean()) ** 2 + (cols - cols.mean()) ** 2)
    return int(rows[k]), int(cols[k])


def with_region_names(img: Image.Image, labels: np.ndarray, names: list[str],
                      font_size: int = PICTURE_TEXT_PX, skip: tuple[int, ...] = (0,),
                      min_share: float = 0.002) -> Image.Image:
    """Each class's name printed on its region of a class map (`labels`, any size: scaled to
    the picture), white with a black edge (readable on any colour): the classes are told apart
    by their names, not by colour alone. Classes in `skip` (the background) and regions under
    `min_share` of the pixels are left to the legend."""
    from PIL import ImageDraw, ImageFont

    lab = np.asarray(labels)
    out = img.convert("RGB").copy()
    draw = ImageDraw.Draw(out)
    font = ImageFont.load_default(size=font_size)
    sy, sx = out.size[1] / lab.shape[0], out.size[0] / lab.shape[1]
    for k in np.unique(lab):
        region = lab == k
        if int(k) in skip or region.mean() < min_share:
            continue
        r, c = _inside(region)
        draw.text(((c + 0.5) * sx, (r + 0.5) * sy), names[int(k)], fill="white", font=font,
                  anchor="mm", stroke_width=max(2, font_size // 8), stroke_fill="black")
    return with_text_px(out, font_size)


def with_legend(img: Image.Image, entries: list[tuple[str, tuple[int, int, int]]],
                font_size: int = PICTURE_TEXT_PX) -> Image.Image:
    """The image with a legend under it: one colour swatch and its name per entry, in rows
    that fit the image's width (what each colour of a class map means, readable without
    hovering)."""
    from PIL import ImageDraw, ImageFont

    font = ImageFont.load_default(size=font_size)
    W = img.size[0]
    sw, gap, pad = font_size, 14, 6
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    widths = [sw + 6 + int(measure.textlength(name, font=font)) for name, _ in entries]
    rows, row, used = [], [], 0
    for i, w in enumerate(widths):
        if row and used + w > W - 2 * pad:
            rows.append(row)
            row, used = [], 0
        row.append(i)
        used += w + gap
    if row:
        rows.append(row)
    line = font_size + 8
    sheet = Image.new("RGB", (W, img.size[1] + pad + line * len(rows) + pad), "white")
    sheet.paste(img, (0, 0))
    draw = ImageDraw.Draw(sheet)
    for r, members in enumerate(rows):
        x, y = pad, img.size[1] + pad + r * line
        for i in members:
            name, colour = entries[i]
            draw.rectangle([x, y + 2, x + sw, y + 2 + sw], fill=tuple(int(v) for v in colour),
                           outline=(90, 90, 90))
            draw.text((x + sw + 6, y), name, fill=(30, 30, 30), font=font)
            x += widths[i] + gap
    return with_text_px(sheet, font_size)


def enlarged_patch(crop: Image.Image, row: int, col: int, patch_size: int,
                   cell: int) -> Image.Image:
    """The crop's patch at (row, col), its pixels enlarged to cell x cell."""
    P = patch_size
    pixels = np.asarray(crop)[row * P:(row + 1) * P, col * P:(col + 1) * P]
    return array_image(pixels.transpose(2, 0, 1) / 255.0, cell)  # [C, P, P] in [0, 1]
