"""The "Why this answer?" stage's checks for tests/test_figure_alt.py: each step's text alternative
read back against its figure as drawn (the plotly JSON of the maps, the curves, the sanity tiles,
the patching grids, a caption word's map; the guess's bars), and where the figure allows it
against this test's own arithmetic on what is drawn: each curve's AUC is the trapezoid area
under its drawn line, each sanity ρ Spearman's correlation of the two drawn tiles, the framed
patches of a word's map its k largest drawn values.

The page is opened with a guess of the first k patches and "Test my guess" pressed
(tests/alt_text.page_of), so that every step is drawn and the guess step shows its scores; the
grid it showed before is kept in alt_text.GUESS_GRID."""

from __future__ import annotations

import base64
import io
import re

import numpy as np
from PIL import Image

from tests.alt_text import GUESS_GRID, NUM, close
from tests.support import arr
from ui.stages.why.keys import (
    WHY_GUESS_SCORES,
    WHY_MAPS,
    WHY_PATCH,
    WHY_RACE,
    WHY_SANITY,
    WHY_WORD_FIGURE,
)
from vit_core.explain import why_guess_facts as gf

CELL = r"patch (\d+) \(row (\d+), column (\d+)\)"
FRAME = "#ffd60a"  # the colour of a word map's framed patches (ui/stages/why/words.py)


def _z(trace: dict) -> np.ndarray:
    return np.array(arr(trace["z"]), dtype=np.float64)


def _titles(spec: dict) -> list[str]:
    return [a.get("text", "") for a in spec["layout"].get("annotations", [])]


def _on(spec: dict, axis: str, kind: str = "scatter") -> list[dict]:
    """The traces of one panel (`axis`: 'x', 'x2', …) of a figure."""
    return [t for t in spec["data"] if t.get("type") == kind and t.get("xaxis", "x") == axis]


def tiles_of(z: np.ndarray) -> list[np.ndarray]:
    """The tiles of ui/drawing/figures/tiles (one heatmap, tiles apart by blank rows and
    columns), in reading order: cut where a whole row or column is blank."""
    def runs(filled: np.ndarray) -> list[tuple[int, int]]:
        edges = np.flatnonzero(np.diff(np.r_[0, filled.astype(int), 0]))
        return list(zip(edges[::2], edges[1::2], strict=True))

    finite = np.isfinite(z)
    return [z[r0:r1, c0:c1] for r0, r1 in runs(finite.any(1)) for c0, c1 in runs(finite.any(0))]


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's ρ in float64 with average ranks for ties, written out here."""
    def ranks(v: np.ndarray) -> np.ndarray:
        order = np.argsort(v, kind="stable")
        r = np.empty(len(v))
        r[order] = np.arange(len(v), dtype=np.float64)
        for value in np.unique(v):  # ties share their mean rank
            same = v == value
            r[same] = r[same].mean()
        return r

    ra, rb = ranks(a.reshape(-1)), ranks(b.reshape(-1))
    ra, rb = ra - ra.mean(), rb - rb.mean()
    norm = np.sqrt((ra ** 2).sum() * (rb ** 2).sum())
    return float((ra * rb).sum() / norm) if norm > 0 else float("nan")


def _patches_in(shapes: list[dict], P: int, g: int) -> set[int]:
    """The patches (row-major) whose cells these rectangles outline, from where their centres
    fall on the picture's pixels."""
    return {int((s["y0"] + s["y1"]) / 2 // P) * g + int((s["x0"] + s["x1"]) / 2 // P)
            for s in shapes if s.get("type") == "rect"}


# ---------------------------------------------------------------- the steps
def guess(page, alt: str) -> None:
    """The tested guess: each bar's AUC, random orders' mean ± spread, the dashed line; and the
    grid drawn before the test: its patches numbered 0 to N-1 and the guess outlined."""
    spec = page.chart(WHY_GUESS_SCORES)
    one, rand = [t for t in spec["data"] if t["type"] == "bar"]
    for label, x in zip(one["y"], arr(one["x"]), strict=True):
        name = "your guess" if label.startswith("Your guess") else label
        close(re.search(rf"{re.escape(name)} ({NUM})", alt).group(1), x, label)
    mean, spread = re.search(rf"random orders ({NUM}) ± ({NUM})", alt).groups()
    close(mean, rand["x"][0], "random")
    close(spread, rand["error_x"]["array"][0], "spread")
    line, = [s for s in spec["layout"]["shapes"] if s.get("line", {}).get("dash") == "dash"]
    close(re.search(rf"a dashed line at ({NUM})", alt).group(1), line["x0"], "dashed line")
    assert abs(line["x0"] - (rand["x"][0] - gf.RANDOM_SPREADS * rand["error_x"]["array"][0])
               ) < 1e-9
    grid_alt, grid = GUESS_GRID[page.model]
    n, P = page.config.num_patches, page.config.patch_size
    assert f"from 0 to {n - 1}" in grid_alt, grid_alt
    cells = [int(v) for t in grid["data"] if "customdata" in t
             for v in np.asarray(arr(t["customdata"])).reshape(-1)]
    assert sorted(cells) == list(range(n))  # a clickable cell per patch, each its number
    said = [int(p) for p in re.search(r"outlined: patches ([\d, ]+)\.", grid_alt)
            .group(1).split(", ")]
    boxes = _patches_in(grid["layout"].get("shapes", []), P, page.config.grid)
    assert sorted(boxes) == said == list(range(gf.guess_size(page.config.grid))), (boxes, said)


def maps(page, alt: str) -> None:
    """Each method's range as drawn and its largest patch, in the figure's order of panels."""
    spec = page.chart(WHY_MAPS)
    heat = [t for t in spec["data"] if t["type"] == "heatmap"]
    said = re.findall(rf"(?:\. |; )([A-Z][\w -]+?) from ({NUM}) to ({NUM}), the largest at {CELL}",
                      alt)
    assert [s[0] for s in said] == _titles(spec)[:len(heat)] and len(heat) == 6, (said, alt)
    g = page.config.grid
    for (name, lo, hi, p, r, c), t in zip(said, heat, strict=True):
        z = _z(t)
        close(lo, z.min(), name)
        close(hi, z.max(), name)
        assert int(p) == int(r) * g + int(c) and z[int(r), int(c)] == z.max(), (name, p)


def _grey_patches(image: dict, P: int) -> int:
    """How many patches of a drawn picture are all mid-grey (a JPEG: within a few levels)."""
    data = base64.b64decode(image["source"].split(",", 1)[1])
    px = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.int16)
    g = px.shape[0] // P
    cells = px[:g * P, :g * P].reshape(g, P, g, P, 3)
    return int((np.abs(cells - 128).max(axis=(1, 3, 4)) <= 6).sum())


def _trapezoid(t: dict) -> float:
    x, y = arr(t["x"]).astype(np.float64), arr(t["y"]).astype(np.float64)
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2))


def _legend(lines: list[dict]) -> dict[str, tuple[float, float]]:
    """Each method's line on a curve panel: name -> (its deletion AUC, its insertion AUC) as
    its legend prints them."""
    out = {}
    for t in lines:
        m = re.fullmatch(rf"(.+) ({NUM}) / ({NUM})", t.get("name") or "")
        if m and "random" not in m[1]:
            out[m[1]] = (float(m[2]), float(m[3]))
    return out


def test(page, alt: str) -> None:
    """The frame shown, the fastest order and the best insertion, random orders' band: each
    number the legend's, and each AUC the area under the line drawn."""
    spec = page.chart(WHY_RACE)
    shown = re.search(rf"Left: the image with (\d+) patches greyed in (.+?)'s order; the "
                      rf"probability of .+? is ({NUM}) there \(it was ({NUM}) with none", alt)
    removed, fastest, now, first = shown.groups()
    assert _titles(spec)[0].startswith(f"{removed} patches greyed: P = ")
    close(now, float(_titles(spec)[0].rsplit("= ", 1)[1]), "now")
    marker, = [t for t in _on(spec, "x2") if t.get("mode") == "markers"]
    close(now, marker["y"][0], "the marker")
    assert _grey_patches(_on(spec, "x", "image")[0], page.config.patch_size) == int(removed)
    bands = re.findall(rf"\(their area ({NUM}) ± ({NUM})\)", alt)
    lowest = re.search(rf"the lowest area is (.+?)'s, ({NUM})", alt).groups()
    highest = re.search(rf"the highest area is (.+?)'s, ({NUM})", alt).groups()
    for i, (axis, (name, auc), pick) in enumerate((("x2", lowest, min), ("x3", highest, max))):
        lines = [t for t in _on(spec, axis) if t.get("mode") == "lines"]
        aucs = _legend(lines)
        assert len(aucs) == 6, aucs  # a line per method, its AUCs in its legend
        assert name == pick(aucs, key=lambda m: aucs[m][i]), (name, aucs)
        close(auc, aucs[name][i], name)
        for t in lines:  # the legend's AUC is the area under the line drawn
            for _, both in _legend([t]).items():
                close(f"{both[i]:.3f}", _trapezoid(t), t["name"])
        mean_line = next(t for t in lines if re.match(r"\d+ random orders", t.get("name") or ""))
        m, s = re.findall(rf"({NUM}) ± ({NUM})", mean_line["name"])[i]
        close(bands[i][0], float(m), "random mean")
        close(bands[i][1], float(s), "random spread")
        close(bands[i][0], _trapezoid(mean_line), "the random mean line's area")
    assert fastest == lowest[0]
    fastest_line = next(t for t in _on(spec, "x2") if (t.get("name") or "").startswith(
        fastest + " "))
    close(first, arr(fastest_line["y"])[0], "none greyed")


def sanity(page, alt: str) -> None:
    """Each method's ρ is its tile pair's title and Spearman's ρ of the two drawn tiles."""
    spec = page.chart(WHY_SANITY)
    z = _z(next(t for t in spec["data"] if t["type"] == "heatmap"))
    tiles = tiles_of(z)
    titles = _titles(spec)
    names, rhos = titles[:6], titles[6:]
    g = page.config.grid
    assert len(tiles) == 12 and all(t.shape == (g, g) for t in tiles)
    assert f"Six pairs of {g} by {g} patch maps" in alt
    for i, name in enumerate(names):
        said = re.search(rf"{re.escape(name)} ρ ({NUM}|undefined)", alt).group(1)
        assert rhos[i] == f"ρ = {said}", (name, said, rhos[i])
        mine = _spearman(tiles[i], tiles[i + 6])
        if said == "undefined":
            assert mine != mine, (name, mine)
        else:
            close(said, mine, f"{name}: Spearman's ρ of the drawn tiles")


def patching(page, alt: str) -> None:
    """The colour scale, the shares' ranges per panel and where each panel is largest."""
    spec = page.chart(WHY_PATCH)
    heat = [t for t in spec["data"] if t["type"] == "heatmap"]
    tiles, heads = tiles_of(_z(heat[0])), _z(heat[1])
    axis = spec["layout"]["coloraxis"]
    lo, hi = re.search(rf"scale from ({NUM}) \(blue\) through 0 \(white\) to ({NUM}) \(red\)",
                       alt).groups()
    close(lo, axis["cmin"], "cmin")
    close(hi, axis["cmax"], "cmax")
    assert re.search(rf"Left: {len(tiles)} tiles", alt) and len(tiles) == page.config.depth
    block = re.search(rf"The shares run from ({NUM}) to ({NUM}), the largest in block (\d+) at "
                      rf"(?:{CELL}|(\[\w+\]))", alt).groups()
    every = np.concatenate([t[np.isfinite(t)] for t in tiles])
    close(block[0], every.min(), "lowest share")
    close(block[1], every.max(), "highest share")
    tile = tiles[int(block[2])]
    n = page.config.num_prefix_tokens
    if block[6]:  # a prefix token, in the tile's top row
        value = tile[0, [f"[{p}]" for p in page.config.prefix_names].index(block[6])]
    else:
        value = tile[(1 if n else 0) + int(block[4]), int(block[5])]
        assert int(block[3]) == int(block[4]) * page.config.grid + int(block[5])
    assert value == every.max(), (block, value, every.max())
    h = re.search(rf"heads across, from ({NUM}) to ({NUM}), the largest at head (\d+) of block "
                  rf"(\d+)", alt).groups()
    close(h[0], heads.min(), "lowest head")
    close(h[1], heads.max(), "highest head")
    assert heads[int(h[3]), int(h[2])] == heads.max(), h


def words(page, alt: str) -> None:
    """The word's map: its method and strongest patch, the k framed (its k largest values),
    numbered 1 to k on the greyed image; P(word) before and after; the caption written again
    is the one the page prints under the figure."""
    spec = page.chart(WHY_WORD_FIGURE)
    left, right = _titles(spec)[:2]
    method, word = re.search(r"Left: the (.+?) map of the word “(.+?)”", alt).groups()
    assert left.startswith(f"{method}: its top ")
    z = _z(_on(spec, "x", "heatmap")[0])
    g, P = page.config.grid, page.config.patch_size
    r, c = map(int, re.search(r"strongest patch is at row (\d+), column (\d+)", alt).groups())
    assert z[r, c] == z.max()
    k = int(re.search(r"its top (\d+) patches are framed", alt).group(1))
    framed = _patches_in([s for s in spec["layout"]["shapes"]
                          if s.get("line", {}).get("color") == FRAME], P, g)
    assert len(framed) == k and z.reshape(-1)[sorted(framed)].min() >= np.sort(
        z.reshape(-1))[-k], (framed, k)
    labels = next(t for t in _on(spec, "x2") if t.get("mode") == "text")["text"]
    assert sorted(int(v) for v in labels if v) == list(range(1, k + 1))
    assert {i for i, v in enumerate(labels) if v} == framed
    before, after = re.search(rf"P\(“{re.escape(word)}”\) ({NUM}) before, ({NUM}) with them "
                              rf"grey", alt).groups()
    assert f"P({word}) {before} → {after}" in right, (right, before, after)
    caption = re.search(r"the caption reads (“.*?”|no word at all)", alt).group(1)
    printed = next(m.value for m in page.at.markdown if m.value.startswith("Written again"))
    shown = re.sub(r"\*\*(.+?)\*\*✱", r"\1", printed.split(": ", 1)[1].split(" — ")[0])
    assert shown.split(" (and ")[0] == caption or caption == "no word at all", (shown, caption)
    moved = re.findall(r"\*\*(.+?)\*\*✱", printed)
    said = re.search(r"the words not at their old place: (.+?)\.$", alt)
    assert moved == (said.group(1).split(", ") if said else []), (moved, alt)


CHECKS = {"guess": guess, "maps": maps, "test": test, "sanity": sanity, "patching": patching,
          "words": words}
