"""Stage 4: attention, head by head: scores, softmax, where each patch looks, and summaries."""

import streamlit as st

from ui import controls, figures, keys, show, state
from vit_core.explain.attention import max_entropy

inp, name, model, prep, tr = state.load_current()
c = model.config
g, pre, H, L, dk = c.grid, c.num_prefix_tokens, c.num_heads, c.depth, c.head_dim
S = tr["embed"].shape[0]
labels = figures.token_labels(c)
st.title("4 · Attention heads")
st.write(
    "Each head turns its scores into weights with a softmax over every row, so each query "
    "spreads exactly 1 unit of attention over the keys. Its output for a token is the weighted "
    "average of the value vectors. Different heads learn different habits: some look at "
    "neighbours, some at the whole object, some at the CLS token."
)
cols = st.columns(3)
with cols[0]:
    layer = controls.layer(c)
with cols[1]:
    head = controls.head(c)
with cols[2]:
    p = controls.patch(c)
scores = tr[f"blocks.{layer}.attn.scores"][head]
pattern = tr[f"blocks.{layer}.attn.pattern"][head]
st.latex(rf"A = \mathrm{{softmax}}\!\left(\frac{{QK^\top}}{{\sqrt{{{dk}}}}} + M\right)\in"
         rf"\mathbb{{R}}^{{{S}\times{S}}},\qquad \mathrm{{head}} = AV\in\mathbb{{R}}^{{{S}\times"
         rf"{dk}}}")
view = st.radio("Show", ["raw scores q·k", "scaled scores q·k/√d_k", "softmax pattern A"],
                index=2, horizontal=True, key=keys.ATTN_VIEW)
if view.startswith("raw"):
    z, title, scale = scores * dk**0.5, "raw scores q·k", "RdBu_r"
elif view.startswith("scaled"):
    z, title, scale = scores, "scaled scores q·k/√d_k", "RdBu_r"
else:
    z, title, scale = pattern, "attention pattern A (rows sum to 1)", "Viridis"
st.plotly_chart(figures.matrix_heatmap(
    z.numpy(), f"Layer {layer}, head {head}: {title}, {S}×{S}", row_labels=labels[:S],
    col_labels=labels[:S], highlight_row=p + pre, colorscale=scale,
    zmid=None if scale == "Viridis" else 0.0, height=560,
    x_title="key token (what is looked at)", y_title="query token (who looks)",
    value_name="attention weight" if scale == "Viridis" else "score",
    row_ticks=figures.token_ticks(labels[:S], g), col_ticks=figures.token_ticks(labels[:S], g),
    boundaries=(pre,) if pre else ()), key=keys.ATTN_MATRIX)
st.caption("Rows are queries, columns are keys; hover a cell to see which token looks at which. "
           "The selected patch's row is outlined.")

left, right = st.columns(2)
with left:
    st.subheader(f"Where patch {p} looks")
    row = pattern[p + pre, pre:pre + g * g].reshape(g, g).numpy()
    show.image(figures.overlay(prep.crop, row),
               f"layer {layer}, head {head}: patch {p}'s attention over the patches"
               + (f" (and {float(pattern[p + pre, 0]):.1%} on CLS)" if pre else ""),
               "attention-where")
with right:
    st.subheader(f"Who looks at patch {p}")
    col = pattern[pre:pre + g * g, p + pre].reshape(g, g).numpy()
    show.image(figures.overlay(prep.crop, col), f"how much each patch attends to patch {p}",
               "attention-who")

summary = state.attention_summary(inp, name)  # computed once per trace
patterns = summary["patterns"]  # [L, H, S, S]
if c.class_token:
    st.subheader(f"Every head's CLS attention in layer {layer}")
    maps = [figures.overlay(prep.crop, patterns[layer, h, 0, pre:pre + g * g]
                            .reshape(g, g).numpy()) for h in range(H)]
    show.image(figures.tile(maps, cols=min(H, 6), labels=[f"head {h}" for h in range(H)],
                            cell=160),
               "Bright = where the CLS token reads from. Each map is scaled on its own.",
               "cls-heads")

st.subheader("Attention rollout: all layers together")
roll = summary["rollout"]
src = 0 if c.class_token else None
roll_map = (roll[src, pre:] if src is not None else roll[pre:, pre:].mean(0)).reshape(g, g)
show.image(figures.overlay(prep.crop, roll_map.numpy()),
           "Rollout (Abnar & Zuidema): average heads, add the skip connection, renormalise, "
           "and multiply the layers; " + ("the CLS row." if c.class_token else
                                          "averaged over patch rows."), "rollout", width=360)

st.subheader("Head summaries across depth")
dist, ent = summary["distance"], summary["entropy"]
left, right = st.columns(2)
with left:
    st.plotly_chart(figures.line_chart(
        range(L), {f"head {h}": dist[:, h] for h in range(H)}, "Mean attention distance",
        "layer", "pixels", mode="markers"), key=keys.ATTN_DISTANCE)
    st.caption("How far, in pixels, a patch looks on average (the ViT paper's Figure 7, right).")
with right:
    st.plotly_chart(figures.matrix_heatmap(
        ent, f"Attention entropy (nats; uniform = {max_entropy(S):.2f})",
        row_labels=[f"layer {i}" for i in range(L)], col_labels=[f"head {h}" for h in range(H)],
        colorscale="Viridis", zmid=None, square=False, height=320, value_name="entropy (nats)",
        x_title="head", y_title="layer"),
        key=keys.ATTN_ENTROPY)
    st.caption("Low entropy: a head that focuses on a few tokens; high: one that averages.")
st.info("What to notice: early heads mix local and global distances, while late heads in a "
        "trained model concentrate on the object; rollout shows where the final CLS token's "
        "information came from." if model.info.trained else
        "What to notice: with random weights every head spreads attention almost evenly "
        "(entropy near the maximum): attention patterns are learned, not built in.")
