"""Stage 3: LayerNorm of one token, then Q, K and V, split into heads; one query-key score."""

import math

import numpy as np
import streamlit as st

from ui import controls, figures, keys, session, steps
from vit_core.explain.tokens import describe_token_numbering, layernorm_steps, token_stats

inp, name, model, prep, tr = session.load_current(text_free_note=True)
c = model.config
D, H, dk, pre = c.embed_dim, c.num_heads, c.head_dim, c.num_prefix_tokens
S = tr["embed"].shape[0]


def num(x: float) -> str:
    """Three decimals, never '-0.000'."""
    text = f"{x:.3f}"
    return text[1:] if text == "-0.000" else text


def share(w: float) -> str:
    """A weight as a percentage that never rounds a small share to 0%."""
    return f"{w:.1%}" if w >= 0.001 or w == 0 else f"{w * 100:.2g}%"


mant, _, expo = f"{c.norm_eps:.0e}".partition("e")
tex_eps = rf"{mant}\cdot 10^{{{int(expo)}}}" if mant != "1" else rf"10^{{{int(expo)}}}"
labels = figures.token_labels(c)
st.title("3 · LayerNorm, then queries, keys and values")
if steps.first():
    st.write(
        "Before attention, every token is normalised on its own: subtract its mean, divide by its "
        "standard deviation, then scale and shift with two learned vectors γ and β. Then three "
        f"learned matrices turn each normalised token into a query (what am I looking for?), a key "
        f"(what do I contain?) and a value (what do I pass on?). The {D} columns are split into "
        + (f"{H} heads of {dk}, so each head compares tokens in its own small space." if H > 1 else
           f"1 head of {dk}: this model has a single head, so it compares tokens in all {D} "
           "dimensions at once.")
    )
cols = st.columns(4)
with cols[0]:
    layer = controls.layer(c)
with cols[1]:
    head = controls.head(c)
with cols[2]:
    p = controls.patch(c, label="Query patch")
with cols[3]:
    kp = st.number_input("Key patch", 0, c.num_patches - 1, key=keys.KEY_PATCH)
use_cls = c.class_token and st.toggle("Use the CLS token as the query", key=keys.QUERY_IS_CLS)
i = 0 if use_cls else p + pre  # token index of the query
j = int(kp) + pre  # token index of the key
st.caption(describe_token_numbering(c, p) + " The equations below use token numbers.")

x_in = tr[f"blocks.{layer}.resid_pre"]  # the block's input X
x_ln = tr[f"blocks.{layer}.ln1"]
norm1 = model.blocks[layer].norm1
ln = layernorm_steps(x_in[i], norm1.weight.detach(), norm1.bias.detach(), c.norm_eps)
before, normalised, after = ln["before"], ln["normalised"], token_stats(x_ln[i])
if steps.show("qkv", 0):
    st.subheader(f"LayerNorm of {labels[i]} (token {i}) at block {layer}")
    st.latex(r"\mathrm{LN}(x) = \gamma\odot\frac{x-\mu}{\sqrt{\sigma^2+\epsilon}}+\beta,\quad "
             rf"\mu={num(before['mean'])},\ \sigma={num(before['std'])},\ \epsilon={tex_eps}")
    m = st.columns(4)
    m[0].metric("mean before (μ)", f"{num(before['mean'])}")
    m[1].metric("std before (σ)", f"{num(before['std'])}")
    m[2].metric("mean after LN", f"{num(after['mean'])}")
    m[3].metric("std after LN", f"{num(after['std'])}")
    st.plotly_chart(figures.histogram_pair(
        x_in[i].numpy(), x_ln[i].numpy(), names=("before LN (the block's input X)",
                                                 "after LN (with γ, β)"),
        title=f"the {D} values of {labels[i]}, before and after LayerNorm",
        x_title="value of one of the token's numbers", y_title=f"how many of the {D} numbers"),
        key=keys.LN_HIST)
    if ln["identity"]:
        ln_note = (f"This layer's γ is all ones and β all zeros (as initialised), so LN's output "
                   f"is just the normalised token: mean {num(after['mean'])}, std "
                   f"{num(after['std'])}.")
    else:
        ln_note = (f"γ and β then scale and shift it to mean {num(after['mean'])} and std "
                   f"{num(after['std'])}: where this layer wants its input.")
    st.caption(f"After subtracting μ and dividing by √(σ² + ε), the token has mean "
               f"{num(normalised['mean'])} and std {num(normalised['std'])} (ε keeps the division "
               f"safe). " + ln_note)

q, k, v = (tr[f"blocks.{layer}.attn.{n}"][head] for n in "qkv")
if steps.show("qkv", 1):
    st.subheader("Q, K and V, split into heads")
    bias = {n: rf" + b_{n}" if c.qkv_bias else "" for n in "QKV"}  # timm's qkv_bias
    st.latex(rf"Q = \tilde X W_Q{bias['Q']},\ K = \tilde X W_K{bias['K']},\ "
             rf"V = \tilde X W_V{bias['V']}:\ [{S}\times{D}]\cdot[{D}\times{D}] = "
             rf"[{S}\times{D}] \;\to\; [{H}\times{S}\times{dk}]")
    hc = st.columns(3)
    ticks = figures.token_ticks(labels[:S], c.grid, figures.tick_gap(S, 380))
    for col, mat, nm in zip(hc, (q, k, v), "QKV", strict=True):
        role = {"Q": " (outlined: the query)", "K": " (outlined: the key)", "V": ""}[nm]
        col.plotly_chart(figures.matrix_heatmap(
            mat.numpy(), f"{nm} of head {head}, block {layer}: {S}×{dk}", row_labels=labels[:S],
            row_ticks=ticks, y_title=f"token{role}",
            x_title=f"dimension of the head (0 … {dk - 1})",
            value_name={"Q": "query entry", "K": "key entry", "V": "value entry"}[nm],
            highlight_row=i if nm == "Q" else j if nm == "K" else None, square=False, height=380),
            key=keys.qkv(nm))

if steps.show("qkv", 1):  # the score under Q, K and V: one step
    st.subheader("One attention score, by hand")
    dot = float(q[i] @ k[j])
    score = dot / math.sqrt(dk)
    traced = float(tr[f"blocks.{layer}.attn.scores"][head, i, j])
    weight = float(tr[f"blocks.{layer}.attn.pattern"][head, i, j])
    masked = not math.isfinite(traced)
    equation = (rf"\frac{{q_{{{i}}}\cdot k_{{{j}}}}}{{\sqrt{{d_k}}}} = \frac{{{dot:.4f}}}"
                rf"{{\sqrt{{{dk}}}}} = {score:.4f}")
    who = (f"Query **{labels[i]}** (token {i}), key **{labels[j]}** (token {j}), layer {layer}, "
           f"head {head}")
    row = tr[f"blocks.{layer}.attn.scores"][head, i]
    visible = row[row.isfinite()]
    if masked:
        st.latex(equation + rf",\quad \text{{then }} + M_{{{i},{j}}} = -\infty")
        st.write(f"{who}: q·k/√d_k = {score:.4f} is computed, but the {tr.mask_kind} mask sets "
                 f"this entry to −∞ (token {i} may not look at token {j}), so softmax gives it "
                 f"weight {weight:g}: the score matrix of the trace holds −∞ there.")
        notice = (f"a score is just a dot product, but a mask decides whether it counts: this "
                  f"key is hidden from this query, which may look at only {len(visible)} of the "
                  f"{S} tokens.")
    else:
        st.latex(equation)
        st.write(f"{who}: q·k/√d_k = **{score:.4f}**. The attention page shows the same entry of "
                 f"the score matrix: {traced:.4f}; after the softmax over the row this key gets "
                 f"{share(weight)} of the query's attention.")
        rank = int((visible > traced).sum()) + 1
        notice = (f"a score is just a dot product: keys that point the same way as the query get "
                  f"large scores. This key's score ranks {rank} of the {len(visible)} keys this "
                  f"query may look at; softmax on the next page turns the row into weights.")
    st.caption(f"q = {np.array2string(q[i][:4].numpy(), precision=3)} …, "
               f"k = {np.array2string(k[j][:4].numpy(), precision=3)} … ({dk} numbers each)")
    st.info("What to notice: " + notice)
