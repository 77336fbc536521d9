"""Stage 8: the shape trace: every step of the pass with its shape (around the blocks, inside
one block), what each step costs next to ViT-B/16, the whole pass's totals, the parameters by
component, and the attention cost against the patch size."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from ui import keys
from ui.drawing import describe, figures
from ui.drawing.equation import latex
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import Choice, Question, Step
from ui.selection import models, session
from ui.serving import state, tour
from ui.stages import common
from ui.stages.shape_rows import REF, Rows, cost_rows, heads, rows_of, shape_table
from vit_core import PRESETS
from vit_core.explain.extremes import extremes
from vit_core.explain.flops import (
    attention_share,
    params_by_component,
    si,
    total_macs,
    total_params,
)
from vit_core.explain.windows import window_cost

# the stage's own widget keys (AppTest addresses its widgets by them; shared: ui/keys.py)
SHAPE_TABLE = "shape_table"  # table: the shape trace, into the blocks and out
SHAPE_TABLE_BLOCK = "shape_table_block"  # table: the shape trace inside one block
SHAPE_COST_TABLE = "shape_cost_table"  # table: each step's MACs and FLOPs, next to ViT-B/16
PARAM_TABLE = "param_table"  # table: parameters by component
COST_VS_PATCH = "cost_vs_patch"  # chart: attention cost against patch size

PATCH_SIZES = (8, 14, 16, 28, 32, 56)  # the chart's patch sizes (those that divide the image)
ROW_PX, HEAD_PX = 35, 38  # a table row and the header row, as st.dataframe draws them


@dataclass(frozen=True)
class Ctx:
    """The stage's view, with the pass it shows: for a captioner the pass that wrote the last
    token of its caption (a captioner never runs without text), else the session's trace."""

    v: deck.View
    tr: Any
    gen: Any | None  # a captioner's greedy generation
    text: list[int] | None  # the text ids that pass read ([SOS] and the words before)

    def __getattr__(self, name):  # the view's fields (inp, name, model, c, …)
        return getattr(self.v, name)

    @property
    def label(self) -> str:
        return models.plain_label(self.name).split(" (")[0]


def view() -> Ctx:
    v = deck.load()
    if not v.c.has_text:
        return Ctx(v, v.tr, None, None)
    with st.spinner("Writing its caption, one forward pass per word…"):
        gen, text, tr = state.caption_pass(v.inp, v.name, mask=session.chosen_mask())
    return Ctx(v, tr, gen, list(text))


def _intro(x: Ctx) -> str:
    return ("Every step of the forward pass: what it does, its equation, the shape of what it "
            "produces (read from the tensors your image just produced) and how many parameters "
            "it has; then what its matrix multiplications cost, next to the notes' reference "
            "model, ViT-B/16. The steps inside a block are listed once and happen in every "
            "layer.")


def _rows(x: Ctx) -> Rows:
    return rows_of(x.c, x.tr)


def _table(rows: list[dict], key: str) -> None:
    """A table with every row on screen (on a slide in large type: deck.table)."""
    deck.table(rows, key, row_height=ROW_PX, height=HEAD_PX + ROW_PX * len(rows))


# ---------------------------------------------------------------- around the blocks
def _around_figure(x: Ctx, f: Rows) -> None:
    c, S = x.c, x.tr["embed"].shape[0]
    latex(rf"\mathbb{{R}}^{{{c.img_size}\times{c.img_size}\times{c.in_chans}}}\to"
          rf"\mathbb{{R}}^{{{c.num_patches}\times{c.in_chans * c.patch_size**2}}}\to"
          rf"\mathbb{{R}}^{{{S}\times{c.embed_dim}}}\xrightarrow{{\times {c.depth}\ "
          rf"\mathrm{{blocks}}}}\mathbb{{R}}^{{{S}\times{c.embed_dim}}}\to\text{{"
          + ("logits" if c.num_classes or c.has_text else "final tokens") + "}")
    _table(shape_table(f, f.around), SHAPE_TABLE)


def _around_words(x: Ctx, f: Rows) -> str:
    c, S = x.c, x.tr["embed"].shape[0]
    T = x.tr.n_text
    tokens = (f"{S} tokens ({c.num_image_tokens} image + {T} text)" if T else f"{S} tokens")
    blocks = "its one block keeps" if c.depth == 1 else f"its {c.depth} blocks keep"
    found = heads(f)
    out = ("; then " + " and ".join(f"the {r['step']} gives {r['traced']}" for r in found)
           if found else "; it has no head: its output is the final tokens")
    return (f"The {c.img_size}×{c.img_size} image becomes {c.num_patches} patches of "
            f"{c.in_chans * c.patch_size**2} numbers, then {tokens} of {c.embed_dim}; {blocks} "
            f"that {S} × {c.embed_dim} shape{out}.")


def _around_describe(x: Ctx, f: Rows) -> str:
    first, last = f.around[0], f.around[-1]
    return describe.table(
        "each step around the blocks and the shape it gives, beside ViT-B/16's",
        shape_table(f, f.around), f"Above it, the path as one equation; from {first['step']} "
        f"({first['traced']}) to {last['step']} ({last['traced']}).")


def _around_notes(x: Ctx, f: Rows) -> str | None:
    if x.gen is None:
        return None
    c, gen, text = x.c, x.gen, x.text
    last = ("[EOS]" if gen.words[-1:] == ["[EOS]"] else
            f"“{gen.words[-1]}”" if gen.words else "its first token")
    k = len(text) - 1  # words read besides [SOS]
    return (f"A captioner always reads text along with the image, so this is the pass in which "
            f"it wrote the last token of its caption, {last}: it read "
            f"“{' '.join(c.vocab[i] for i in text)}” ([SOS] and the {k} "
            f"word{'' if k == 1 else 's'} it had written before, T = {len(text)} text "
            f"token{'' if len(text) == 1 else 's'}), so S = {c.num_image_tokens} image + "
            f"{len(text)} text tokens = {x.tr['embed'].shape[0]}.")


# ---------------------------------------------------------------- inside one block
def _block_title(c) -> str:
    return ("Inside the block: each step's shape" if c.depth == 1 else
            f"Inside one block (× {c.depth}): each step's shape")


def _block_figure(x: Ctx, f: Rows) -> None:
    _table(shape_table(f, f.block), SHAPE_TABLE_BLOCK)


def _block_words(x: Ctx, f: Rows) -> str:
    c, S, D = x.c, x.tr["embed"].shape[0], x.c.embed_dim
    times = "once" if c.depth == 1 else f"{c.depth} times over"
    return (f"A block maps {S} × {D} to {S} × {D}, {times}; inside, each of its {c.num_heads} "
            f"head{'' if c.num_heads == 1 else 's'} weighs {S} × {S} pairs of tokens and the "
            f"MLP widens every token to {c.mlp_hidden}.")


def _block_describe(x: Ctx, f: Rows) -> str:
    e = extremes([r["params"] for r in f.block])
    most = f.block[e.at_hi[0]]
    return describe.table("each step inside one block and the shape it gives",
                           shape_table(f, f.block), f"The most parameters: {most['step']}, "
                           f"{most['params']:,} in one layer.")


def _block_notes(x: Ctx, f: Rows) -> str:
    return ("The traced shapes are those of block 0 of this pass (every block has the same); "
            "“× layers” counts how often a step runs in one pass, and its parameters are those "
            "of one layer.")


# ---------------------------------------------------------------- what each step costs
def _cost_figure(x: Ctx, f: Rows) -> None:
    _table(cost_rows(f)[0], SHAPE_COST_TABLE)


def _cost_words(x: Ctx, f: Rows) -> str:
    return ("Each row counts what a step's matrix multiplications cost in one pass, all layers "
            "together, next to the same step in ViT-B/16; the steps without one ("
            + ", ".join(cost_rows(f)[1]) + ") cost 0 and are left out.")


def _cost_describe(x: Ctx, f: Rows) -> str:
    costs = [r for r in f.rows if r["step"] not in cost_rows(f)[1]]  # the table's rows
    top = costs[extremes([r["macs"] for r in costs]).at_hi[0]]
    ref = f.ref.get(top["step"])
    b16 = (f"; ViT-B/16's {top['step']}: {si(ref['flops'] // 2 * ref['times'])}" if ref else "")
    return describe.table("each step's multiply-adds and FLOPs over all layers, beside "
                           "ViT-B/16's", cost_rows(f)[0],
                           f"The costliest here: {top['step']}, {si(top['macs'])} MACs{b16}.")


def _cost_notes(x: Ctx, f: Rows) -> str:
    return ("MACs: multiply-adds of the matrix multiplications (m·k·n for an [m, k] @ [k, n] "
            "product), the convention of papers: the “17.6 GFLOPs” quoted for ViT-B/16 are "
            "17.6 G multiply-adds. FLOPs = 2 × MACs (a multiply and an add), the convention of "
            "torch.utils.flop_counter. Softmax, LayerNorm, GELU, pooling and additions are not "
            "counted. G = 10⁹, M = 10⁶, k = 10³.")


def _costliest_question(x: Ctx, f: Rows) -> Question:
    c = x.c
    macs = [(r["step"], r["macs"], block) for r, block in zip(f.rows, f.in_block, strict=True)]
    total = sum(m for _, m, _ in macs)
    most = max(m for _, m, _ in macs)
    tops = [(step, block) for step, m, block in macs if m == most]  # a tie names them all
    both = len(tops) > 1
    names = (", ".join(s for s, _ in tops[:-1]) + " and " if both else "") + tops[-1][0] + (
        ", tied" if both else "")
    how = ("" if len({b for _, b in tops}) > 1 else
           (f", counted over {'their' if both else 'its'} {c.depth} layers" if c.depth > 1 else
            ", in the model's only layer") if tops[0][1] else ", once per pass")
    steps = list(dict.fromkeys(step for step, m, _ in macs if m))  # in table order
    options, right = common.offered({step: m for step, m, _ in macs if m}, tops[0][0], steps)
    return Question("Which step costs the most?",
                    f"{names}: {si(most)} {'each ' if both else ''}of the {si(total)} "
                    f"multiply-adds of one pass ({pct(most / total)}{' each' if both else ''})"
                    f"{how}.", Choice(tuple(options), right))


# ---------------------------------------------------------------- the whole pass
@dataclass(frozen=True)
class Totals:
    params: int
    macs: int
    ref_params: int
    ref_macs: int


def _totals_facts(x: Ctx) -> Totals:
    ref = PRESETS[REF]
    return Totals(total_params(x.c), total_macs(x.c, x.tr.n_text), total_params(ref),
                  total_macs(ref))


def _totals_figure(x: Ctx, f: Totals) -> None:
    for who, params, macs, digits in ((x.label, f.params, f.macs, 2),
                                      ("ViT-B/16", f.ref_params, f.ref_macs, 1)):
        m = st.columns(3)
        m[0].metric(f"{who} parameters", f"{params / 1e6:.{digits}f} M")
        m[1].metric(f"{who} multiply-adds (MACs)", si(macs))
        m[2].metric(f"{who} FLOPs (2 × MACs)", si(2 * macs))


def _totals_describe(x: Ctx, f: Totals) -> str:
    return (f"Two rows of three numbers. {x.label}: {f.params / 1e6:.2f} M parameters, "
            f"{si(f.macs)} multiply-adds (MACs), {si(2 * f.macs)} FLOPs. ViT-B/16: "
            f"{f.ref_params / 1e6:.1f} M parameters, {si(f.ref_macs)} MACs, "
            f"{si(2 * f.ref_macs)} FLOPs.")


def _times(a: float, b: float) -> str:
    """How many times b is a: '127×', or '0.5×' under 10."""
    r = a / max(b, 1)
    return f"{r:,.0f}×" if r >= 10 else f"{r:.1f}×"


def _totals_words(x: Ctx, f: Totals) -> str:
    if (f.macs, f.params) == (f.ref_macs, f.ref_params):
        return (f"One pass of {x.label} is {si(f.macs)} multiply-adds with {f.params:,} "
                f"parameters: exactly ViT-B/16's.")
    return (f"One pass of {x.label} is {si(f.macs)} multiply-adds with {f.params:,} "
            f"parameters; ViT-B/16 needs {_times(f.ref_macs, f.macs)} the multiply-adds and "
            f"has {_times(f.ref_params, f.params)} the parameters.")


# ---------------------------------------------------------------- parameters by component
def _params_facts(x: Ctx) -> dict[str, int]:
    return params_by_component(x.model)


def _params_figure(x: Ctx, f: dict[str, int]) -> None:
    n = total_params(x.c)
    _table([{"component": k, "parameters": f"{v:,}", "share": pct(v / n, 1)}
            for k, v in f.items()], PARAM_TABLE)


def _params_words(x: Ctx, f: dict[str, int]) -> str:
    blocks = (f"a block's attention, MLP and LayerNorms are each summed over its {x.c.depth} "
              f"blocks" if x.c.depth > 1 else
              "its one block's attention, MLP and LayerNorms are a row each")
    return f"The {sum(f.values()):,} parameters of {x.label}, in {len(f)} groups: {blocks}."


def _params_describe(x: Ctx, f: dict[str, int]) -> str:
    n, names = total_params(x.c), list(f)
    e = extremes(list(f.values()))
    hi, lo = names[e.at_hi[0]], names[e.at_lo[0]]
    rows = [{"component": k, "parameters": v, "share": v / n} for k, v in f.items()]
    return describe.table(
        "the parameters by component, each with its share", rows,
        f"The largest, {hi}, has {f[hi]:,} ({pct(f[hi] / n, 1)}); the smallest, {lo}, "
        f"{f[lo]:,} ({pct(f[lo] / n, 1)}).")


def _params_question(x: Ctx, f: dict[str, int]) -> Question:
    """The table's largest row (its groups are the facts', largest first)."""
    groups = dict(f.items())
    n, order = sum(groups.values()), list(groups)
    options, right = common.offered(groups, order[0], order)
    return Question("Where do most of the parameters live?",
                    f"In “{order[0]}”, {groups[order[0]]:,} of {n:,} parameters "
                    f"({pct(groups[order[0]] / n)})"
                    + (f"; then “{order[1]}” ({pct(groups[order[1]] / n)})." if len(order) > 1
                       else "."), Choice(tuple(options), right))


# ---------------------------------------------------------------- cost against patch size
@dataclass(frozen=True)
class BySize:
    """What the chart draws and the sentence says: the model at other patch sizes, with no text
    and no segmentation head (so every point is the same kind of pass)."""

    sizes: list[int]
    macs: list[int]  # all matrix multiplications
    quad: list[float]  # of which QKᵀ and AV
    window: Any = None  # vit_core.explain.windows.WindowCost at the Masks stage's window size

    def share(self, size: int) -> float:
        i = self.sizes.index(size)
        return self.quad[i] / self.macs[i]


def _by_size_facts(x: Ctx) -> BySize:
    c = x.c
    sizes = sorted({s for s in PATCH_SIZES if c.img_size % s == 0} | {c.patch_size})
    configs = [c.replace(patch_size=s, seg_classes=0) for s in sizes]
    macs = [total_macs(k) for k in configs]
    size = int(st.session_state.get(keys.MASK_WINDOW, tour.WINDOW_SIZE))  # the Masks stage's M
    window = window_cost(c, size, shifted=True, n_text=x.tr.n_text) if size < c.grid else None
    return BySize(sizes, macs, [m * attention_share(k) for m, k in zip(macs, configs,
                                                                       strict=True)], window)


def _by_size_figure(x: Ctx, f: BySize) -> None:
    c = x.c
    deck.chart(figures.line_chart(
        f.sizes, {"all matrix multiplications": [m / 1e9 for m in f.macs],
                  "QKᵀ and AV only": [q / 1e9 for q in f.quad]},
        f"{x.label} at {c.img_size}×{c.img_size} with other patch sizes (no text, no seg head)",
        "patch size P", "G multiply-adds (MACs)"), key=COST_VS_PATCH)


def _by_size_words(x: Ctx, f: BySize) -> str:
    P, smallest = x.c.patch_size, min(f.sizes)
    other = (f"; at P = {smallest} it is {pct(f.share(smallest), 1)}" if smallest != P else "")
    said = (f"In the chart, at P = {P} the quadratic part (QKᵀ and AV) is "
            f"{pct(f.share(P), 1)} of the multiply-adds{other}. Shapes never change inside the "
            f"stack: every block maps S×D to S×D.")
    w = f.window
    if w is not None:
        M = w.size
        said += (f" Windows of {M}×{M} patches (Masks stage, shifted on alternate blocks) keep "
                 f"{sum(w.pairs):,} (query, key) pairs per head over the {x.c.depth} "
                 f"block{'' if x.c.depth == 1 else 's'} instead of {w.full_pairs * x.c.depth:,}, "
                 f"{w.ratio:.1f}× fewer: QKᵀ and AV would cost {si(w.macs)} multiply-adds "
                 f"instead of {si(w.full_macs)}.")
    return said


def _by_size_describe(x: Ctx, f: BySize) -> str:
    return describe.curves("patch size P", "G multiply-adds (MACs) of one pass", f.sizes,
                            {"all matrix multiplications": [m / 1e9 for m in f.macs],
                             "QKᵀ and AV only": [q / 1e9 for q in f.quad]}, describe.num)


def _by_size_notes(x: Ctx, f: BySize) -> str:
    return ("Halving P makes 4 times as many patches, so S grows about 4 times: Q, K, V, W_O "
            "and the MLP grow with S, QKᵀ and AV with S², so attention's share of the cost "
            "grows as the patches shrink. The patch embedding costs the same at every P.")


STAGE = deck.Stage(
    slug="shapes",
    name="The shape trace",
    nav="Shape trace", icon=":material/table_chart:",
    story="Here is the whole journey as one table: every shape, every parameter, every "
          "multiplication, next to the full-size ViT-B/16.",
    view=view,
    intro=_intro,
    steps=(
        Step("shapes", "Into the blocks and out: each step's shape", _around_figure,
             facts=_rows, words=_around_words, notes=_around_notes, describe=_around_describe,
             reads=(tour.caption_pass,)),
        Step("block", _block_title, _block_figure, facts=_rows, words=_block_words,
             notes=_block_notes, describe=_block_describe, reads=(tour.caption_pass,)),
        Step("costs", "What each step costs, next to ViT-B/16", _cost_figure, facts=_rows,
             words=_cost_words, notes=_cost_notes, describe=_cost_describe,
             question=_costliest_question,
             asks=("in_block", "rows"),
             reads=(tour.caption_pass,)),
        Step("totals", "The whole pass, next to ViT-B/16", _totals_figure, facts=_totals_facts,
             words=_totals_words, describe=_totals_describe, reads=(tour.caption_pass,)),
        Step("params", "Parameters by component", _params_figure, facts=_params_facts,
             words=_params_words, describe=_params_describe, question=_params_question,
             asks=("items",)),  # asks: every row of the table
        Step("patch", "Attention cost against patch size", _by_size_figure,
             facts=_by_size_facts, words=_by_size_words, notes=_by_size_notes,
             describe=_by_size_describe),
    ),
)
