"""Colour in the figures (issue 43): colour never tells categories apart alone, and what a
figure draws stands out from what it is drawn on: text 4.5:1, meaningful marks (lines, markers,
bars, outlines) 3:1 (WCAG 2.1 1.4.1, 1.4.3, 1.4.11).

The contrast ratio is computed here, from WCAG 2.1's definition of relative luminance, over
the figures' plotly JSON: the pure figure functions called with small inputs, and the charts
of four pages read through AppTest. A chart's paper is transparent on the page (Streamlit's
chart theme), so a colour drawn on it is checked on the light theme's white and the dark
theme's #0e1117; a figure with its own plot background, on that. A mark drawn over a heatmap
is checked against every colour of the heatmap's scale; over a picture, against any colour at
all (a cube of 6³ colours): an outline group (the same shape drawn twice, dark under light)
passes when, on each of those colours, one of its lines stands out 3:1.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import plotly.colors
import pytest
from PIL import Image

from tests.support import arr, charts, open_app
from ui.drawing import figures

PAGES = ("#ffffff", "#0e1117")  # Streamlit's light and dark theme backgrounds
TEXT, MARK = 4.5, 3.0
CUBE = ["#{:02x}{:02x}{:02x}".format(*c) for c in itertools.product(range(0, 256, 51), repeat=3)]
# perceptually uniform sequential maps, and CVD-safe diverging ones (ColorBrewer's RdBu)
SCALES = {name: plotly.colors.get_colorscale(name) for name in
          ("Viridis", "Cividis", "Inferno", "Magma", "Plasma", "RdBu", "RdBu_r")}
NAMED = {"white": "#ffffff", "black": "#000000"}


# ---------------------------------------------------------------- WCAG 2.1, written out here
def rgb(colour: str, under: str = "#ffffff") -> tuple[float, float, float]:
    """A CSS colour as 0-255 RGB; a translucent one composited over `under`."""
    colour = NAMED.get(colour.strip().lower(), colour.strip())
    if colour.startswith("#"):
        h = colour[1:]
        h = "".join(c * 2 for c in h) if len(h) == 3 else h
        return tuple(float(int(h[i:i + 2], 16)) for i in (0, 2, 4))
    parts = [float(v) for v in re.findall(r"[\d.]+", colour)]
    alpha = parts[3] if len(parts) == 4 else 1.0
    base = rgb(under)
    return tuple(alpha * c + (1 - alpha) * b for c, b in zip(parts[:3], base, strict=True))


def luminance(colour: str, under: str = "#ffffff") -> float:
    def lin(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(c) for c in rgb(colour, under))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def ratio(a: str, b: str) -> float:
    """a drawn on b (a translucent a is composited over b)."""
    la, lb = luminance(a, b), luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def test_the_ratio_is_wcags():
    assert ratio("#000", "#fff") == pytest.approx(21.0)
    assert ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # WCAG's classic
    assert ratio("rgba(0,0,0,0.5)", "#ffffff") == pytest.approx(ratio("#808080", "#fff"),
                                                                abs=0.05)


# ---------------------------------------------------------------- reading a figure's JSON
def as_list(v, n: int | None = None) -> list:
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        return list(v)
    if isinstance(v, dict):  # a typed array: not a colour
        return []
    return [v] * (n or 1) if v is not None else []


def axes_of(item: dict) -> str:
    """A trace's or a shape's axes, "x|y" ("x domain" counts as x; paper as paper)."""
    x = str(item.get("xref", item.get("xaxis", "x"))).split()[0]
    y = str(item.get("yref", item.get("yaxis", "y"))).split()[0]
    return f"{x}|{y}"


def as_scale(v) -> list:
    """A colour scale as [[position, colour], ...] (a name looked up)."""
    scale = plotly.colors.get_colorscale(v) if isinstance(v, str) else v
    return [[round(float(p), 6), c.replace(" ", "")] for p, c in scale]


def at(scale: list, p: float) -> str:
    """The scale's colour at position p (0 to 1), interpolated in RGB as plotly does."""
    p = min(max(p, 0.0), 1.0)
    for (p0, c0), (p1, c1) in zip(scale, scale[1:], strict=False):
        if p0 <= p <= p1:
            w = 0.0 if p1 == p0 else (p - p0) / (p1 - p0)
            mix = [(1 - w) * a + w * b for a, b in zip(rgb(c0), rgb(c1), strict=True)]
            return "#" + "".join(f"{round(v):02x}" for v in mix)
    return scale[-1][1]


def scale_colours(trace: dict, layout: dict) -> list[str]:
    scale = trace.get("colorscale") or layout.get("coloraxis", {}).get("colorscale")
    if scale is None:  # the theme's: not checked here (category_problems names it)
        return []
    return [c for _, c in as_scale(scale)]


class Ground:
    """What each axes' marks are drawn on: the page (or plot background), a heatmap's colours,
    or a picture (any colour)."""

    def __init__(self, fig: dict):
        layout = fig["layout"]
        own = layout.get("plot_bgcolor")
        self.page = [own] if own else list(PAGES)
        self.under: dict[str, list[str]] = {}
        for t in fig["data"]:
            if t.get("type") == "heatmap":
                self.under.setdefault(axes_of(t), []).extend(scale_colours(t, layout)
                                                             or self.page)
            elif t.get("type") == "image":
                self.under.setdefault(axes_of(t), []).extend(CUBE)

    def of(self, item: dict) -> list[str]:
        return self.under.get(axes_of(item), self.page)


def check_group(colours: set[str], ground: list[str], need: float, what: str) -> list[str]:
    """On every colour of the ground, one of the group's colours stands out `need`:1."""
    worst = min(max(ratio(c, g) for c in colours) for g in ground)
    return [] if worst >= need else [f"{what} {sorted(colours)}: {worst:.2f}:1 < {need}:1"]


def visible_points(t: dict) -> bool:
    if t.get("visible") is False or t.get("opacity") == 0:
        return False
    if (t.get("marker") or {}).get("opacity") == 0 and "lines" not in str(t.get("mode", "")) \
            and "text" not in str(t.get("mode", "")):
        return False
    return True


# ---------------------------------------------------------------- contrast
def mark_problems(fig: dict) -> list[str]:
    """Lines, markers, bars and shapes: each (or its outline group) 3:1 on what it is on."""
    ground, found = Ground(fig), []
    groups: dict[tuple, set[str]] = {}
    for i, t in enumerate(fig["data"]):
        kind = t.get("type", "scatter")
        if kind in ("heatmap", "image") or not visible_points(t) or t.get("x") == [None]:
            continue  # (x [None]: a legend's entry alone)
        colours = set()
        line, marker = t.get("line") or {}, t.get("marker") or {}
        mode = str(t.get("mode", "lines+markers" if kind == "scatter" else ""))
        if kind == "scatter" and "lines" in mode:
            colours.add(line.get("color"))
        if kind in ("bar", "histogram") or "markers" in mode:
            if marker.get("opacity") != 0:  # a marker takes its line's colour (plotly.js)
                colours |= set(as_list(marker.get("color"))) or {line.get("color")}
        if not colours:  # nothing drawn but its text (checked by text_problems)
            continue
        if None in colours:
            found.append(f"trace {i} ({t.get('name')}): no colour of its own (the theme's "
                         f"colorway has 1.8:1 colours)")
            continue
        ground_i = ground.of(t)
        pattern = marker.get("pattern") or {}
        if any(as_list(pattern.get("shape"))) and pattern.get("fillmode") != "overlay":
            # plotly's "replace" mode: the bar is its pattern's lines alone, on nothing
            colours = {pattern.get("fgcolor") or c for c in colours}
        edge = (marker.get("line") or {})
        if edge.get("color") and min(as_list(edge.get("width")) or [0]) >= 1 and \
                (kind in ("bar", "histogram") or "markers" in mode):
            colours = {edge["color"]}  # a bar's or marker's outline carries it (a pale fill)
        else:  # a translucent trace or marker: its drawn colour on each ground colour
            alpha = t.get("opacity", 1) * (marker.get("opacity", 1) if "markers" in mode
                                           and isinstance(marker.get("opacity"), (int, float))
                                           else 1)
            if alpha < 1:
                colours = {"rgba({},{},{},{})".format(*(int(v) for v in rgb(c)), alpha)
                           for c in colours}
        if ground_i is ground.page:
            for c in colours:
                found += check_group({c}, ground_i, MARK, f"trace {i} ({t.get('name')})")
        else:  # an overlay: grouped with the traces drawn on the same points
            key = ("trace", axes_of(t), str(t.get("x"))[:200], str(t.get("y"))[:200])
            groups.setdefault(key, set()).update(colours)
    for s in fig["layout"].get("shapes", []):
        colour = (s.get("line") or {}).get("color")
        if colour is None or (s.get("line") or {}).get("width") == 0:
            continue
        key = ("shape", axes_of(s), s.get("type"), s.get("x0"), s.get("x1"), s.get("y0"),
               s.get("y1"))
        if ground.of(s) is ground.page and not s.get("fillcolor"):
            found += check_group({colour}, ground.page, MARK, f"shape {key}")
        elif s.get("fillcolor") and s.get("fillcolor") != "rgba(0,0,0,0)":
            continue  # a box: its edge against its own fill is not a meaning
        else:
            groups.setdefault(key, set()).add(colour)
    for key, colours in groups.items():
        probe = {"xref": key[1].split("|")[0], "yref": key[1].split("|")[1]}
        found += check_group(colours, ground.of(probe), MARK, f"{key[0]} over a map")
    return found


def text_problems(fig: dict) -> list[str]:
    """Every text colour the figure sets, 4.5:1 on what it is drawn on."""
    ground, found = Ground(fig), []
    layout = fig["layout"]

    def walk(d, where: str):
        if isinstance(d, dict):
            for k, v in d.items():
                if k in ("annotations", "shapes", "hoverlabel", "template", "images"):
                    continue
                if k.endswith("font") and isinstance(v, dict) and v.get("color"):
                    found.extend(check_group({v["color"]}, ground.page, TEXT, f"{where}.{k}"))
                else:
                    walk(v, f"{where}.{k}")
    walk(layout, "layout")
    for a in layout.get("annotations", []):
        colour = (a.get("font") or {}).get("color")
        if colour:
            under = [a["bgcolor"]] if a.get("bgcolor") else ground.page
            found += check_group({colour}, under, TEXT, f"annotation {a.get('text')!r}")
    for i, t in enumerate(fig["data"]):
        found += _trace_text(i, t, ground, layout)
    return found


def _trace_text(i: int, t: dict, ground: Ground, layout: dict) -> list[str]:
    kind, found = t.get("type", "scatter"), []
    if t.get("text") is None or not visible_points(t) and "text" not in str(t.get("mode")):
        return found
    if kind == "bar":
        n = len(as_list(t.get("x")) or as_list(t.get("y")))
        fills = as_list((t.get("marker") or {}).get("color"), n)
        inside = as_list((t.get("insidetextfont") or t.get("textfont") or {}).get("color"), n)
        if t.get("textposition", "auto") in ("auto", "inside"):
            if not inside or not fills:
                return [f"bar trace {i}: text inside bars without its own colour"]
            found += [p for c, f in zip(inside, fills, strict=False)
                      for p in check_group({c}, [f], TEXT, f"bar trace {i} text")]
    elif kind == "heatmap":
        colour = (t.get("textfont") or {}).get("color")
        scale = t.get("colorscale") or layout.get("coloraxis", {}).get("colorscale")
        z = arr(t["z"]).astype(float)
        lo, hi = t.get("zmin", np.nanmin(z)), t.get("zmax", np.nanmax(z))
        text = arr(t["text"]).astype(object)
        cells = {float(v) for v, s in zip(z.ravel(), text.ravel(), strict=True) if str(s)}
        if cells and colour is None:
            return [f"heatmap {i}: text in cells without its own colour"]
        fills = {at(as_scale(scale), (v - lo) / max(hi - lo, 1e-12)) for v in cells}
        found += [p for f in fills for p in check_group({colour}, [f], TEXT, f"heatmap {i}")]
    elif "text" in str(t.get("mode", "")):
        font = t.get("textfont") or {}
        on = ground.of(t)
        if on is not ground.page:  # text over a picture or a map: a halo under it
            halo = re.findall(r"#[0-9a-fA-F]{3,6}|black|white", str(font.get("shadow", "")))
            if not halo:
                return [f"trace {i}: text over a picture without a halo"]
            on = halo
        colours = as_list(font.get("color"))
        marker = t.get("marker") or {}
        if "markers" in str(t.get("mode")) and marker.get("opacity") != 0:  # text on its marker
            fills = as_list(marker.get("color"), len(colours))
            return [p for c, f in zip(colours, fills, strict=False)
                    for p in check_group({c}, [f], TEXT, f"trace {i} text on its marker")]
        found += [p for c in colours for p in check_group({c}, on, TEXT, f"trace {i} text")]
    return found


# ---------------------------------------------------------------- colour never alone
def category_problems(fig: dict) -> list[str]:
    """Traces side by side on the same axes, in different colours, differ in more than colour
    (trace type, mode, dash, marker symbol or bar pattern), and each is named (legend or text).
    A single trace whose points take several colours prints text on each. A heatmap's scale is
    perceptually uniform (or CVD-safe diverging), or it is a few flat colours told apart by text
    in the cells, named colour-bar ticks, or lightness (3:1 between them)."""
    found, seen = [], {}
    legend_groups = {t.get("legendgroup") for t in fig["data"]  # named by a trace shown
                     if t.get("legendgroup") and t.get("showlegend") is not False}
    for i, t in enumerate(fig["data"]):
        kind = t.get("type", "scatter")
        if kind == "heatmap":
            found += _scale_problem(i, t, fig["layout"])
            continue
        if kind == "image" or not visible_points(t) or t.get("x") == [None]:
            continue
        marker = t.get("marker") or {}
        colours = {c for c in as_list(marker.get("color")) + [(t.get("line") or {}).get("color")]
                   if c}
        if len(set(as_list(marker.get("color")))) > 1 and t.get("text") is None:
            found.append(f"trace {i}: points told apart by colour alone")
        line = t.get("line") or {}
        looks = (kind, str(t.get("mode")), line.get("dash"), line.get("width"),
                 str(marker.get("symbol")), str((marker.get("pattern") or {}).get("shape")))
        shown = bool(t.get("name") and (t.get("showlegend") is not False
                                        or t.get("legendgroup") in legend_groups)
                     or t.get("text") is not None)
        where = (str(t.get("x"))[:200], str(t.get("y"))[:200])  # an outline pair: one mark
        seen.setdefault(axes_of(t), []).append((i, frozenset(colours), looks, shown,
                                                t.get("legendgroup") or where))
    for traces in seen.values():
        for (i, ci, li, si, gi), (j, cj, lj, sj, gj) in itertools.combinations(traces, 2):
            if ci and cj and ci != cj and gi != gj:
                if li == lj:
                    found.append(f"traces {i} and {j}: the same look, told apart by colour")
                if not (si and sj) and li[0] == lj[0]:  # (a line beside bars is no category)
                    found.append(f"traces {i} / {j}: a category without a name")
    return found


def _scale_problem(i: int, t: dict, layout: dict) -> list[str]:
    named = t.get("colorscale") or layout.get("coloraxis", {}).get("colorscale")
    if named is None:
        return [f"heatmap {i}: the theme's colour scale, not one chosen for it"]
    scale = as_scale(named)
    colours = [c for _, c in scale]
    if any(as_scale(s) == scale for s in SCALES.values()):
        bar = t.get("colorbar") or layout.get("coloraxis", {}).get("colorbar") or {}
        said = (bar.get("title") or {}).get("text") if isinstance(bar.get("title"), dict) \
            else bar.get("title")
        if t.get("showscale") is not False and not said:
            return [f"heatmap {i}: a colour bar that does not say what colour is"]
        return []
    flat = sorted(set(colours))
    if len(flat) > 10:
        return [f"heatmap {i}: a continuous scale that is not perceptually uniform: {flat[:3]}"]
    labelled = t.get("text") is not None or (t.get("colorbar") or {}).get("ticktext")
    light = len(flat) == 2 and ratio(flat[0], flat[1]) >= MARK
    return [] if labelled or light else [f"heatmap {i}: flat colours told apart by hue alone"]


def problems(fig) -> list[str]:
    d = fig if isinstance(fig, dict) else fig.to_plotly_json()
    return mark_problems(d) + text_problems(d) + category_problems(d)


# ---------------------------------------------------------------- the figures
def crop(size: int = 32) -> Image.Image:
    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8))


def pure_figures() -> dict:
    rng = np.random.default_rng(1)
    m = rng.normal(size=(6, 6)).astype(np.float32)
    allowed = np.tril(np.ones((6, 6), bool))
    return {
        "top_k_bars": figures.top_k_bars(np.array([0.6, 0.3, 0.1]), ["a", "b", "c"]),
        "logit_bars": figures.logit_bars(np.array([2.0, -1.0, 0.5]), ["a", "b", "c"]),
        "word_bars": figures.word_bars(["a", "ball"], [0.9, 0.4]),
        "top_units_bars": figures.top_units_bars(np.array([3.0, 2.0]), [7, 1]),
        "before_after_bars": figures.before_after_bars(["a", "b"], [0.5, 0.2], [0.3, 0.4],
                                                       title="t", value_title="p"),
        "caption_pair": figures.caption_pair(["a"], [0.9], ["b"], [0.5], "x", "y", "t"),
        "similarity_bars": figures.similarity_bars(["CLS", "p0"], [0.99, 0.5], "t"),
        "histogram_pair": figures.histogram_pair(rng.normal(size=50), rng.normal(size=50)),
        "line_chart": figures.line_chart([0, 1, 2], {"a": [1, 2, 3], "b": [3, 2, 1],
                                                     "c": [2, 2, 2]}, "t", "x", "y"),
        "distance_chart": figures.distance_chart(rng.uniform(5, 50, (3, 4)), 30.0, "t"),
        "gelu_scatter": figures.gelu_scatter(np.array([-1.0, 1.0]), np.array([-0.1, 0.8]),
                                             np.linspace(-2, 2, 5), np.linspace(0, 2, 5), "CLS"),
        "residual_norms": figures.residual_norms([1.0, 2.0], [3.0, 4.0], [5.0, 6.0, 7.0]),
        "visible_keys_chart": figures.visible_keys_chart(
            {"full": [6] * 6, "causal": list(range(1, 7))}, [f"t{i}" for i in range(6)],
            ["t0", "t4"], 4),
        "matrix_heatmap": figures.matrix_heatmap(m, "t", x_title="k", y_title="q",
                                                 value_name="score", highlight_row=1,
                                                 highlight_col=2, boundaries=(1, 4)),
        "matrix_viridis": figures.matrix_heatmap(np.abs(m), "t", x_title="k", y_title="q",
                                                 value_name="weight", colorscale="Viridis",
                                                 zmid=None, highlight_row=0),
        "vector_strip": figures.vector_strip(m[0], "t", x_title="d", value_name="v"),
        "grid_heatmap": figures.grid_heatmap(m, "t", value_name="v", selected=(1, 2)),
        "grid_heatmap_pair": figures.grid_heatmap_pair(m, m, ("a", "b"), "t", value_name="v",
                                                       selected=((0, 0), (1, 1))),
        "similarity_tiles": figures.similarity_tiles(rng.uniform(-1, 1, (2, 2, 2, 2)), "t",
                                                     value_name="cos", selected=(0, 1)),
        "mask_figure": figures.mask_figure(allowed, 4, "t"),
        "head_switches": figures.head_switches(2, 3, [(0, 1), (1, 2)]),
        "patch_grid": figures.patch_grid(crop(), 8, selected=3),
        "patch_set_grid": figures.patch_set_grid(crop(), 8, [1, 2]),
        "labelled_patches": figures.labelled_patches(crop(), 8, "t", labels=list(range(16)),
                                                     outlined=[5]),
        "map_over_image": figures.map_over_image(crop(), m[:4, :4], "t", value_name="share"),
    }


PURE = pure_figures()


@pytest.mark.parametrize("name", sorted(PURE))
def test_every_figure_function_meets_contrast_and_never_uses_colour_alone(name):
    assert problems(PURE[name]) == []


def test_the_teachers_tally_tells_right_and_wrong_apart_by_more_than_colour():
    from ui.live.classes import Answer
    from ui.live.teacher import tally_figure

    found = [Answer(f"s{k}", "", "patches", "grid", "q", "choice", v, right, 1.0)
             for k, (v, right) in enumerate([("a", True), ("a", False), ("b", None),
                                             ("b", True)])]
    assert problems(tally_figure(found)) == []


def test_a_class_map_prints_each_class_name_on_its_region():
    """The names are drawn inside their regions (white on a black edge); the background and a
    class too small to hold a name are left to the legend."""
    labels = np.zeros((40, 40), int)
    labels[5:35, 2:18], labels[5:35, 22:38] = 1, 2
    painted = figures.class_map_image(Image.new("RGB", (40, 40), "grey"), labels, 3)
    big = painted.resize((160, 160), Image.Resampling.NEAREST)
    named = np.asarray(figures.with_region_names(big, labels, ["bg", "ab", "cd"]))
    changed = (named != np.asarray(big)).any(2)
    left, right, rest = changed[:, :72], changed[:, 88:], changed[:, 72:88]
    assert left.sum() > 20 and right.sum() > 20 and rest.sum() < left.sum() / 4
    colours = [tuple(c) for c in figures.class_palette(10)[1:]]
    assert len(set(colours)) == 10  # ten object classes, ten colours (and their names)


# ---------------------------------------------------------------- the pages' charts
PAGE_RUNS = [("overview", "shapes-classifier"), ("masks", "shapes-captioner-causal"),
             ("training", "shapes-classifier"), ("attention", "shapes-classifier")]


@pytest.mark.parametrize("page,model", PAGE_RUNS)
def test_every_chart_on_the_page_meets_contrast_and_never_uses_colour_alone(page, model):
    shown = charts(open_app(page, model))
    assert shown, f"no chart on {page}"
    found = {title: p for title, spec in shown.items() if (p := problems(spec))}
    assert found == {}


def test_the_mae_figures_tell_visible_from_hidden_by_more_than_colour():
    """The MAE stage's token strips, error map and loss bars, on made-up numbers."""
    from ui.stages.mae.pictures import error_map, loss_bars, token_strips
    from vit_core.explain.mae_facts import MAENumbers

    hidden, visible = (0, 2, 5, 7, 8, 11, 13, 14, 15), (1, 3, 4, 6, 9, 10, 12)
    f = MAENumbers(16, 4, 8, 3, 8, 8, "random", 0.5, hidden, visible,
                   np.linspace(0.01, 0.2, 16), None, False, (), -1.0, 1.0)
    for fig in (token_strips(f), error_map(f), loss_bars(f)):
        assert problems(fig) == []
