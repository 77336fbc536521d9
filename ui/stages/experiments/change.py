"""Step 1 of the Experiments stage: choose a change, and see what the model is fed."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ui import keys
from ui.drawing import figures
from ui.drawing.equation import latex
from ui.lesson import deck
from ui.selection import controls
from ui.stages import common
from ui.stages.experiments.keys import EXP_ALTERED, EXP_CLEAR, EXP_GRID, EXP_INPUT
from ui.stages.experiments.printed import listed
from ui.stages.experiments.view import KINDS, SHUFFLES, Ctx, mask_options
from vit_core.explain import experiment_facts as facts
from vit_core.io.images import denormalize
from vit_core.masks import parse_window


def _toggle_clicked_patch() -> None:
    """on_select of the grid: a click adds the patch to the grey set, or takes it out."""
    ss = st.session_state
    event = ss.get(EXP_GRID)
    chosen = set(ss.get(keys.EXP_OCCLUDED, []))
    for point in (event or {}).get("selection", {}).get("points", []):
        data = point.get("customdata")
        if data is not None:
            chosen ^= {int(data[0] if isinstance(data, list) else data)}
    ss[keys.EXP_OCCLUDED] = sorted(chosen)


def _clear_patches() -> None:
    st.session_state[keys.EXP_OCCLUDED] = []


@dataclass(frozen=True)
class Change:
    """What the chosen change does, in numbers."""

    kind: str
    layer: int  # heads: the block
    heads: tuple[int, ...]  # heads: those switched off
    n_heads: int
    greyed: tuple[int, ...]  # occlude: the patches greyed out
    rgb: tuple[int, ...]  # occlude: the normalisation mean, 0-255, that they hold
    stay: tuple[int, ...]  # shuffles: the patches this seed's order leaves in their own cell
    n_patches: int
    new_mask: str | None  # mask: the mask of the run after
    text_positions: bool  # positions: a captioner keeps its text positions


def change_facts(x: Ctx) -> Change:
    c = x.c
    return Change(x.kind, x.layer, tuple(h for _, h in x.arg) if x.kind == "heads" else (),
                  c.num_heads, x.arg if x.kind == "occlude" else (), facts.mean_rgb(c.mean),
                  facts.fixed_points(x.altered.perm), c.num_patches,
                  x.arg[0] if x.kind == "mask" else None, c.has_text)


def _choice(x: Ctx, slide: bool) -> None:
    """The intervention and what it takes."""
    c = x.c
    st.radio("Intervention", list(KINDS), key=keys.EXP_KIND, horizontal=not slide)
    if x.kind == "heads":  # only this change uses a block: the layer slider is drawn with it
        controls.layer(c)
        st.multiselect(f"Heads of block {x.layer} to switch off", list(range(c.num_heads)),
                       format_func=lambda h: f"head {h}", key=keys.EXP_HEADS)
    elif x.kind == "occlude":
        st.button("Grey out no patch", key=EXP_CLEAR, on_click=_clear_patches)
    elif x.kind in SHUFFLES:
        st.number_input("Shuffle seed (which random order)", 0, 10_000, key=keys.EXP_SEED)
    elif x.kind == "mask":
        st.selectbox(f"Mask to run with instead of {x.run_mask}",
                     mask_options(c, x.run_mask), key=keys.EXP_MASK,
                     format_func=common.mask_label,
                     help="Window masks: each patch attends only to the patches of its own "
                          "M×M window (CLS and DIST stay global; text keeps the model's own "
                          "rule); shifted: on blocks 1, 3, 5, … the windows move by M // 2.")


def change_figure(x: Ctx, f: Change) -> None:
    """The choice (the intervention and what it takes), and the input before and after the
    change side by side. On a slide the choice is a column on the left, so that the pictures
    fill the slide's height; on the page it is a row above them."""
    one = x.kind == "heads"  # the head grid alone: the image is unchanged
    slide = deck.presenting()
    cols = st.columns([1, 3.2] if one else [1, 1.6, 1.6]) if slide else None
    with cols[0] if slide else st.container():
        _choice(x, slide)
    if one:
        with cols[1] if slide else st.container():
            deck.chart(figures.head_switches(x.c.depth, x.c.num_heads, x.arg),
                       key=EXP_INPUT)
        return
    left, right = cols[1:] if slide else st.columns(2)
    PAIRS.get(x.kind, _mask_pair)(x, f, left, right)


def _altered_image(x: Ctx):
    c = x.c
    return figures.array_image(denormalize(x.altered.pixels[0], c).numpy(), c.img_size)


def _occlude_pair(x: Ctx, f: Change, left, right) -> None:
    P, g = x.c.patch_size, x.c.grid
    with left:
        deck.chart(figures.patch_set_grid(
            x.prep.crop, P, x.arg, show_index=g <= 16,
            title=f"Original: click patches to grey them out ({len(x.arg)} chosen)"),
            key=EXP_GRID, on_select=_toggle_clicked_patch, selection_mode="points")
    with right:
        deck.chart(figures.labelled_patches(
            _altered_image(x), P, f"What the model sees: {len(x.arg)} patches greyed out",
            outlined=x.arg), key=EXP_ALTERED)


def _shuffle_pair(x: Ctx, f: Change, left, right) -> None:
    P, g, N = x.c.patch_size, x.c.grid, x.c.num_patches
    few = g <= 16  # numbers stay readable up to a 16 x 16 grid
    with left:
        deck.chart(figures.labelled_patches(
            x.prep.crop, P, "Original: each patch's number" if few else "Original",
            labels=range(N) if few else None), key=EXP_INPUT)
    with right:
        deck.chart(figures.labelled_patches(
            _altered_image(x), P, ("Shuffled: each cell shows the number of the patch it holds"
                                   if few else "Shuffled (reassembled from the moved patches)"),
            labels=x.altered.perm.tolist() if few else None), key=EXP_ALTERED)


def _positions_pair(x: Ctx, f: Change, left, right) -> None:
    with left:
        st.image(x.prep.crop, caption="The image is unchanged", width=320)
    with right:
        tokens = "".join(rf"x_\mathrm{{{n.lower()}}};\," for n in x.c.prefix_names)
        latex(r"z_0 = [" + tokens + r"X_pE] + \lambda E_\mathrm{pos}")
        latex(r"\lambda: 1 \to 0")


def _mask_pair(x: Ctx, f: Change, left, right) -> None:
    """Another mask: block 0's mask before and after."""
    c = x.c
    n_img = c.num_image_tokens
    for col, kind, when in ((left, x.run_mask, "before"), (right, f.new_mask, "after")):
        window = parse_window(kind)
        block = ("" if window is None else ", block 0" + (
            f" (blocks 1, 3, … shift by {window[0] // 2})" if window[1] else " (every block)"))
        with col:
            deck.chart(figures.token_mask(
                facts.allowed_in_block0(c, kind, x.n_text).numpy(), c,
                x.enc.words if x.n_text else None,
                f"{when}: the {common.mask_label(kind)} mask{block} over {n_img} image"
                + (f" and {x.n_text} text tokens" if x.n_text else " tokens")),
                key=EXP_INPUT if when == "before" else EXP_ALTERED)


PAIRS = {"occlude": _occlude_pair, "shuffle": _shuffle_pair, "shuffle_no_positions": _shuffle_pair,
         "positions": _positions_pair}  # the rest: another mask


def shuffled_words(stay, n: int, positions: bool = True) -> str:
    """What the shuffle did, from its fixed points: a random order may leave a patch in place."""
    moved = n - len(stay)
    note = (f"every patch keeps its pixels; {'all ' if not stay else ''}{moved} of the {n} "
            "patches move to another cell"
            + (", where each is given that cell's position embedding" if positions else
               ", and no image token gets a position embedding"))
    if not stay:
        return note + "."
    which = (f"patch {stay[0]}" if len(stay) == 1 else
             f"patches {listed(stay)}" if len(stay) <= 8 else f"{len(stay)} patches")
    return (note + f"; this seed's order leaves {which} in {'its' if len(stay) == 1 else 'their'}"
            " own cell.")


def _heads_words(f: Change) -> str:
    if not f.heads:
        return (f"The image is unchanged. Pick heads of block {f.layer} to switch off: none "
                f"is switched off yet.")
    which = (f"head {f.heads[0]} is switched off: its output A·V is" if len(f.heads) == 1
             else f"heads {listed(f.heads)} are switched off: their outputs A·V are")
    return (f"The image is unchanged. In block {f.layer}, {which} multiplied by 0 before W_O; "
            f"every other head runs as before.")


def change_words(x: Ctx, f: Change) -> str:
    if f.kind == "heads":
        return _heads_words(f)
    if f.kind == "occlude":
        if not f.greyed:
            return "No patch is greyed out yet: click patches on the grid."
        return (f"The {len(f.greyed)} greyed patch{'' if len(f.greyed) == 1 else 'es'} hold the "
                f"normalisation mean, RGB ({', '.join(map(str, f.rgb))}), in every pixel; the "
                f"rest of the image is untouched.")
    if f.kind == "positions":
        return ("The pixels are the same; only the position embeddings E_pos are left out, so "
                "every patch token still carries what its patch shows, but nothing of where it is."
                + (" The text tokens keep their positions P_txt." if f.text_positions else ""))
    if f.kind in SHUFFLES:
        said = shuffled_words(f.stay, f.n_patches, positions=f.kind == "shuffle")
        return said[0].upper() + said[1:]
    return (f"Both runs see the same image; the second runs with the "
            f"{common.mask_label(f.new_mask)} mask instead of the {x.run_mask} mask.")


CHANGE_NOTES = {
    # plain text, not inline TeX: a screen reader read KaTeX's inline MathML symbol by symbol
    "heads": ("Switched-off heads are dark in the grid. Each head's output is multiplied by its "
              "switch before the heads are joined and projected by W_O: "
              "MSA(X) = [m₁·head₁; …; m_H·head_H] W_O + b_O, with m_h = 1 (on) or 0 (off)."),
    "positions": "λ = 1 is the model as trained; λ = 0 leaves E_pos out of the first sum.",
    "mask": ("Light cells: a query token (row) may attend to that key (column); dark: "
             "blocked (M = −∞)."),
}


def change_notes(x: Ctx, f: Change) -> str | None:
    return CHANGE_NOTES.get(f.kind)
