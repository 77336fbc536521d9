"""Stage 9: the segmentation pivot: keep the patch tokens, lay them back on their grid, and
label every cell: the tokens as colours, the class map, each class's share, and where the
class edges lie against the patch grid."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st
import torch

from ui.drawing import describe, figures, show
from ui.drawing.equation import latex
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import Choice, Question, Step
from ui.selection import models, session
from ui.serving import state, tour
from ui.stages.seg_pictures import GRID, INSIDE, ON_BORDER, big, edges_picture
from vit_core.explain.attention import allowed_from_mask
from vit_core.explain.segmentation import (
    boundary_stats,
    class_map,
    class_shares,
    edge_shares,
    patch_reach,
    pca_variance,
)

# the stage's own widget keys (AppTest addresses its widgets by them; shared: ui/keys.py)
SEG_TABLE = "seg_table"  # table: class shares

MOST = 0.5  # the colours show "most" of how the tokens differ when 3 components hold this much
FOLLOWS = 0.5  # the edges "follow the patch grid" when at least this share straddles a border
LEANS = 2  # ... and "the grid still shows" when they sit on borders this many times as often as
#            edges placed at random would
LABEL_PIXELS = Choice((  # how tokens label pixels: the right way, and what students often think
    "The final CLS vector is copied to every pixel",
    "Each patch token keeps its place and labels its own pixels",
    "CLS's attention map is cut at a threshold",
    "The model runs once for every pixel"), right=1)
EDGES = (  # do the class edges follow the grid? right: decided from the edges' numbers
    "They mostly follow the patch grid",
    "Most cut through patches, but the grid still shows",
    "They cut through patches; the grid hardly shows")


@dataclass(frozen=True)
class Ctx:
    """The stage's view, what each patch token has seen under the trace's mask, and (for a model
    with a segmentation head) the class of every pixel."""

    v: deck.View
    seen: torch.Tensor  # [N, N] bool: patch i's final token has seen patch j
    prefix_seen: bool  # every patch token has seen CLS (and DIST)
    labels: np.ndarray | None  # [H, W] class per pixel, None without a segmentation head

    def __getattr__(self, name):  # the view's fields (inp, tr, c, …)
        return getattr(self.v, name)


def view() -> Ctx:
    v = deck.load(text_free_note=True)
    c = v.c
    pre, N = c.num_prefix_tokens, c.num_patches
    allowed = allowed_from_mask(v.tr.mask)[:c.num_image_tokens, :c.num_image_tokens]
    labels = (class_map(v.tr["seg_logits"], c.grid, c.img_size).numpy()
              if "seg_logits" in v.tr else None)
    return Ctx(v, allowed[pre:pre + N, pre:pre + N], bool(allowed[pre:pre + N, :pre].all()),
               labels)


def _has_head(c) -> bool:
    return c.seg_classes > 0


def _class_names(c) -> list[str]:
    return ["background"] + [str(n) for n in (c.class_names or range(c.seg_classes - 1))]


def _reach(x: Ctx) -> str:
    """What a patch token has seen by the last layer, read from the mask this trace ran with:
    under the full (or prefix) mask every patch sees every patch; under the causal mask patch
    i sees only the tokens before it and itself."""
    N, reach = x.c.num_patches, patch_reach(x.seen)
    prefix = " and ".join(x.c.prefix_names)
    if reach["all"]:
        return "except every cell has already seen the whole image through attention"
    if reach["forwards"]:
        before = f"{prefix} and " if x.c.num_prefix_tokens and x.prefix_seen else ""
        return (f"except that attention has mixed the patches only forwards: under the "
                f"{x.tr.mask_kind} mask patch i has seen only {before}patches 0 to i (in "
                f"reading order), so patch 0 has seen no other patch and only the last, patch "
                f"{N - 1}, has seen the whole image")
    return (f"except that attention has mixed the patches: under the {x.tr.mask_kind} mask "
            f"each cell has seen between {reach['least']} and {reach['most']} of the {N} "
            f"patches")


def _intro(x: Ctx) -> str:
    c = x.c
    N, g = c.num_patches, c.grid
    drop = (f"drop {' and '.join(c.prefix_names)}, keep the {N} patch tokens"
            if c.num_prefix_tokens else
            f"keep all {N} patch tokens (this model has no CLS token to drop)")
    return (f"Classification keeps one summary of the image and throws away where things are. "
            f"Segmentation wants a label for every pixel, so it does the opposite: {drop}, and "
            f"put them back on their {g}×{g} grid. That grid is a feature map, like a CNN's, "
            f"{_reach(x)}. A small head scores each cell for every class, and the scores are "
            f"upsampled to pixels.")


# ---------------------------------------------------------------- the tokens as colours
def _tokens_facts(x: Ctx) -> torch.Tensor:
    pre, N = x.c.num_prefix_tokens, x.c.num_patches
    return pca_variance(x.tr["ln_final"][pre:pre + N])  # [3] shares of the variance


def _tokens_figure(x: Ctx, _) -> None:
    c = x.c
    g, N, D, pre = c.grid, c.num_patches, c.embed_dim, c.num_prefix_tokens
    K = rf"K_\mathrm{{seg}}={c.seg_classes}" if c.seg_classes else "K"
    shapes = [rf"Z_\mathrm{{patches}} = Z_L[{pre}{{:}}{pre + N}] \in \mathbb{{R}}^{{{N}\times{D}}}",
              rf"\mathbb{{R}}^{{{g}\times{g}\times{D}}}",
              rf"\mathbb{{R}}^{{{c.img_size}\times{c.img_size}\times {K}}}"]
    if x.presenting:  # a slide: the formula on one line above, the picture the whole width
        picture = formula = st.container()
        with formula:
            latex(r"\;\to\;".join(shapes))
    else:  # the page: the formula beside the picture, from top to bottom
        picture, formula = st.columns([3, 2], vertical_alignment="center")
        with formula:
            latex(r"\begin{gathered}" + r"\\ \downarrow\\ ".join(shapes) +
                  r"\end{gathered}")
    with picture:
        rgb = state.patch_pca(x.inp, x.name, session.chosen_mask())
        show.image(figures.tile([x.prep.crop, figures.array_image(rgb.transpose(2, 0, 1),
                                                                 c.img_size)], cols=2, cell=240),
                   "left: the image; right: each patch's final vector as a colour: its first "
                   "three principal components as red, green and blue", "patch-token-pca")


def _tokens_words(x: Ctx, share: torch.Tensor) -> str:
    said = (f"The three components explain {pct(float(share[0]))}, {pct(float(share[1]))} and "
            f"{pct(float(share[2]))} of the variance of the {x.c.num_patches} patch vectors, so "
            f"the colours show " + ("most" if float(share.sum()) >= MOST else "only part")
            + " of how the model's final patch tokens differ.")
    if _has_head(x.c):
        return said
    name = models.plain_label(x.name).split(" (")[0]
    return (said + f" {name} has no segmentation head, so there is no class map; the bundled "
                   f"shapes-classifier has one.")


def _tokens_describe(x: Ctx, share: torch.Tensor) -> str:
    return (f"Two pictures side by side: left, the image; right, each of its {x.c.num_patches} "
            f"patches painted one colour, its final vector's first three principal components "
            f"as red, green and blue. The three hold {pct(float(share[0]))}, "
            f"{pct(float(share[1]))} and {pct(float(share[2]))} of the variance; similar colours "
            f"mean similar vectors, and the colours themselves mean nothing fixed.")


def _tokens_notes(x: Ctx, _) -> str:
    vectors = ("this model has no final LayerNorm: its fc_norm comes after pooling"
               if x.c.fc_norm else "after the final LayerNorm")
    return (f"Each patch's final vector ({vectors}) is projected on the first three principal "
            f"components of this image's {x.c.num_patches} patch vectors, each scaled to 0–1 "
            f"over the patches. Patches with similar colours have similar final vectors; the "
            f"colours themselves have no fixed meaning and change from image to image.")


def _pixels_question(x: Ctx, _) -> Question:
    c = x.c
    g, P, N, pre = c.grid, c.patch_size, c.num_patches, c.num_prefix_tokens
    return Question(
        "How can a classifier's tokens label pixels?",
        f"Each patch token keeps its place: patch i is token {pre} + i"
        + (" (CLS comes first)" if pre == 1 else " (CLS and DIST come first)" if pre else "")
        + f", at row i // {g} and column i % {g}. Put the {N} final patch tokens back on the "
        f"{g}×{g} grid, score each for every class, and each cell labels its {P}×{P} pixels"
        + (f"; this model's head scores {c.seg_upsample}×{c.seg_upsample} cells per patch and "
           f"upsamples the scores to pixels." if x.labels is not None else
           "; this model has no segmentation head, so here its tokens are only coloured."),
        LABEL_PIXELS)


# ---------------------------------------------------------------- the class map
def _shares_facts(x: Ctx) -> dict[int, float]:
    """Each class found on the image and its share of the pixels, largest first."""
    return class_shares(x.labels)


def _map_figure(x: Ctx, found: dict[int, float]) -> None:
    c = x.c
    names, palette = _class_names(c), figures.class_palette(c.seg_classes - 1)
    entries = [(f"{names[k]} {pct(s, 0)}", tuple(palette[k])) for k, s in found.items()]
    r = c.seg_upsample
    painted = big(figures.class_map_image(x.prep.crop, x.labels, c.seg_classes - 1))
    show.image(figures.with_legend(figures.with_region_names(painted, x.labels, names), entries),
        f"each pixel's class, painted at 55 % over the image ({r}×{r} cells per patch, scores "
        f"upsampled bilinearly)", "class-map")


def _map_describe(x: Ctx, found: dict[int, float]) -> str:
    names, g, r = _class_names(x.c), x.c.grid, x.c.seg_upsample
    return (f"The image with each pixel's class painted over it ({g * r}×{g * r} cells), and a "
            f"legend naming each class found with its share of the pixels: "
            + ", ".join(f"{names[k]} {pct(s, 0)}" for k, s in found.items()) + ".")


def _map_words(x: Ctx, _) -> str:
    r, g = x.c.seg_upsample, x.c.grid
    cells = (f"so the map has {g}×{g} cells, one per patch" if r == 1 else
             f"so the map has {g * r}×{g * r} cells where the patch grid has {g}×{g}")
    return (f"Each pixel takes the class its scores rate highest; the head scores {r}×{r} "
            f"cell{'' if r == 1 else 's'} in every patch, {cells}.")


def _map_notes(x: Ctx, _) -> str:
    return ("The cells' scores are upsampled bilinearly to the pixels before each pixel takes "
            "the most likely class, so a class edge can fall anywhere, not only on a cell's "
            "border. The legend lists the classes found and their share of the pixels.")


# ---------------------------------------------------------------- each class's share
def _shares_figure(x: Ctx, found: dict[int, float]) -> None:
    deck.table(_share_rows(x, found), SEG_TABLE, height=38 + 35 * len(found))


def _share_rows(x: Ctx, found: dict[int, float]) -> list[dict]:
    names = _class_names(x.c)
    return [{"class": names[k], "share of the image": pct(s, 1)} for k, s in found.items()]


def _shares_describe(x: Ctx, found: dict[int, float]) -> str:
    rows = _share_rows(x, found)  # largest first
    first, last = rows[0].values(), rows[-1].values()
    return describe.table("each class found on the image and its share of the pixels, largest "
                           "first", rows, "The largest: {} at {}".format(*first)
                           + ("; the smallest: {} at {}.".format(*last) if len(rows) > 1 else "."))


def _shares_words(x: Ctx, found: dict[int, float]) -> str:
    names = _class_names(x.c)
    objects = {k: s for k, s in found.items() if k}
    if not objects:
        return "The whole image is labelled background: the head finds no object on it."
    top = max(objects, key=objects.get)
    if 0 not in found:
        said = "No pixel is labelled background"
    else:
        said = f"Background covers {pct(found[0])} of the pixels"
    if len(objects) == 1:
        return said + (f": every pixel is {names[top]}." if 0 not in found else
                       f" and {names[top]} the other {pct(objects[top])}.")
    return (said + f" and {len(objects)} object classes {pct(sum(objects.values()))}; the "
            f"largest is {names[top]}, at {pct(objects[top])}.")


# ---------------------------------------------------------------- edges against the grid
def _edges_facts(x: Ctx) -> dict:
    return boundary_stats(x.labels, x.c.patch_size)


def _edges_figure(x: Ctx, f: dict) -> None:
    show.image(figures.with_legend(edges_picture(x.prep.crop, x.labels, x.c), [
        (f"class edge on a patch border ({f['on_boundary']:,} pairs)", ON_BORDER),
        (f"class edge inside a patch ({f['inside']:,} pairs)", INSIDE),
        (f"patch border ({f['boundary_pairs']:,} of all {f['pairs']:,} neighbouring pairs "
         "straddle one)", GRID)]),
        f"the class map with its {x.c.grid}×{x.c.grid} patch grid: where the class changes "
        f"between two neighbouring pixels", "class-edges")


def _edges_describe(x: Ctx, f: dict) -> str:
    g = x.c.grid
    return (f"The class map with its {g}×{g} patch grid drawn in light grey, and every class "
            f"edge between two neighbouring pixels marked: on a patch border in yellow "
            f"({f['on_boundary']:,} pairs), inside a patch in magenta ({f['inside']:,} pairs); "
            f"the legend names both. {f['boundary_pairs']:,} of all {f['pairs']:,} "
            f"neighbouring pixel pairs straddle a patch border.")


def boundary_words(f: dict) -> str:
    """Whether the class edges follow the patch grid, worded from `boundary_stats`."""
    n, on = f["changes"], f["on_boundary"]
    if n == 0:
        return ("The class map is a single class here, so it has no edges to compare with the "
                "patch grid.")
    if not f["boundary_pairs"]:
        return (f"The image is a single patch, so no pixel pair straddles a patch border: all "
                f"{n:,} class edges lie inside it.")
    e = edge_shares(on, f["inside"], f["boundary_pairs"], f["pairs"])
    share, chance = e["share"], e["chance"]
    said = (f"Of the {n:,} neighbouring-pixel pairs where the class changes, {on:,} "
            f"({pct(share)}) straddle a patch boundary and {f['inside']:,} lie inside a patch; "
            f"only {pct(chance)} of all pixel pairs straddle one.")
    return said + (" So here the edges do follow the patch grid." if share >= FOLLOWS else
                   " So most edges cut through patches instead of following the grid.")


def _edges_words(x: Ctx, f: dict) -> str:
    return boundary_words(f)


def _edges_notes(x: Ctx, f: dict) -> str | None:
    n, on = f["changes"], f["on_boundary"]
    if n == 0 or not f["boundary_pairs"]:
        return None
    e = edge_shares(on, f["inside"], f["boundary_pairs"], f["pairs"])
    r = x.c.seg_upsample
    lean = (f"They sit on patch boundaries {e['ratio']:.0f}× as often as edges placed at "
            f"random would. " if e["share"] >= LEANS * e["chance"] else "")
    return (lean + f"Each patch token predicts {r}×{r} cells, and the cells' scores are "
            f"blended bilinearly before the most likely class is taken, so an edge can fall "
            f"inside a patch. Yellow: a class change between two pixels on either side of a "
            f"patch border; magenta: inside a patch.")


def _edges_question(x: Ctx, f: dict) -> Question:
    c = x.c
    q = "Do the class edges follow the patch grid, or cut through patches, and why?"
    on, total = f["on_boundary"], f["on_boundary"] + f["inside"]  # the legend's two counts
    if not total:
        return Question(q, "On this image the map is one class everywhere: there are no edges.",
                        Choice(EDGES))
    if not f["boundary_pairs"]:
        return Question(q, f"The image is a single patch, so no pixel pair straddles a patch "
                           f"border: all {total:,} class edges lie inside it.", Choice(EDGES))
    e = edge_shares(on, f["inside"], f["boundary_pairs"], f["pairs"])
    share, chance, ratio = e["share"], e["chance"], e["ratio"]
    right = 0 if share >= FOLLOWS else 1 if ratio >= LEANS else 2
    return Question(q, (
        f"{on:,} of the {total:,} neighbouring pixel pairs with different classes straddle "
        f"a patch border ({pct(share)}). Of all {f['pairs']:,} neighbouring pairs, "
        f"{f['boundary_pairs']:,} do ({pct(chance)}, about 1 in {round(1 / chance)}): "
        f"what edges placed at random would give. "
        + (f"The edges mostly follow the grid, {ratio:.0f}× as often on a border as at "
           f"random" if share >= FOLLOWS else
           f"Most edges cut through patches, yet they sit on patch borders {ratio:.0f}× "
           f"as often as edges placed at random would: the grid still shows"
           if ratio >= LEANS else
           f"The edges cut through patches as if the grid were not there: they sit on "
           f"patch borders no more often than edges placed at random would "
           f"({ratio:.1f}×)" if ratio <= 1 else
           f"The edges cut through patches, sitting on patch borders only {ratio:.1f}× "
           f"as often as edges placed at random would")
        + f". The head gives {c.seg_upsample}×{c.seg_upsample} cells per patch, and the "
        f"scores are upsampled bilinearly, so an edge can fall inside a patch."),
        Choice(EDGES, right))


STAGE = deck.Stage(
    slug="segmentation",
    name="The segmentation pivot",
    nav="Segmentation", icon=":material/texture:",
    story="Keep every patch token, put them back on the grid, and compare or label them: the "
          "same network's tokens map the picture.",
    view=view,
    intro=_intro,
    steps=(
        Step("tokens", "The patch tokens as colours", _tokens_figure,
             facts=_tokens_facts, words=_tokens_words, notes=_tokens_notes,
             describe=_tokens_describe,
             question=_pixels_question, reads=(tour.patch_pca,)),
        Step("map", "The class map on the image", _map_figure, facts=_shares_facts,
             words=_map_words, notes=_map_notes, describe=_map_describe, applies=_has_head),
        Step("shares", "How much of the image each class covers", _shares_figure,
             facts=_shares_facts, words=_shares_words, describe=_shares_describe,
             applies=_has_head),
        Step("edges", "Class edges against the patch grid", _edges_figure, facts=_edges_facts,
             words=_edges_words, notes=_edges_notes, describe=_edges_describe,
             question=_edges_question,
             asks=("boundary_pairs", "inside", "on_boundary", "pairs"),
             applies=_has_head),
    ),
)
