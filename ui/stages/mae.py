"""Stage 12: masked patches (MAE). Hide most of the patches, let the encoder read only the rest,
and watch a light decoder paint the hidden ones back; the loss counts the hidden patches only.

The stage runs a masked autoencoder on the session's image: the session's model when it is one
(the bundled shapes-mae, an `hf:` ViTMAE, a ViTMAE folder), else the bundled MAE. Every number
said comes from that one pass (ui/state.mae_run)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch
from PIL import Image

from vit_core.io.images import denormalize
from vit_core.mae import num_visible, pixel_targets, visible_colour_errors

from .. import deck, figures, keys, state
from ..deck import Choice, Number, Question, Step
from ..numbers import pct
from ..readable import TEXT_PX
from . import choices

DEFAULT_MAE = choices.DEFAULT_MAE  # the MAE shown when the session's model is not one
RATIO_CHOICES = choices.RATIO_CHOICES  # the shares offered: 5 … 95 %
MODES = choices.MODES
HIDDEN_GREY = (128, 128, 128)  # how a hidden patch is drawn in the encoder's input
TEXT_CELLS = 64  # token strips and grids print patch numbers up to this many patches
ROW_TEXT = 30  # the decoder's row prints its patch numbers up to this many tokens (all or none)
CLEARLY = 1.1  # an error this many times lower than the flat guess's is said as "N× lower"
NO_MAE = ("This stage runs a masked autoencoder, and none is on this machine: the bundled one "
          "is trained by `bash tools/train_bundled.sh`, and a pretrained one is fetched with "
          "`.venv/bin/python -m vit_core.fetch facebook/vit-mae-base` (then choose "
          "hf:facebook/vit-mae-base in the sidebar).")


mae_for = choices.mae_for


# ---------------------------------------------------------------- the stage's view
@dataclass(frozen=True)
class Ctx:
    """The session's view, the MAE shown and its pass under the masking chosen."""

    v: deck.View
    mae_name: str | None  # None: no MAE on this machine
    mae: Any
    mode: str  # "random" | "click"
    ratio: float  # the share hidden at random (mode "random")
    run: Any  # ui/state.MAERun, or None without an MAE
    crop: Image.Image | None  # the image as the MAE sees it

    def __getattr__(self, name):  # the view's fields (inp, name, …)
        return getattr(self.v, name)

    @property
    def own(self) -> bool:
        """The session's model is the MAE shown."""
        return self.mae_name == self.v.name


def _keep(key: str, default) -> None:
    """Keep a widget's value while a presenter step without that widget runs (Streamlit drops
    the value of a widget a run does not draw)."""
    st.session_state[key] = st.session_state.get(key, default)


def view() -> Ctx:
    v = deck.load()
    name = mae_for(v.name)
    if name is None:
        return Ctx(v, None, None, "random", 0.75, None, None)
    mae = state.get_mae(name)
    N = mae.encoder.config.num_patches
    ss = st.session_state
    _keep(keys.MAE_MODE, "random")
    if ss.get(keys.MAE_RATIO) not in RATIO_CHOICES:  # first visit: the MAE's own ratio
        ss[keys.MAE_RATIO] = min(RATIO_CHOICES, key=lambda r: abs(r - mae.config.mask_ratio))
    _keep(keys.MAE_RATIO, ss[keys.MAE_RATIO])
    ss.setdefault(keys.MAE_SEED, 0)
    hidden = [p for p in ss.get(keys.MAE_HIDDEN, []) if p < N][:N - 1]  # one stays visible
    ss[keys.MAE_HIDDEN] = hidden
    mode, ratio = str(ss[keys.MAE_MODE]), float(ss[keys.MAE_RATIO])
    run = state.mae_run(v.inp, name, ratio, int(ss[keys.MAE_SEED]),
                        hidden if mode == "click" else None)
    return Ctx(v, name, mae, mode, ratio, run, state.prepare(v.inp, name).crop)


def _intro(x: Ctx) -> str | None:
    if x.run is None:
        return None
    return ("A masked autoencoder learns from images alone, without labels: most patches are "
            "hidden, the encoder (a plain ViT) reads only the visible ones, and a small decoder "
            "has to paint the hidden ones back from what the encoder made of them. The loss is "
            "the reconstruction error on the hidden patches only. What the encoder learns this "
            "way is then reused: every other stage runs on this MAE's encoder too.")


# ---------------------------------------------------------------- the numbers of one pass
@dataclass(frozen=True)
class Numbers:
    """What the steps say about the pass: shapes, which patches, errors. No words."""

    N: int
    grid: int
    P: int
    C: int
    D: int
    D_dec: int
    mode: str
    ratio: float  # asked for (mode "random")
    hidden: tuple[int, ...]  # grid order
    visible: tuple[int, ...]  # in the order the encoder reads them
    error: np.ndarray  # (N,) each patch's squared error, mean over its P²C values
    flat: float | None  # the hidden patches' loss for a flat guess (see flat_guess)
    norm_pix: bool
    shapes: tuple[tuple[str, str, tuple[int, ...]], ...]  # (what, symbols, shape) in order
    lo: float  # the input's smallest and largest normalised value
    hi: float

    @property
    def n_hidden(self) -> int:
        return len(self.hidden)

    @property
    def n_visible(self) -> int:
        return len(self.visible)

    @property
    def S_enc(self) -> int:  # the encoder's tokens: CLS + the visible patches
        return 1 + self.n_visible

    @property
    def S_dec(self) -> int:  # the decoder's tokens: CLS + every patch
        return 1 + self.N

    @property
    def loss(self) -> float | None:  # the mean error over hidden patches; None: none hidden
        return float(self.error[list(self.hidden)].mean()) if self.hidden else None

    @property
    def visible_error(self) -> float:
        return float(self.error[list(self.visible)].mean())

    @property
    def all_error(self) -> float:  # what the loss would be if it counted every patch
        return float(self.error.mean())

    @property
    def exact_visible(self) -> int:
        """⌊N (1 − r)⌋ in exact arithmetic, for the ratio asked."""
        return int(Fraction(self.N) * (1 - Fraction(self.ratio).limit_denominator(1000)))


def measure(x: Ctx) -> Numbers | None:
    if x.run is None:
        return None
    out, c, m = x.run.out, x.mae.encoder.config, x.mae.config
    mask = out.mask[0]
    hidden = tuple(int(i) for i in torch.nonzero(mask).flatten())
    flat = None
    if hidden:  # the flat guess in the loss's own units (see flat_guess)
        if m.norm_pix_loss:
            flat_err = (out.target[0] ** 2).mean(-1)
        else:
            flat_err = visible_colour_errors(pixel_targets(x.run.pixels, c.patch_size),
                                             out.mask)[0]
        flat = float(flat_err[list(hidden)].mean())
    P2C = c.patch_size**2 * c.in_chans
    shapes = (
        ("the image cut into patches", "N × P²C", (c.num_patches, P2C)),
        ("CLS + the visible patches, embedded, with positions: the encoder's input",
         "(1 + N_vis) × D", tuple(out.encoder_input.shape[1:])),
        ("the encoder's output (after its final LayerNorm)", "(1 + N_vis) × D",
         tuple(out.encoded.shape[1:])),
        ("mapped to the decoder's width, [MASK] tokens added, back in patch order, + positions:"
         " the decoder's input", "(1 + N) × D_dec", tuple(out.decoder_input.shape[1:])),
        ("the decoder's output", "(1 + N) × D_dec", tuple(out.decoded.shape[1:])),
        ("the prediction: P²C pixel values per patch (CLS dropped)", "N × P²C",
         tuple(out.pred.shape[1:])),
    )
    px = x.run.pixels
    return Numbers(c.num_patches, c.grid, c.patch_size, c.in_chans, c.embed_dim, m.decoder_dim,
                   x.mode, x.ratio, hidden, tuple(int(i) for i in out.ids_keep[0]),
                   out.error[0].double().numpy(), flat, m.norm_pix_loss, shapes,
                   float(px.min()), float(px.max()))


def flat_guess(f: Numbers) -> str:
    """What the flat guess of `Numbers.flat` is, as a phrase."""
    if f.norm_pix:
        return "predicting every hidden patch flat (0 after the per-patch normalisation)"
    return "filling every hidden patch with the mean colour of the visible ones"


def _no_mae(x: Ctx, first: bool = False) -> bool:
    """Without an MAE: say how to get one (on the first step; the others point there)."""
    if x.run is None:
        if first:
            st.info(NO_MAE)
        else:
            st.caption("No masked autoencoder is on this machine: the first step says how to "
                       "get one.")
        return True
    return False


def _which(x: Ctx) -> str:
    """The sentence that says which model runs here, when it is not the session's."""
    if x.own:
        return ""
    return (f"The sidebar's model, {x.v.name}, is not a masked autoencoder, so this stage runs "
            f"the MAE {x.mae_name} on the same image. ")


# ---------------------------------------------------------------- pictures
def _image(t: torch.Tensor, c) -> Image.Image:
    """A normalised [3, H, W] tensor as an RGB image."""
    return figures.array_image(denormalize(t, c).numpy(), t.shape[-1])


def _blank(crop: Image.Image, patches, P: int) -> Image.Image:
    out = crop.copy()
    for p in patches:
        r, col = divmod(int(p), crop.size[0] // P)
        out.paste(HIDDEN_GREY, (col * P, r * P, (col + 1) * P, (r + 1) * P))
    return out


def _toggle_clicked_patch() -> None:
    """on_select of the grid: a click hides the patch, or shows it again."""
    ss = st.session_state
    chosen = set(ss.get(keys.MAE_HIDDEN, []))
    for point in (ss.get(keys.MAE_GRID) or {}).get("selection", {}).get("points", []):
        data = point.get("customdata")
        if data is not None:
            chosen ^= {int(data[0] if isinstance(data, list) else data)}
    ss[keys.MAE_HIDDEN] = sorted(chosen)


def _clear() -> None:
    st.session_state[keys.MAE_HIDDEN] = []


def _next_masking() -> None:
    st.session_state[keys.MAE_SEED] = int(st.session_state.get(keys.MAE_SEED, 0)) + 1


def _images_row(images: list[Image.Image], titles: list[str], P: int, outlined,
                title: str) -> go.Figure:
    """Images side by side, each with its patch grid; `outlined` patches framed on each."""
    g = images[0].size[0] // P
    cell = 224 // g  # every image drawn g·cell ≈ 224 px wide, whatever its own size
    side = g * cell
    figs = []
    for img in images:
        one = figures.labelled_patches(img.resize((side, side), Image.Resampling.NEAREST), cell,
                                       "", outlined=outlined)
        one.update_xaxes(visible=False, range=[-0.5, side - 0.5])
        one.update_yaxes(visible=False, range=[side - 0.5, -0.5], scaleanchor="x")
        figs.append(one)
    fig = figures.panels(figs, titles, spacing=0.02)
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=330,
                      margin=dict(l=0, r=0, t=60, b=0), showlegend=False)
    return fig


def token_strips(f: Numbers) -> go.Figure:
    """Two rows of tokens: the encoder's (CLS + the visible patches, in the order it reads
    them) and the decoder's (CLS + every patch in grid order, [MASK] where hidden), with a line
    from each encoded patch to the place it takes in the decoder. Each token is a bar as wide as
    the chart allows; its patch number is printed in it where it fits at 14 px (plotly's
    uniformtext hides the rest: on a phone), on the decoder's row only when it is short."""
    enc_x = np.arange(f.S_enc) * f.S_dec / f.S_enc  # spread out to the decoder row's width
    enc_w = min(2.5, 0.8 * f.S_dec / f.S_enc)
    lines_x, lines_y = [], []
    for j, p in enumerate(f.visible):  # where each encoded token goes
        lines_x += [enc_x[j + 1], p + 1, None]
        lines_y += [0.75, 0.25, None]
    data = [go.Scatter(x=lines_x, y=lines_y, mode="lines", line=dict(color="#9ab", width=1),
                       hoverinfo="skip", showlegend=False)]
    # the legend counts them: N = n_visible + n_hidden patches
    visible = f"a visible patch's token ({f.n_visible})"
    hidden = f"[MASK]: a hidden patch ({f.n_hidden})"
    kinds = [("CLS", "#6c757d", [enc_x[0]], 1, ["CLS"]),
             ("CLS", "#6c757d", [0], 0, ["CLS"]),
             (visible, "#1f77b4", list(enc_x[1:]), 1, [str(p) for p in f.visible]),
             (visible, "#1f77b4", [p + 1 for p in f.visible], 0, [str(p) for p in f.visible]),
             (hidden, "#ff7f0e", [p + 1 for p in f.hidden], 0,
              [str(p) for p in f.hidden])]
    shown = set()
    for name, colour, xs, row, labels in kinds:
        if not xs:
            continue
        data.append(go.Bar(
            x=xs, y=[0.5] * len(xs), base=[row - 0.25] * len(xs),
            width=enc_w if row == 1 else 0.85, marker_color=colour, customdata=labels,
            text=labels if row == 1 or f.S_dec <= ROW_TEXT else None,
            textposition="inside", insidetextanchor="middle", constraintext="inside",
            textfont=dict(color="white"), name=name, showlegend=name not in shown,
            hovertemplate="%{customdata}<extra>" + name + "</extra>"))
        shown.add(name)
    return go.Figure(data=data, layout=dict(
        title=dict(text=f"Of N = {f.N} patches the encoder reads {f.n_visible} (+ CLS), the "
                        f"decoder all {f.S_dec} tokens"),
        height=260, margin=dict(l=150, r=0, t=40, b=0), barmode="overlay",
        uniformtext=dict(minsize=TEXT_PX, mode="hide"), legend=dict(orientation="h", y=-0.1),
        xaxis=dict(visible=False, zeroline=False),
        yaxis=dict(tickvals=[0, 1], range=[-0.5, 1.5], zeroline=False, showgrid=False,
                   ticktext=[f"decoder: 1 + N = {f.S_dec}",
                             f"encoder: 1 + N_vis = {f.S_enc}"])))


def error_map(f: Numbers) -> go.Figure:
    """The squared error of every patch on the grid; visible patches marked with a circle."""
    g = f.grid
    fig = figures.grid_heatmap(f.error.reshape(g, g), "", colorscale="Viridis", zmin=0,
                               value_name="squared error (mean over the patch's P²C values)")
    rows, cols = np.divmod(np.array(f.visible), g)
    fig.add_trace(go.Scatter(x=cols, y=rows, mode="markers", name="visible (not in the loss)",
                             marker=dict(symbol="circle-open", color="white", size=10,
                                         line=dict(width=2)), hoverinfo="skip"))
    title = (f"Error per patch: hidden mean {f.loss:.4f}, visible mean {f.visible_error:.4f}"
             if f.hidden else f"Error per patch: nothing hidden, mean {f.all_error:.4f}")
    fig.update_layout(title=dict(text=title, font=dict(size=14)), showlegend=True,
                      legend=dict(orientation="h", y=-0.2))
    fig.update_xaxes(range=[-0.5, g - 0.5], zeroline=False)
    fig.update_yaxes(range=[g - 0.5, -0.5], zeroline=False)
    return fig


def loss_bars(f: Numbers) -> go.Figure:
    """The hidden patches' errors, largest first, and their mean: the loss."""
    order = sorted(f.hidden, key=lambda p: -f.error[p])
    fig = go.Figure(go.Bar(x=[str(p) for p in order], y=[f.error[p] for p in order],
                           marker_color="#ff7f0e", name="a hidden patch's squared error",
                           hovertemplate="patch %{x}: %{y:.4f}<extra></extra>"))
    fig.add_hline(y=f.loss, line=dict(color="black", dash="dash"),
                  annotation_text=f"L = their mean = {f.loss:.4f}",
                  annotation_position="top right")
    fig.update_layout(title=dict(text=f"The loss: the mean over the {f.n_hidden} hidden patches",
                                 font=dict(size=14)), height=340,
                      margin=dict(l=60, r=10, t=40, b=50),
                      yaxis_title="squared error (mean over P²C values)",
                      xaxis=dict(type="category", showticklabels=f.n_hidden <= TEXT_CELLS,
                                 title="hidden patch (its number), largest error first"))
    return fig


# ---------------------------------------------------------------- step 1: hide patches
LOSS_TEX = (r"\mathcal{L} = \frac{1}{|M|}\sum_{i\in M}\frac{\lVert \hat x_i - x_i\rVert^2}"
            r"{P^2 C}")  # the loss as the stage writes it; M: the hidden patches


def _hide_figure(x: Ctx, f: Numbers | None) -> None:
    if _no_mae(x, first=True) or f is None:
        st.latex(r"N_\mathrm{vis} = \lfloor N\,(1-r)\rfloor,\qquad " + LOSS_TEX)
        return
    # one row: room for the pictures (on a slide the equation too: under the row, it left the
    # pictures 50 % of a 1280×720 slide with vit-b16; beside it, 57 %)
    row = st.columns([2, 3, 2, 3] if deck.presenting() else [2, 3, 2], vertical_alignment="center")
    mode, left, right = row[:3]
    eq = row[3] if deck.presenting() else st.container()
    mode.radio("Which patches are hidden", list(MODES), format_func=MODES.get,
               key=keys.MAE_MODE)
    if x.mode == "random":
        with left:
            st.select_slider("Share of patches hidden (the mask ratio r)", RATIO_CHOICES,
                             format_func=lambda r: pct(r), key=keys.MAE_RATIO)
        with right:
            st.button("Another random masking", key=keys.MAE_NEW, on_click=_next_masking)
    else:
        with left:
            st.button("Hide no patch", key=keys.MAE_CLEAR, on_click=_clear)
    with eq:
        _visible_equation(f)
    masked = _blank(x.crop, f.hidden, f.P)
    left, right = st.columns(2)
    with left:
        if x.mode == "click":
            deck.chart(figures.patch_set_grid(
                x.crop, f.P, f.hidden, show_index=f.N <= TEXT_CELLS,
                title=f"Click patches to hide them ({f.n_hidden} hidden)"),
                key=keys.MAE_GRID, on_select=_toggle_clicked_patch, selection_mode="points")
        else:
            deck.chart(figures.labelled_patches(x.crop, f.P, "The image: hidden patches framed",
                                                outlined=f.hidden), key=keys.MAE_GRID)
    with right:
        deck.chart(figures.labelled_patches(
            masked, f.P, f"What the encoder is given: {f.n_visible} of {f.N} patches"),
            key=keys.MAE_INPUT)


def _visible_equation(f: Numbers) -> None:
    """N_vis as this masking counts it."""
    if f.mode == "random" and f.exact_visible == f.n_visible:
        st.latex(rf"N_\mathrm{{vis}} = \lfloor N\,(1-r)\rfloor = \lfloor {f.N}\cdot "
                 rf"{1 - f.ratio:.2f}\rfloor = {f.n_visible}")
    elif f.mode == "random":  # the float rounds below an exact whole number (words say so)
        st.latex(rf"N_\mathrm{{vis}} = \mathrm{{int}}({f.N}\cdot(1-{f.ratio:g})) = "
                 rf"{f.n_visible}")
    else:
        st.latex(rf"N_\mathrm{{vis}} = N - |M| = {f.N} - {f.n_hidden} = {f.n_visible}")


def _hide_words(x: Ctx, f: Numbers | None) -> str | None:
    if f is None:
        return None
    if f.mode == "click":
        return (_which(x) + f"You hid {f.n_hidden} of the {f.N} patches "
                f"({pct(f.n_hidden / f.N)}); the encoder reads the other {f.n_visible}.")
    r = f"{f.ratio:g}"
    rule = (f"N_vis = ⌊N (1 − r)⌋ = ⌊{f.N} × {1 - f.ratio:.2f}⌋ = {f.n_visible}"
            if f.exact_visible == f.n_visible else
            f"N_vis = int({f.N} × (1 − {r})) = {f.n_visible} in floating point (exactly, "
            f"⌊N (1 − r)⌋ = {f.exact_visible}; MAE's code rounds the float down)")
    return (_which(x) + f"With a mask ratio r = {r}, {f.n_hidden} of the {f.N} patches are "
            f"hidden and the encoder reads the other {f.n_visible}: {rule}.")


def _hide_question(x: Ctx, f: Numbers | None) -> Question | None:
    if f is None:
        return None
    r = x.mae.config.mask_ratio
    n = num_visible(f.N, r)
    return Question(
        f"This MAE was trained with {pct(r)} of its {f.N} patches hidden. How many patches "
        f"does its encoder read then (CLS not counted)?",
        f"{n}: N_vis = ⌊N (1 − r)⌋ = ⌊{f.N} × {1 - r:.2f}⌋ = {n}, so the encoder's attention "
        f"works on {1 + n} tokens instead of {1 + f.N}.",
        Number(n, unit="patches"))


# ---------------------------------------------------------------- step 2: the shapes
def _shapes_figure(x: Ctx, f: Numbers | None) -> None:
    if _no_mae(x) or f is None:
        return
    deck.chart(token_strips(f), key=keys.MAE_TOKENS)
    if not deck.presenting():
        st.dataframe([{"tensor": what, "shape": sym, "here": " × ".join(map(str, shape))}
                      for what, sym, shape in f.shapes], key=keys.MAE_SHAPES,
                     hide_index=True)


def _shapes_words(x: Ctx, f: Numbers | None) -> str | None:
    if f is None:
        return None
    full = 1 + f.N
    return (f"The encoder reads S = 1 + {f.n_visible} = {f.S_enc} tokens instead of {full}, so "
            f"each block's attention scores are {f.S_enc}×{f.S_enc} = {f.S_enc ** 2:,} instead "
            f"of {full ** 2:,} ({pct(f.S_enc ** 2 / full ** 2)}). The decoder maps its output "
            f"from D = {f.D} to D_dec = {f.D_dec}, adds {f.n_hidden} copies of one learned "
            f"[MASK] vector, puts every token back at its patch's place and adds its own "
            f"positions: S_dec = 1 + {f.N} = {f.S_dec} tokens.")


def _shapes_notes(x: Ctx, f: Numbers | None) -> str | None:
    if f is None:
        return None
    return ("The encoder's tokens keep the positions of their own patches (added before the "
            "hidden ones are dropped), so it knows where each visible patch sits. The [MASK] "
            "vector is the same for every hidden patch: only the decoder's position code tells "
            "them apart. Both position tables are fixed 2D sine-cosine codes, as in MAE.")


def _shapes_question(x: Ctx, f: Numbers | None) -> Question | None:
    if f is None:
        return None
    return Question(
        f"With {f.n_hidden} of {f.N} patches hidden, how many tokens does the decoder read "
        f"(CLS included)?",
        f"{f.S_dec}: the CLS token, the {f.n_visible} encoded visible patches and {f.n_hidden} "
        f"[MASK] tokens, one for each hidden patch; the decoder always reads the whole grid.",
        Number(f.S_dec, unit="tokens"))


# ---------------------------------------------------------------- step 3: the reconstruction
def _reconstruction_figure(x: Ctx, f: Numbers | None) -> None:
    if _no_mae(x) or f is None:
        return
    c = x.mae.encoder.config
    images = [x.crop, _blank(x.crop, f.hidden, f.P), _image(x.run.pasted[0], c)]
    titles = ["the image", f"the encoder's input ({f.n_visible} patches)",
              f"reconstruction ({f.n_hidden} patches painted)"]
    deck.chart(_images_row(images, titles, f.P, f.hidden,
                           "Original, masked input and reconstruction (hidden patches framed)"),
               key=keys.MAE_IMAGES)


def _reconstruction_words(x: Ctx, f: Numbers | None) -> str | None:
    if f is None:
        return None
    if not f.hidden:
        return "No patch is hidden, so there is nothing to reconstruct: hide some patches."
    units = ("each patch normalised to mean 0 and variance 1" if f.norm_pix else
             f"the input's normalised pixel values, here from {f.lo:.2f} to {f.hi:.2f}")
    if f.loss <= f.flat / CLEARLY:
        better = f"{f.flat / f.loss:.1f}× lower than"
    elif f.loss < f.flat:
        better = f"only {pct(1 - f.loss / f.flat)} lower than"
    else:
        better = f"{pct(f.loss / f.flat - 1)} higher than"
    said = (f"On the {f.n_hidden} hidden patches the decoder's mean squared error is "
            f"{f.loss:.4f} ({units}), {better} {flat_guess(f)}, {f.flat:.4f}.")
    if f.norm_pix:
        said += (" This MAE predicts each patch without its mean and spread (norm_pix_loss): to "
                 "draw it, each hidden patch's own mean and spread are taken from the original.")
    return said + " The visible patches are pasted back from the original."


def _reconstruction_question(x: Ctx, f: Numbers | None) -> Question | None:
    if f is None:
        return None
    return Question(
        "Before the decoder's blocks run, what does it know about a hidden patch?",
        f"Only where it is: all {f.n_hidden} hidden places start from the same [MASK] vector, "
        f"told apart by the decoder's position code alone; what ends up there comes from the "
        f"{f.n_visible} visible patches, through attention.",
        Choice(("Its colour, passed on by the encoder",
                "Only where it is: a shared [MASK] vector plus its position",
                "Its pixels, blurred", "Nothing: hidden patches are left out of the decoder too"),
               right=1))


# ---------------------------------------------------------------- step 4: error per patch
def _error_figure(x: Ctx, f: Numbers | None) -> None:
    if _no_mae(x) or f is None:
        return
    deck.chart(error_map(f), key=keys.MAE_ERROR)


def _error_words(x: Ctx, f: Numbers | None) -> str | None:
    if f is None:
        return None
    if not f.hidden:
        return f"No patch is hidden; the decoder's error on the visible ones is {f.all_error:.4f}."
    worst = max(f.hidden, key=lambda p: f.error[p])
    best = min(f.hidden, key=lambda p: f.error[p])
    return (f"The hardest hidden patch is patch {worst} (row {worst // f.grid}, column "
            f"{worst % f.grid}): error {f.error[worst]:.4f}, {f.error[worst] / f.loss:.1f}× the "
            f"hidden mean of {f.loss:.4f}; the easiest, patch {best}, has {f.error[best]:.4f}. "
            f"The decoder predicts the {f.n_visible} visible patches too (mean error "
            f"{f.visible_error:.4f}), but the loss does not count them.")


def _error_question(x: Ctx, f: Numbers | None) -> Question | None:
    if f is None or not f.hidden:
        return None
    worst = max(f.hidden, key=lambda p: f.error[p])
    return Question(
        "Which hidden patch does the decoder get most wrong? Guess, then look at the map.",
        f"Patch {worst} (row {worst // f.grid}, column {worst % f.grid}), error "
        f"{f.error[worst]:.4f}: {f.error[worst] / f.loss:.1f}× the hidden patches' mean.",
        Number(worst, unit="(patch number)"))


# ---------------------------------------------------------------- step 5: the loss
def _loss_figure(x: Ctx, f: Numbers | None) -> None:
    if _no_mae(x) or f is None:
        return
    if not f.hidden:
        st.info("No patch is hidden, so the loss has nothing to average: hide some patches.")
        return
    st.latex(LOSS_TEX + rf" = \frac{{1}}{{{f.n_hidden}}}\sum_{{i\in M}}"
             rf"\frac{{\lVert \hat x_i - x_i\rVert^2}}{{{f.P * f.P * f.C:,}}} = {f.loss:.4f}"
             .replace(",", "{,}"))
    deck.chart(loss_bars(f), key=keys.MAE_LOSS)


def _loss_words(x: Ctx, f: Numbers | None) -> str | None:
    if f is None or not f.hidden:
        return None
    target = ("patch i's pixels normalised to mean 0 and variance 1" if f.norm_pix else
              "patch i's pixels")
    return (f"As the notes write it, the loss is the reconstruction loss, L2 on pixels, on the "
            f"masked patches only: L = (1/|M|) Σ_(i∈M) ‖x̂_i − x_i‖² / (P²C), x_i being "
            f"{target}. Here |M| = {f.n_hidden} hidden patches of P²C = "
            f"{f.P}×{f.P}×{f.C} = {f.P * f.P * f.C:,} values each: L = {f.loss:.4f}. Counted "
            f"over all {f.N} patches it would be {f.all_error:.4f}.")


def _loss_question(x: Ctx, f: Numbers | None) -> Question | None:
    if f is None or not f.hidden:
        return None
    return Question(
        "Why does the loss leave out the visible patches?",
        f"They are in the encoder's input: copying them back would lower a loss that counted "
        f"them without learning anything about what is hidden. So the chart's dashed line, "
        f"L = {f.loss:.4f}, averages the {f.n_hidden} hidden patches' errors and no other "
        f"(the step before shows the visible patches' errors too).",
        Choice(("They are the input: copying them scores without learning",
                "They have no positions", "The decoder does not predict them",
                "They would make the loss negative"), right=0))


# ---------------------------------------------------------------- the stage
STAGE = deck.Stage(
    slug="mae",
    title="12 · Masked patches (MAE)",
    story=("Hide three quarters of the patches and ask the model to paint them back: a masked "
           "autoencoder learns what images look like from the images alone. Its encoder is a "
           "plain ViT that reads only the visible patches; a small decoder fills in the rest."),
    view=view,
    intro=_intro,
    steps=(
        Step("hide", "Hide patches", _hide_figure, measure, _hide_words,
             question=_hide_question, asks=("N",)),
        Step("shapes", "The encoder reads fewer tokens; the decoder all of them", _shapes_figure,
             measure, _shapes_words, _shapes_notes, _shapes_question,
             asks=("N", "S_dec", "n_hidden", "n_visible")),
        Step("reconstruction", "The reconstruction", _reconstruction_figure, measure,
             _reconstruction_words, question=_reconstruction_question,
             asks=("n_hidden", "n_visible")),
        Step("error", "Error per patch", _error_figure, measure, _error_words,
             question=_error_question, asks=("error", "grid", "hidden", "loss")),
        Step("loss", "The loss counts hidden patches only", _loss_figure, measure, _loss_words,
             question=_loss_question, asks=("hidden", "loss", "n_hidden")),
    ),
)
