"""Stage 10: change one thing, rerun the model, and compare the two results.

The steps: choose a change (and see what the model is fed), the two results before and after,
(a captioner's) each word of its caption scored by both runs, and the order of the patches
without positions. Facts are decided once, from the traces' mask tensors
(vit_core.explain.readout's `image_blind` / `prefix_sees_no_patch`,
vit_core.explain.interventions' `image_sight` / `text_sees_ahead`), never from a mask's name,
and worded here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import streamlit as st
import torch

from vit_core import allowed_keys
from vit_core.explain import interventions as ex
from vit_core.explain.generation import score_logits, tokenizer_for
from vit_core.explain.readout import image_blind, near_uniform
from vit_core.io.images import denormalize
from vit_core.masks import parse_window, window_keys

from .. import controls, deck, figures, keys, session, state
from ..deck import Choice, Number, Question, Step
from ..numbers import pct
from . import choices, common

KINDS = choices.KINDS  # the radio's labels -> the intervention
SHUFFLES = ("shuffle", "shuffle_no_positions")
WIDGETS = (keys.EXP_KIND, keys.EXP_HEADS, keys.EXP_SEED, keys.EXP_MASK)  # kept across steps
TOP = 5  # the class charts draw the top classes before and after, this many of each
NAMED_PATCHES = 6  # a grey set this small is listed patch by patch in the question
OFFERED = 4  # "what does it answer now?" offers this many classes at most
COSINE_TOLERANCE = 0.05  # how far a student's guess of a cosine similarity may be off
SAME_CAPTION = ("The same caption as before", "Another caption")  # right: it changed
UNORDERED = (  # the shuffle-without-positions question's options; right: decided from the mask
    "Yes: shuffling changes no pixel, so nothing can change",
    "Yes: without positions the patches are a set, order is lost",
    "Yes: under this mask no patch reaches what the output reads",
    "No: under this mask a patch sees only those before it")
# In presenter mode the figure's row of columns fills the figure's height, so that a chart drawn
# in a column (deck.chart, height "stretch") fills the slide and no more (ui/presenter.CSS
# stretches a figure drawn directly in the figure's container; a row of columns would keep its
# content's height); the choices' column scrolls if a short screen cannot hold them.
PRESENTER_ROW_CSS = """<style>
.st-key-%FIG% [data-testid="stLayoutWrapper"]:has(> [data-testid="stHorizontalBlock"]
  .st-key-%KIND%) { flex: 1 1 0; min-height: 0; }
.st-key-%FIG% [data-testid="stHorizontalBlock"]:has(.st-key-%KIND%) { min-height: 0; }
.st-key-%FIG% [data-testid="stColumn"]:has(.st-key-%KIND%) { overflow-y: auto;
  overflow-x: hidden; }
</style>""".replace("%FIG%", deck.FIGURE).replace("%KIND%", keys.EXP_KIND)
GIVEN_BEFORE = "image, the words before it"  # what a text position sees: causal or prefix mask
GIVEN_FULL = "image, every word fed, itself and those after it too"  # a text position sees ahead


# ---------------------------------------------------------------- numbers as printed
def share(p: float) -> str:
    """A probability as this stage prints it (ui.numbers.pct): one decimal, three under 1 % (an
    untrained model's 1000 classes sit near 0.1 %, where one decimal would hide every change)."""
    return pct(p, 1 if p >= 0.01 else 3)


def _printed_points(before: str, after: str) -> tuple[float, int] | None:
    """(the change in points between two printed percentages, the decimals it is printed
    with); None when either is printed as a bound ('<0.001%', '>99.9%')."""
    if before[0] in "<>" or after[0] in "<>":
        return None
    a, b = before.removesuffix("%"), after.removesuffix("%")
    digits = max(len(a.partition(".")[2]), len(b.partition(".")[2]))
    return round(float(b) - float(a), digits) + 0.0, digits  # + 0.0: never "-0.0"


def points(before: str, after: str) -> str | None:
    """The change from one printed percentage to another, in points, computed from the printed
    numbers so the reader's subtraction holds ('91.2%' to '87.5%': '−3.7 points')."""
    found = _printed_points(before, after)
    if found is None:
        return None
    d, digits = found
    sign = "+" if d > 0 else "−" if d < 0 else ""
    return f"{sign}{abs(d):.{digits}f} points"


def moved(ch: ex.ClassChange) -> bool:
    """The answer moved: another top class, or its probability moved by ex.SAME_P or more, as
    printed (so that "did not change" never stands beside "+1.0 points")."""
    found = _printed_points(share(ch.before), share(ch.after))
    if ch.changed or found is None:
        return ch.moved
    return abs(found[0]) >= 100 * ex.SAME_P


def names_of(c) -> list[str]:
    return list(c.class_names) or [f"class {k}" for k in range(c.num_classes)]


def family(c) -> str:
    """What the model answers with: "class" logits, "text" logits, or nothing ("headless")."""
    return "class" if c.num_classes else "text" if c.has_text else "headless"


# ---------------------------------------------------------------- the session's view
@dataclass
class Ctx:
    """The stage's view: the change chosen and the run before it (a captioner's fed its own
    caption, so that both runs score the same words); the runs after are computed once, when a
    step first asks."""

    v: deck.View
    label: str  # the radio's label
    kind: str  # its intervention
    arg: tuple  # the intervention's argument (vit_core.explain.interventions)
    mask: str | None  # the sidebar's mask (None: the model's own); both runs keep it
    tr: Any  # the run before (a captioner's: fed its greedy caption)
    gen0: Any  # a captioner's greedy caption before (None otherwise)
    enc: Any  # that caption, encoded as fed to both runs
    grey: tuple[int, ...]  # the grey set (keys.EXP_OCCLUDED), which the first question greys
    grey_around: int | None  # the patch the grey set is the 3 x 3 around, if it is
    seed: int  # the shuffle seed (keys.EXP_SEED)
    altered: ex.Altered  # what the chosen change feeds the model

    def __getattr__(self, name):  # the view's fields (inp, name, model, prep, c, …)
        if name == "v":
            raise AttributeError(name)
        return getattr(self.v, name)

    @property
    def text_ids(self) -> list[int] | None:
        return self.enc.ids if self.enc is not None else None

    @property
    def n_text(self) -> int:
        return len(self.text_ids or [])

    @property
    def run_mask(self) -> str:
        return self.tr.mask_kind

    @property
    def empty(self) -> bool:
        """Nothing switched off or greyed out yet: the run after would be the run before."""
        return self.kind in ("heads", "occlude") and not self.arg

    def run(self, kind: str, arg: tuple = ()):
        """The trace with intervention `kind` (cached in ui.state), fed the same text."""
        return state.experiment(self.inp, self.name, kind, arg, self.text_ids, self.mask)

    def caption(self, kind: str, arg: tuple = ()):
        """A captioner's greedy caption with intervention `kind` in place (cached)."""
        return state.experiment_caption(self.inp, self.name, kind, arg, self.mask)

    @cached_property
    def after(self):
        return self.tr if self.empty else self.run(self.kind, self.arg)

    @cached_property
    def gen1(self):
        return self.gen0 if self.empty else self.caption(self.kind, self.arg)

    @cached_property
    def diff(self) -> float:
        return ex.max_difference(self.tr, self.after)


def around(p: int, g: int) -> list[int]:
    """The 3 x 3 patches around patch p (fewer at an edge), in reading order."""
    r0, c0 = divmod(p, g)
    return [r * g + c for r in range(r0 - 1, r0 + 2) for c in range(c0 - 1, c0 + 2)
            if 0 <= r < g and 0 <= c < g]


mask_options = choices.mask_options


def allowed_in_block0(c, kind: str, n_text: int):
    """Boolean [S, S]: who may attend to whom under mask `kind` in block 0 (a window mask
    differs per block; the others are the same in every block)."""
    if parse_window(kind) is not None:
        return window_keys(c, kind, n_text)[0]
    return allowed_keys(kind, c.num_image_tokens, n_text)


def _keep_widgets(c, run_mask: str) -> None:
    """The choices live in the first step's widgets; presenter mode draws the other steps
    without them, so their values are stored again each run (as controls.keep_shared does), and
    fitted to this model."""
    ss = st.session_state
    for key in WIDGETS:
        if key in ss:
            ss[key] = ss[key]
    if ss.get(keys.EXP_KIND) not in KINDS:
        ss[keys.EXP_KIND] = next(iter(KINDS))
    ss[keys.EXP_HEADS] = [h for h in ss.get(keys.EXP_HEADS, [0]) if h < c.num_heads]
    if keys.EXP_OCCLUDED not in ss:  # start with the 3 x 3 patches around the selected one
        ss[keys.EXP_OCCLUDED] = around(int(ss[keys.PATCH]), c.grid)
    others = mask_options(c, run_mask)
    if ss.get(keys.EXP_MASK) not in others:
        ss[keys.EXP_MASK] = others[0]


def view() -> Ctx:
    if deck.presenting():  # before anything is drawn: the first step's row of columns stretches
        st.html(PRESENTER_ROW_CSS)
    v = deck.load()
    c, ss = v.c, st.session_state
    mask = session.chosen_mask()  # the sidebar's mask: both runs use it (unless it is the change)
    gen0 = enc = None
    tr = v.tr
    if c.has_text:  # the caption the model writes unchanged, fed to both runs to score its words
        gen0 = state.generation(v.inp, v.name, mask=mask)
        enc = tokenizer_for(v.model).encode(gen0.text, max_len=c.max_text_len)
        tr = state.trace(v.inp, v.name, mask=mask, text_ids=enc.ids)
    _keep_widgets(c, tr.mask_kind)
    label = ss[keys.EXP_KIND]
    kind = KINDS[label]
    grey = tuple(p for p in ss[keys.EXP_OCCLUDED] if p < c.num_patches)
    seed = int(ss.get(keys.EXP_SEED, 0))
    arg: tuple = ()
    if kind == "heads":
        arg = tuple((v.layer, h) for h in sorted(ss[keys.EXP_HEADS]))
    elif kind == "occlude":
        arg = grey
    elif kind in SHUFFLES:
        arg = (seed,)
    elif kind == "mask":
        arg = (ss[keys.EXP_MASK],)
    grey_around = next((p for p in (v.patch, c.grid // 2 * c.grid + c.grid // 2)
                        if grey and sorted(grey) == around(p, c.grid)), None)
    return Ctx(v, label, kind, arg, mask, tr, gen0, enc, grey, grey_around, seed,
               ex.alter(v.model, v.prep.pixels, kind, arg, mask))


def _intro(x: Ctx) -> str:
    trained = ("" if x.mask else ", the one this model was trained with"
               if x.model.info.trained else ", this model's own (its weights are random)")
    return ("The best way to see what a part of the model does is to take it away. Pick an "
            "intervention below: the model runs again on the same image with that one change, and "
            "the two results are compared. Unless the change is the mask itself, both runs use the "
            f"{x.run_mask} attention mask{trained} (sidebar).")


# ---------------------------------------------------------------- step 1: choose a change
def _toggle_clicked_patch() -> None:
    """on_select of the grid: a click adds the patch to the grey set, or takes it out."""
    ss = st.session_state
    event = ss.get(keys.EXP_GRID)
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


def _change_facts(x: Ctx) -> Change:
    c = x.c
    perm = x.altered.perm
    stay = () if perm is None else tuple(i for i, p in enumerate(perm.tolist()) if i == p)
    return Change(x.kind, x.layer, tuple(h for _, h in x.arg) if x.kind == "heads" else (),
                  c.num_heads, x.arg if x.kind == "occlude" else (),
                  tuple(round(255 * m) for m in c.mean), stay, c.num_patches,
                  x.arg[0] if x.kind == "mask" else None, c.has_text)


def _change_figure(x: Ctx, f: Change) -> None:
    """The choice (the intervention and what it takes), and the input before and after the
    change side by side. On a slide the choice is a column on the left, so that the pictures
    fill the slide's height; on the page it is a row above them."""
    c = x.c
    one = x.kind == "heads"  # the head grid alone: the image is unchanged
    slide = deck.presenting()
    if slide:
        cols = st.columns([1, 3.2] if one else [1, 1.6, 1.6])
        choice = cols[0]
    else:
        choice = st.container()
    with choice:
        st.radio("Intervention", list(KINDS), key=keys.EXP_KIND, horizontal=not slide)
        if x.kind == "heads":  # only this change uses a block: the layer slider is drawn with it
            controls.layer(c)
            st.multiselect(f"Heads of block {x.layer} to switch off", list(range(c.num_heads)),
                           format_func=lambda h: f"head {h}", key=keys.EXP_HEADS)
        elif x.kind == "occlude":
            st.button("Grey out no patch", key=keys.EXP_CLEAR, on_click=_clear_patches)
        elif x.kind in SHUFFLES:
            st.number_input("Shuffle seed (which random order)", 0, 10_000, key=keys.EXP_SEED)
        elif x.kind == "mask":
            st.selectbox(f"Mask to run with instead of {x.run_mask}",
                         mask_options(c, x.run_mask), key=keys.EXP_MASK,
                         format_func=common.mask_label,
                         help="Window masks: each patch attends only to the patches of its own "
                              "M×M window (CLS and DIST stay global; text keeps the model's own "
                              "rule); shifted: on blocks 1, 3, 5, … the windows move by M // 2.")
    if one:
        with cols[1] if slide else st.container():
            deck.chart(figures.head_switches(c.depth, c.num_heads, x.arg), key=keys.EXP_INPUT)
        return
    P, g, N = c.patch_size, c.grid, c.num_patches
    altered = figures.array_image(denormalize(x.altered.pixels[0], c).numpy(), c.img_size)
    left, right = cols[1:] if slide else st.columns(2)
    if x.kind == "occlude":
        with left:
            deck.chart(figures.patch_set_grid(
                x.prep.crop, P, x.arg, show_index=g <= 16,
                title=f"Original: click patches to grey them out ({len(x.arg)} chosen)"),
                key=keys.EXP_GRID, on_select=_toggle_clicked_patch, selection_mode="points")
        with right:
            deck.chart(figures.labelled_patches(
                altered, P, f"What the model sees: {len(x.arg)} patches greyed out",
                outlined=x.arg), key=keys.EXP_ALTERED)
    elif x.kind in SHUFFLES:
        few = g <= 16  # numbers stay readable up to a 16 x 16 grid
        with left:
            deck.chart(figures.labelled_patches(
                x.prep.crop, P, "Original: each patch's number" if few else "Original",
                labels=range(N) if few else None), key=keys.EXP_INPUT)
        with right:
            deck.chart(figures.labelled_patches(
                altered, P, ("Shuffled: each cell shows the number of the patch it holds"
                             if few else "Shuffled (reassembled from the moved patches)"),
                labels=x.altered.perm.tolist() if few else None), key=keys.EXP_ALTERED)
    elif x.kind == "positions":
        with left:
            st.image(x.prep.crop, caption="The image is unchanged", width=320)
        with right:
            tokens = "".join(rf"x_\mathrm{{{n.lower()}}};\," for n in c.prefix_names)
            st.latex(r"z_0 = [" + tokens + r"X_pE] + \lambda E_\mathrm{pos}")
            st.latex(r"\lambda: 1 \to 0")
    else:  # another mask
        n_img = c.num_image_tokens
        for col, kind, when in ((left, x.run_mask, "before"), (right, f.new_mask, "after")):
            window = parse_window(kind)
            block = ("" if window is None else ", block 0" + (
                f" (blocks 1, 3, … shift by {window[0] // 2})" if window[1] else " (every block)"))
            with col:
                deck.chart(figures.token_mask(
                    allowed_in_block0(c, kind, x.n_text).numpy(), c,
                    x.enc.words if x.n_text else None,
                    f"{when}: the {common.mask_label(kind)} mask{block} over {n_img} image"
                    + (f" and {x.n_text} text tokens" if x.n_text else " tokens")),
                    key=keys.EXP_INPUT if when == "before" else keys.EXP_ALTERED)


def _listed(items) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


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
             f"patches {_listed(stay)}" if len(stay) <= 8 else f"{len(stay)} patches")
    return (note + f"; this seed's order leaves {which} in {'its' if len(stay) == 1 else 'their'}"
            " own cell.")


def _change_words(x: Ctx, f: Change) -> str:
    if f.kind == "heads":
        if not f.heads:
            return (f"The image is unchanged. Pick heads of block {f.layer} to switch off: none "
                    f"is switched off yet.")
        which = (f"head {f.heads[0]} is switched off: its output A·V is" if len(f.heads) == 1
                 else f"heads {_listed(f.heads)} are switched off: their outputs A·V are")
        return (f"The image is unchanged. In block {f.layer}, {which} multiplied by 0 before W_O; "
                f"every other head runs as before.")
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


def _change_notes(x: Ctx, f: Change) -> str | None:
    if f.kind == "heads":
        return (r"Switched-off heads are dark in the grid. Each head's output is multiplied by its "
                r"switch before the heads are joined and projected by W_O: "
                r"$\mathrm{MSA}(X) = [\,m_1\,\mathrm{head}_1;\ \dots;\ m_H\,\mathrm{head}_H\,]"
                r"\,W_O + b_O$, with $m_h = 1$ (on) or $0$ (off).")
    if f.kind == "positions":
        return ("λ = 1 is the model as trained; λ = 0 leaves E_pos out of the first sum.")
    if f.kind == "mask":
        return ("Light cells: a query token (row) may attend to that key (column); dark: "
                "blocked (M = −∞).")
    return None


# ---------------------------------------------------------------- the questions
def _where_grey(x: Ctx) -> str:
    k = len(x.grey)
    c = x.c
    centre = c.grid // 2 * c.grid + c.grid // 2
    if x.grey_around is not None:
        around = f"the {k} patches around patch {x.grey_around}"
        return (f"the middle of the picture ({around})" if x.grey_around == centre else around)
    if not k:
        return "patches"
    if k <= NAMED_PATCHES:
        return f"patch {x.grey[0]}" if k == 1 else f"patches {_listed(x.grey)}"
    return f"the {k} patches chosen on the grid"


def _what(x: Ctx) -> str:
    """The change chosen, said after 'with'."""
    if x.kind == "heads":
        hs = [h for _, h in x.arg]
        return (f"head{'s' if len(hs) > 1 else ''} {_listed(hs)} of block {x.layer} switched off"
                if hs else "no head switched off")
    if x.kind == "occlude":
        return f"{_where_grey(x)} greyed out"
    if x.kind == "positions":
        return "the position embeddings removed"
    if x.kind in SHUFFLES:
        return (f"the patches shuffled (seed {x.seed})"
                + (" and positions removed" if x.kind == "shuffle_no_positions" else ""))
    return f"the {common.mask_label(x.arg[0])} mask"


def _blind(tr) -> bool:
    """The class logits of this run cannot see the image (decided from its mask tensor)."""
    return image_blind(tr.config, tr.mask)


def _class_after(names: list[str], ch: ex.ClassChange, what: str) -> str:
    """What a classifier answers after a change (`what`: the change, said after 'with')."""
    n0, n1 = names[ch.top_before], names[ch.top_after]
    a, b = share(ch.before), share(ch.after)
    pts = points(a, b)
    if ch.changed:
        return (f"{n1} ({share(ch.new)}) with {what}, where it answered {n0} ({a}); P({n0}) "
                f"is now {b}.")
    change = f", a change of {pts}." if pts else "."
    if not moved(ch):
        return f"Still {n0}: {a} before and {b} with {what}{change}"
    return (f"Still {n0}, but {'less' if ch.after < ch.before else 'more'} sure: {a} before "
            f"and {b} with {what}{change}")


def _uniform_words(trained: bool, K: int) -> str:
    if not trained:
        return ("But this model has random weights: nothing was learned, so this says nothing "
                "about what it uses.")
    return (f"But its probabilities are close to uniform (1/{K} = {share(1 / K)} each), so this "
            f"says little about what it uses.")


def _turned(sims: dict[str, float]) -> str:
    return " and ".join(f"{v:.3f} for {name}" for name, v in sims.items())


def class_choice(c, p1: torch.Tensor, also: int, right: int | None) -> Choice:
    """Choose the class answered: the top classes of the run after (`p1`, probabilities) and the
    class `also` (the one answered before), at most OFFERED, in class order so that where the
    right one stands tells nothing; `right` is a class index (None: nobody is marked)."""
    names = names_of(c)
    ranked = [int(k) for k in p1.argsort(descending=True, stable=True)]
    picks = list(dict.fromkeys([*([right] if right is not None else []), also, *ranked]))
    picks = sorted(picks[:OFFERED])
    return Choice(tuple(names[k] for k in picks), None if right is None else picks.index(right))


def cosine_number(sims: dict[str, float] | None) -> Number:
    """A model without a head: the cosine similarity of its first final token (CLS, else the
    mean patch token) with the unchanged run's, the first the answer names."""
    if not sims:
        return Number(None, COSINE_TOLERANCE)
    name, value = next(iter(sims.items()))
    return Number(round(value, 3), COSINE_TOLERANCE, f"cosine similarity, final {name}")


def _after_question(x: Ctx, f: Compare) -> Question:
    """What the model answers with the change chosen: read off the step's chart (the two runs'
    top classes, captions or final tokens)."""
    c, what = x.c, _what(x)
    q = (f"With {what}: " + ("what does the classifier answer now?" if f.family == "class" else
                             "does the model still write the same caption?"
                             if f.family == "text" else
                             "how far do the model's final tokens turn?"))
    if f.empty:
        reply = (class_choice(c, f.p0, int(f.p0.argmax()), None) if f.family == "class" else
                 Choice(SAME_CAPTION) if f.family == "text" else cosine_number(None))
        return Question(q, "Nothing is changed yet: choose under 'Choose a change', then reveal "
                           "again (does not apply yet).", reply)
    if f.family == "text":
        same = f.gen1.text == f.gen0.text
        return Question(q, f"The same caption with {what}: “{f.gen0.text}”." if same else
                        f"With {what} it writes “{f.gen1.text}” instead of “{f.gen0.text}”.",
                        Choice(SAME_CAPTION, int(not same)))
    if f.family != "class":
        return Question(q, f"This model has no head to answer with. Its final tokens turn to a "
                           f"cosine similarity of {_turned(f.sims)} with the unchanged run "
                           f"(1.000: unchanged).", cosine_number(f.sims))
    ch = ex.class_change(f.p0, f.p1)
    reply = class_choice(c, f.p1, ch.top_before, ch.top_after)
    said = _class_after(names_of(c), ch, what)
    if f.blind and x.kind in ("occlude", *SHUFFLES):
        return Question(q, f"Exactly what it answered before: under the {x.run_mask} mask "
                           f"{common.prefix_sight(x.tr)}, so no patch, greyed, moved or not, "
                           f"reaches the class head. {said}", reply)
    if f.uniform:
        return Question(q, f"{said} {_uniform_words(f.trained, c.num_classes)}", reply)
    return Question(q, said + ("" if moved(ch) else " The answer hardly rests on what changed."),
                    reply)


def _unordered_question(x: Ctx, _) -> Question:
    """Why shuffling without positions gives what removing positions gives: decided from the
    mask tensor of the run shown."""
    c, tr = x.c, x.tr
    same = common.image_block_full(tr) or (common.reads_prefix(c) and common.prefix_blind(tr))
    q = (("Why do" if same else "Do") + " 'Shuffle the patches and remove positions' and "
         "'Remove position embeddings' give the same "
         + ("logits?" if c.num_classes or c.has_text else "output?"))
    if common.image_block_full(tr):
        right = 1
        a = (f"Without positions a patch token is only its pixels' embedding, and under the "
             f"{tr.mask_kind} mask every image token sees every other: attention and the MLP "
             f"treat the patches as a set. Shuffling only reorders the patch tokens, so "
             f"{common.output(c)} come out the same for any order (up to float rounding).")
    elif common.reads_prefix(c) and common.prefix_blind(tr):
        right = 2
        names = " and ".join(c.prefix_names)
        a = (f"Under the {tr.mask_kind} mask used here {common.prefix_sight(tr)}, in every "
             f"block, so no patch ever reaches {names}, and {common.output(c)} depend on {names} "
             f"alone: both experiments give exactly the same "
             + ("logits" if c.num_classes else
                f"final {names} vector{'s' if c.dist_token else ''}")
             + " for any order of the patches and any image. The patch tokens themselves do "
             "differ: patch i sees only the tokens before it, so their order matters even "
             "without positions.")
    else:
        right = 3
        a = (f"Under the {tr.mask_kind} mask used here they need not: patch i sees only the "
             f"tokens before it, so the order matters even without positions"
             + (f"; {common.prefix_sight(tr)}, so "
                + ("it comes" if c.num_prefix_tokens == 1 else "they come")
                + " out the same in both." if common.prefix_blind(tr) else "."))
    return Question(q, a, Choice(UNORDERED, right))


# ---------------------------------------------------------------- step 2: before and after
@dataclass(frozen=True)
class Compare:
    """The two results, in numbers."""

    family: str
    empty: bool  # nothing switched off or greyed out yet
    diff: float  # the largest change of any output (ex.outputs)
    p0: torch.Tensor | None = None  # classes: the probabilities before and after
    p1: torch.Tensor | None = None
    change: ex.ClassChange | None = None
    parting: int | None = None  # captions: the first word where they differ (None: the same)
    sims: dict | None = None  # headless: cosine similarity of each final token
    gen0: Any = None  # captions: the greedy caption before and after (Generation)
    gen1: Any = None
    blind: bool = False  # the class logits cannot see the image (readout.image_blind)
    uniform: bool = False  # random weights, or probabilities before close to uniform
    trained: bool = True


def _compare_facts(x: Ctx) -> Compare:
    fam, trained = family(x.c), x.model.info.trained
    if fam == "class":
        p0, p1 = x.tr.logits.softmax(-1), x.after.logits.softmax(-1)
        return Compare(fam, x.empty, x.diff, p0, p1, ex.class_change(p0, p1),
                       blind=_blind(x.tr), uniform=not trained or near_uniform(p0),
                       trained=trained)
    if fam == "text":
        return Compare(fam, x.empty, x.diff, parting=ex.caption_parting(x.gen0, x.gen1),
                       gen0=x.gen0, gen1=x.gen1, trained=trained)
    return Compare(fam, x.empty, x.diff, sims=ex.similarities(x.tr, x.after), trained=trained)


def _compare_figure(x: Ctx, f: Compare) -> None:
    c = x.c
    if f.family == "class":
        names = names_of(c)
        k = min(TOP, c.num_classes)
        top = list(dict.fromkeys(f.p0.topk(k).indices.tolist() + f.p1.topk(k).indices.tolist()))
        top.sort(key=lambda i: -float(f.p0[i]))
        deck.chart(figures.before_after_bars(
            [names[i] for i in top], f.p0[top].numpy(), f.p1[top].numpy(),
            title=f"Top classes before and after ({x.label.lower()})",
            value_title="probability (softmax of the logits)").update_yaxes(
                title="class" + (f" (the top {TOP} before and after)" if c.num_classes > TOP
                                 else "")), key=keys.EXP_COMPARE)
    elif f.family == "text":
        g0, g1 = f.gen0, f.gen1
        deck.chart(figures.caption_pair(
            g0.words, g0.chosen, g1.words, g1.chosen, f"before: “{g0.text}”",
            f"after ({x.label.lower()}): “{g1.text}”",
            "The caption each run writes, word by word (greedy)").update_xaxes(
                title="word of the caption, in writing order"), key=keys.EXP_COMPARE)
    else:
        deck.chart(figures.similarity_bars(
            [f"final {k}" for k in f.sims], list(f.sims.values()),
            "How far the final tokens moved").update_yaxes(title="final token"),
            key=keys.EXP_COMPARE)


def class_change_words(ch: ex.ClassChange, names: list[str]) -> str:
    """One sentence, decided from the numbers, on how the prediction moved; the points are the
    difference of the two percentages as printed."""
    n0, n1 = names[ch.top_before], names[ch.top_after]
    a, b = share(ch.before), share(ch.after)
    pts = points(a, b)
    if ch.changed:
        return (f"The prediction changed from **{n0}** ({a}) to **{n1}** ({share(ch.new)}); "
                f"P({n0}) went from {a} to {b}.")
    if not moved(ch):
        return (f"The prediction did not change: **{n0}**, {a} before and {b} after"
                + (f" ({pts})." if pts else "."))
    return (f"The top class is still **{n0}**, but its probability "
            f"{'fell' if ch.after < ch.before else 'rose'} from {a} to {b}"
            + (f" ({pts})." if pts else "."))


def caption_change_words(before, after, parting: int | None) -> str:
    """One sentence on how the greedy caption moved (words compared one by one)."""
    if parting is None:
        return f"The caption did not change: “{before.text}”."
    return (f"The caption changed from “{before.text}” to “{after.text}”: they part at word "
            f"{parting + 1}.")


def similarity_words(sims: dict[str, float]) -> str:
    return ("This model has no classifier or text head, so there is no prediction to compare; "
            f"instead, how far its final tokens turned: cosine similarity before vs after "
            f"{_turned(sims)} (1.000 would be unchanged).")


def _compare_words(x: Ctx, f: Compare) -> str:
    if f.empty:
        return ("Nothing is switched off or greyed out yet, so both runs are the same; "
                + ("pick a head" if x.kind == "heads" else "click a patch on the grid")
                + " under 'Choose a change'.")
    if f.family == "class":
        return (class_change_words(f.change, names_of(x.c))
                + f" The largest change of any logit is {f.diff:.3g}.")
    if f.family == "text":
        return caption_change_words(x.gen0, x.gen1, f.parting)
    return similarity_words(f.sims)


# ---------------------------------------------------------------- what to notice
@dataclass(frozen=True)
class Notice:
    """What the comparison shows, in numbers and flags (decided from the traces' masks)."""

    kind: str
    family: str
    diff: float
    moved: bool | None  # the answer moved (None: no answer, only tokens)
    blind: bool  # before: the class logits cannot see the image (its mask tensor)
    dist_token: bool
    heads_off: int = 0
    plain_diff: float = 0.0  # shuffle without positions: vs positions removed, unshuffled
    block_full: bool = False  # before: every image token sees every other
    block_causal: bool = False  # before: each image token sees itself and those before it
    same_masks: bool = False  # mask: the two masks allow the same keys
    blind_after: bool = False  # mask: after, the class logits cannot see the image
    sight_after: str = ""  # mask: "full" / "causal" / "other" (ex.image_sight)
    ahead_after: bool = False  # mask: after, a text position sees the words after it
    answer_after: tuple[int, float] | None = None  # the class answered after, and its prob
    window: tuple[int, bool] | None = None  # mask: after, a window mask (side M, shifted)
    window_keys: int = 0  # mask: after, the most patch keys a patch may see in block 0
    trained: bool = True  # the model's weights were learned (a preset's are random)


def _notice_facts(x: Ctx) -> Notice:
    c, tr, after = x.c, x.tr, x.after
    fam = family(c)
    answer_moved = None
    if fam == "class":
        answer_moved = moved(ex.class_change(tr.logits.softmax(-1), after.logits.softmax(-1)))
    elif fam == "text":
        answer_moved = x.gen0.ids != x.gen1.ids
    sight = ex.image_sight(c, tr.mask)
    base = dict(kind=x.kind, family=fam, diff=x.diff, moved=answer_moved, blind=_blind(tr),
                dist_token=bool(c.dist_token), block_full=sight == "full",
                block_causal=sight == "causal")
    if x.kind == "heads":
        return Notice(heads_off=len(x.arg), **base)
    if x.kind == "shuffle_no_positions":
        return Notice(plain_diff=ex.max_difference(after, x.run("positions")), **base)
    if x.kind == "mask":
        p1 = after.logits.softmax(-1) if fam == "class" else None
        window = parse_window(x.arg[0])
        seen = 0
        if window is not None:  # read off the mask the run after added in block 0
            pre, n = c.num_prefix_tokens, c.num_image_tokens
            seen = int(torch.isfinite(after.mask[0])[pre:n, pre:n].sum(-1).max())
        return Notice(
            window=window, window_keys=seen, trained=bool(x.model.info.trained),
            same_masks=torch.equal(torch.isfinite(tr.mask), torch.isfinite(after.mask)),
            blind_after=_blind(after), sight_after=ex.image_sight(c, after.mask),
            ahead_after=ex.text_sees_ahead(c, after.mask),
            answer_after=None if p1 is None else (int(p1.argmax()), float(p1.max())), **base)
    return Notice(**base)


def notice_words(x: Ctx, f: Notice) -> str:
    """The note under the results: true for any model, or worded from these two runs."""
    c = x.c
    what = ("logits" if f.family == "class" else "text logits" if f.family == "text"
            else "final " + " and ".join(ex.summary(x.tr)))
    answer = "caption" if f.family == "text" else "answer"
    if f.kind == "heads":
        layer, k, H = x.layer, f.heads_off, c.num_heads
        if k == H:
            return (f"with {'the only head' if H == 1 else f'all {H} heads'} of block {layer} "
                    "off, only W_O's bias is left of that block's attention output: in that "
                    "block no token takes anything from another token.")
        return (f"heads work side by side and their outputs are added through W_O, so switching "
                f"off {k} of block {layer}'s {H} heads removes {k} of {H} terms from that sum.")
    if f.kind == "occlude":
        note = ("grey out the object to see whether the answer rests on it, and the background "
                "to check that it does not.")
        if f.blind:
            note += (f" But under the {x.run_mask} mask {common.prefix_sight(x.tr)}, so no "
                     f"greyed patch can reach the class head.")
        return note
    own = ("CLS's own position embedding (row 0 of E_pos)" if not f.dist_token else
           "CLS's and DIST's own position embeddings (rows 0 and 1 of E_pos)")
    if f.kind in ("positions", "shuffle"):
        note = ("the pixels are the same; only E_pos is left out, so the model no longer knows "
                "where each patch is." if f.kind == "positions" else
                "a shuffle moves what each patch shows to another cell and its position.")
        sight = f"Under the {x.run_mask} mask {common.prefix_sight(x.tr)}"
        if f.blind and f.kind == "shuffle":
            return note + (f" {sight}, and {own} {'stay' if f.dist_token else 'stays'}, so where "
                           f"the patches are cannot reach the answer: the largest change of any "
                           f"logit is {f.diff:.3g}.")
        if f.blind:
            return note + (f" {sight}, so the patches' positions cannot reach the answer; but "
                           f"leaving out E_pos also removes {own}, and that alone "
                           + (f"moves the logits here, by up to {f.diff:.3g}."
                              if f.diff >= ex.SAME_OUTPUT else
                              f"changes the logits here by only {f.diff:.2g}."))
        if f.moved is not None:
            note += (f" For this image the {answer} {'changed' if f.moved else 'hardly changed'}"
                     f", so it {'depends' if f.moved else 'hardly depends'} on where the patches "
                     f"are.")
        return note
    if f.kind == "shuffle_no_positions":
        d = f.plain_diff
        same = d < ex.SAME_OUTPUT
        note = (f"compared with 'Remove position embeddings' on the unshuffled image, the largest "
                f"difference in the {what} is {d:.2g}: "
                + ("exactly the same." if d == 0 else "the same up to float rounding."
                   if same else "they differ."))
        if f.block_full and same:
            note += (f" Without positions, and with every image token seeing every other "
                     f"({x.run_mask} mask), shuffling only reorders the patch tokens, and nothing "
                     "that reads them can tell one order from the other.")
        elif f.blind and same:
            note += (f" But only because under the {x.run_mask} mask "
                     f"{common.prefix_sight(x.tr)}: the answer does not depend on the image at "
                     f"all.")
        elif f.block_causal and not same:
            note += (f" Under the {x.run_mask} mask patch i sees only the patches before it, so "
                     f"the order matters even without positions.")
        return note
    new, n_text = x.arg[0], x.n_text
    if f.same_masks:
        return (f"with {'no' if not n_text else n_text} text tokens, the {new} mask allows "
                f"exactly the keys the {x.run_mask} mask does, so both runs are the same "
                f"(largest difference {f.diff:.2g}).")
    if f.blind_after and f.answer_after is not None:
        k, p = f.answer_after
        return (f"under the {new} mask {common.prefix_sight(x.after)}, so what reaches the class "
                f"head no longer depends on the image: this model now answers "
                f"{names_of(c)[k]} ({share(p)}) for every picture.")
    before = (f" Before, under the {x.run_mask} mask {common.prefix_sight(x.tr)}, so the answer "
              f"could not see the image; now it can." if f.blind else "")
    if f.window is not None:
        return window_notice(x, f) + before
    if f.sight_after == "causal":
        return ("under the causal mask each token sees only itself and the tokens before it: "
                "patch i no longer sees the patches after it." + before)
    if f.ahead_after:
        return (f"under the {new} mask every text position also sees the words after it, so fed "
                "the caption before, each position can see the very word it is asked to "
                "predict." + before)
    if f.sight_after == "full":
        return (f"under the {new} mask the image tokens see each other in both directions"
                + ("; the text stays causal." if n_text else ".") + before)
    return f"under the {new} mask the tokens see other keys than before." + before


def window_notice(x: Ctx, f: Notice) -> str:
    """What a window mask did, from the mask the run after added and the two runs' answers."""
    c, (m, shifted) = x.c, f.window
    N, pre = c.num_patches, list(c.prefix_names)
    sees = ("each patch attends to no other patch, only to itself" if f.window_keys == 1 else
            f"each patch attends only to the patches of its own {m}×{m} window (at most "
            f"{f.window_keys} of the {N} patch keys in a block)")
    if pre:
        sees += f" and to {' and '.join(pre)}, which still see{'s' if len(pre) == 1 else ''} " \
                f"every patch"
    if shifted:
        road = (f"; on blocks 1, 3, … the windows move by {m // 2} patch"
                f"{'' if m // 2 == 1 else 'es'}, so what a patch gathers crosses the borders "
                "of the block before's windows" if m // 2 else
                "; a 1×1 window cannot shift, so the shifted mask is the plain one")
    else:
        road = ("; the windows never move, so patches in different windows exchange "
                + ("information only through " + " and ".join(pre) if pre else "nothing"))
    text = (f" The text tokens keep the model's own {c.default_mask} rule." if x.n_text else "")
    said = (f"under the {common.mask_label(x.arg[0])} mask {sees}{road}.{text} "
            + (f"This model was trained with its {c.default_mask} mask, not with windows"
               if f.trained else "This model has random weights: it was never trained"))
    if f.moved is None:
        return said + f": the largest change of any {'output' if not c.has_text else 'logit'} " \
                      f"is {f.diff:.3g}."
    if f.family == "class" and f.answer_after is not None:
        k, p = f.answer_after
        return said + (f": it now answers {names_of(c)[k]} ({share(p)})"
                       + (", another class than before." if f.moved else ", as before."))
    return said + (": the caption changed." if f.moved else ": the caption stayed the same.")


def _compare_notes(x: Ctx, f: Compare) -> str | None:
    if f.empty:
        return None
    return "What to notice: " + notice_words(x, _notice_facts(x))


# ---------------------------------------------------------------- step 3: each word, scored
@dataclass(frozen=True)
class Fed:
    """The caption before, fed to both runs: each word's probability in each."""

    words: list[str]
    before: list[float]
    after: list[float]
    ahead: tuple[bool, bool]  # a text position sees the words after it: before, after
    diff: float


def _fed_facts(x: Ctx) -> Fed:
    tok = tokenizer_for(x.model)
    s0, s1 = score_logits(tok, x.enc, x.tr.logits), score_logits(tok, x.enc, x.after.logits)
    c = x.c
    return Fed(s0.words, s0.probs, s1.probs,
               (ex.text_sees_ahead(c, x.tr.mask), ex.text_sees_ahead(c, x.after.mask)), x.diff)


def _fed_figure(x: Ctx, f: Fed) -> None:
    given = [GIVEN_FULL if a else GIVEN_BEFORE for a in f.ahead]
    masks = (x.run_mask, common.mask_label(x.after.mask_kind))
    title = ("The caption before, fed to both runs: "
             + (f"P(each word | {given[0]})" if given[0] == given[1] else
                f"before ({masks[0]} mask) P(each word | {given[0]}); after "
                f"({masks[1]} mask) P(each word | {given[1]})"))
    deck.chart(figures.before_after_bars(
        [f"{i + 1}. {w}" for i, w in enumerate(f.words)], f.before, f.after,
        title=title, value_title="P(word)").update_yaxes(
            title="word of the caption before, in order"), key=keys.EXP_WORDS)


def _fed_words(x: Ctx, f: Fed) -> str:
    m0, m1 = sum(f.before) / len(f.before), sum(f.after) / len(f.after)
    return (f"Fed the caption written before the change, the changed model gives its words "
            f"{share(m1)} on average (unchanged: {share(m0)}); the largest change of any text "
            f"logit is {f.diff:.3g}.")


# ---------------------------------------------------------------- step 4: order without positions
@dataclass(frozen=True)
class Unordered:
    """'Remove position embeddings' against the same with the patches shuffled."""

    family: str
    seed: int
    diff: float  # the largest difference of the two runs' outputs
    plain: Any  # classes: probabilities; text: each word's probability; headless: None
    shuffled: Any
    words: list[str] | None = None
    sims: dict | None = None  # headless: cosine similarity of each final token, the two runs


def _unordered_facts(x: Ctx) -> Unordered:
    c = x.c
    fam = family(c)
    plain, shuffled = x.run("positions"), x.run("shuffle_no_positions", (x.seed,))
    d = ex.max_difference(plain, shuffled)
    if fam == "class":
        return Unordered(fam, x.seed, d, plain.logits.softmax(-1), shuffled.logits.softmax(-1))
    if fam == "text":
        tok = tokenizer_for(x.model)
        s0, s1 = score_logits(tok, x.enc, plain.logits), score_logits(tok, x.enc, shuffled.logits)
        return Unordered(fam, x.seed, d, s0.probs, s1.probs, words=s0.words)
    return Unordered(fam, x.seed, d, None, None, sims=ex.similarities(plain, shuffled))


def _unordered_figure(x: Ctx, f: Unordered) -> None:
    c = x.c
    tokens = "".join(rf"x_\mathrm{{{n.lower()}}};\," for n in c.prefix_names)  # CLS, DIST
    st.latex(r"z_0 = [" + tokens + r"X_pE] + \lambda E_\mathrm{pos},\quad \lambda = 0")
    runs = ("positions removed", f"shuffled (seed {f.seed}), positions removed")
    if f.family == "class":
        names = names_of(c)
        k = min(TOP, c.num_classes)
        top = list(dict.fromkeys(f.plain.topk(k).indices.tolist()
                                 + f.shuffled.topk(k).indices.tolist()))
        top.sort(key=lambda i: -float(f.plain[i]))
        fig = figures.before_after_bars(
            [names[i] for i in top], f.plain[top].numpy(), f.shuffled[top].numpy(),
            title="Without positions: the picture as it is, and shuffled",
            value_title="probability (softmax of the logits)", names=runs)
        fig.update_yaxes(title="class")
    elif f.family == "text":
        fig = figures.before_after_bars(
            [f"{i + 1}. {w}" for i, w in enumerate(f.words)], f.plain, f.shuffled,
            title="Without positions: the caption before, fed to both runs",
            value_title="P(word)", names=runs)
        fig.update_yaxes(title="word of the caption before, in order")
    else:
        fig = figures.similarity_bars(
            [f"final {k}" for k in f.sims], list(f.sims.values()),
            "Without positions: how far shuffling turns the final tokens")
        fig.update_xaxes(title="cosine similarity, shuffled vs not (1 = unchanged)")
        fig.update_yaxes(title="final token")
    deck.chart(fig, key=keys.EXP_UNORDERED)


def _unordered_words(x: Ctx, f: Unordered) -> str:
    what = ("logits" if f.family == "class" else "text logits" if f.family == "text"
            else "final " + " and ".join(ex.summary(x.tr)))
    verdict = ("exactly the same" if f.diff == 0 else "the same up to float rounding"
               if f.diff < ex.SAME_OUTPUT else "they differ")
    return (f"Both runs leave out the position embeddings; shuffling the patches as well (seed "
            f"{f.seed}) changes the {what} by at most {f.diff:.2g}: {verdict}.")


def _unordered_notes(x: Ctx, f: Unordered) -> str:
    return (f"Both runs use the {x.run_mask} mask, and the seed is the shuffle seed of the first "
            "step. " + ("Each pair of bars is one class under the two runs." if f.family == "class"
                        else "Each pair of bars is one word of the caption before, fed to both "
                        "runs." if f.family == "text" else
                        "Each bar compares one final token of the two runs."))


def _has_text(c) -> bool:
    return bool(c.has_text)


STAGE = deck.Stage(
    slug="experiments",
    title="10 · Experiments",
    story="Now break it on purpose: switch off heads, hide patches, remove positions. What "
          "changes tells us what each part was doing.",
    view=view,
    intro=_intro,
    extra_reads=("generation", "caption_pass"),
    steps=(
        Step("change", "Choose a change", _change_figure, facts=_change_facts,
             words=_change_words, notes=_change_notes),
        Step("compare", "Before and after", _compare_figure, facts=_compare_facts,
             words=_compare_words, notes=_compare_notes, question=_after_question,
             asks=("family", "empty", "p0", "p1", "gen0", "gen1", "sims", "blind", "uniform",
                   "trained"), reads=("experiment",)),
        Step("words", "Each word of the caption, before and after", _fed_figure,
             facts=_fed_facts, words=_fed_words, reads=("experiment",), applies=_has_text),
        Step("unordered", "Shuffled without positions", _unordered_figure,
             facts=_unordered_facts, words=_unordered_words, notes=_unordered_notes,
             question=_unordered_question, reads=("unordered_runs",)),
    ),
)
