"""Stage 3: LayerNorm of one token, then Q, K and V, split into heads; one query-key score."""

import math

import numpy as np
import streamlit as st

from ui import controls, figures, keys, state
from vit_core.explain.tokens import token_stats

inp, name, model, prep, tr = state.load_current()
c = model.config
D, H, dk, pre = c.embed_dim, c.num_heads, c.head_dim, c.num_prefix_tokens
S = tr["embed"].shape[0]
labels = figures.token_labels(c)
st.title("3 · LayerNorm, then queries, keys and values")
st.write(
    "Before attention, every token is normalised on its own: subtract its mean, divide by its "
    "standard deviation, then scale and shift with two learned vectors γ and β. Then three "
    f"learned matrices turn each normalised token into a query (what am I looking for?), a key "
    f"(what do I contain?) and a value (what do I pass on?). The {D} columns are split into "
    f"{H} heads of {dk}, so each head compares tokens in its own small space."
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

x_in = tr[f"blocks.{layer}.resid_pre"]  # the block's input X
x_ln = tr[f"blocks.{layer}.ln1"]
before, after = token_stats(x_in[i]), token_stats(x_ln[i])
st.subheader(f"LayerNorm of {labels[i]} at block {layer}")
st.latex(r"\mathrm{LN}(x) = \gamma\odot\frac{x-\mu}{\sqrt{\sigma^2+\epsilon}}+\beta,\quad "
         rf"\mu={before['mean']:.3f},\ \sigma={before['std']:.3f}")
m = st.columns(4)
m[0].metric("mean before", f"{before['mean']:.3f}")
m[1].metric("std before", f"{before['std']:.3f}")
m[2].metric("mean after", f"{after['mean']:.3f}")
m[3].metric("std after", f"{after['std']:.3f}")
st.plotly_chart(figures.histogram_pair(x_in[i].numpy(), x_ln[i].numpy(),
                                       names=("before LN", "after LN (with γ, β)"),
                                       title=f"the {D} values of {labels[i]}"), key=keys.LN_HIST)
st.caption("After the division every token has mean 0 and std 1; γ and β then move it to where "
           "this layer wants it, which is why the 'after' numbers are not exactly 0 and 1.")

st.subheader("Q, K and V, split into heads")
st.latex(rf"Q = \tilde X W_Q,\ K = \tilde X W_K,\ V = \tilde X W_V:\ [{S}\times{D}]\cdot"
         rf"[{D}\times{D}] = [{S}\times{D}] \;\to\; [{H}\times{S}\times{dk}]")
q, k, v = (tr[f"blocks.{layer}.attn.{n}"][head] for n in "qkv")
hc = st.columns(3)
for col, mat, nm in zip(hc, (q, k, v), "QKV", strict=True):
    col.plotly_chart(figures.matrix_heatmap(
        mat.numpy(), f"{nm} of head {head}: {S}×{dk}", row_labels=labels[:S],
        row_ticks=figures.token_ticks(labels[:S], c.grid), y_title="token",
        x_title=f"dimension of the head (0 … {dk - 1})", value_name=nm.lower(),
        highlight_row=i if nm == "Q" else j if nm == "K" else None, square=False, height=380),
        key=keys.qkv(nm))

st.subheader("One attention score, by hand")
dot = float(q[i] @ k[j])
score = dot / math.sqrt(dk)
traced = float(tr[f"blocks.{layer}.attn.scores"][head, i, j])
st.latex(rf"\frac{{q_{{{i}}}\cdot k_{{{j}}}}}{{\sqrt{{d_k}}}} = \frac{{{dot:.4f}}}"
         rf"{{\sqrt{{{dk}}}}} = {score:.4f}")
st.write(f"Query **{labels[i]}**, key **{labels[j]}**, layer {layer}, head {head}: "
         f"q·k/√d_k = **{score:.4f}**. The attention page shows the same entry of the score "
         f"matrix: {traced:.4f}.")
st.caption(f"q = {np.array2string(q[i][:4].numpy(), precision=3)} …, "
           f"k = {np.array2string(k[j][:4].numpy(), precision=3)} … ({dk} numbers each)")
st.info("What to notice: a score is just a dot product. Keys that point the same way as the "
        "query get large scores; softmax on the next page turns a row of scores into weights.")
