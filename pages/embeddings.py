"""Stage 2: patch vectors projected by W_E, the CLS token prepended, position embeddings added."""

import numpy as np
import streamlit as st

from ui import controls, figures, keys, show, state

inp, name, model, prep, tr = state.load_current()
c = model.config
P, g, N, D, CPP = c.patch_size, c.grid, c.num_patches, c.embed_dim, c.in_chans * c.patch_size**2
pre = c.num_prefix_tokens
st.title("2 · Patch embeddings" + (", CLS token" if c.class_token else "") + ", positions")
st.write(
    f"Each flattened patch is multiplied by one learned matrix W_E ({CPP}×{D}) and shifted by a "
    f"bias, giving a {D}-number embedding. The same W_E is used for every patch, exactly like a "
    f"convolution with a {P}×{P} kernel and stride {P}. "
    + ("A learned CLS vector is then put in front of the patches; it has no pixels of its own and "
       "will collect a summary of the image through attention. " if c.class_token else "")
    + "Finally a learned position vector is added to every token, because attention itself "
    "does not know where a patch came from."
)
cls_part = r"x_\mathrm{cls};\," if c.class_token else ""
st.latex(rf"z_0 = [\,{cls_part}x_p^1E;\dots;x_p^{{{N}}}E"
         rf"\,] + E_\mathrm{{pos}},\quad E\in\mathbb{{R}}^{{{CPP}\times {D}}},\;"
         rf"E_\mathrm{{pos}}\in\mathbb{{R}}^{{{N + pre}\times {D}}},\; z_0\in\mathbb{{R}}^"
         rf"{{{N + pre}\times {D}}}")
p = controls.patch(c)
W = model.patch_embed.proj.weight.detach()
b = model.patch_embed.proj.bias.detach()
x = tr["patches"][p]
by_hand = x @ W.reshape(D, -1).T + b  # the equation, computed here from the live vectors
st.subheader(f"Patch {p}: {CPP} pixel values → {D} embedding values")
st.plotly_chart(figures.vector_strip(tr["patch_embed"][p].numpy(),
                                     f"x_p E + b for patch {p} (from the trace)", height=130,
                                     x_title=f"dimension (0 … {c.embed_dim - 1})",
                                     value_name="value"),
                key=keys.EMBED_VECTOR)
st.write(f"Recomputed on this page as `patches[{p}] @ W_E + b`: the largest difference from the "
         f"traced value is **{float((by_hand - tr['patch_embed'][p]).abs().max()):.2e}**; "
         f"first values {np.array2string(by_hand[:5].numpy(), precision=3)}.")

left, right = st.columns(2)
with left:
    st.subheader("What W_E looks for")
    views = state.weight_views(name)
    labels = [f"PC{i + 1} {r:.0%}" for i, r in enumerate(views["ratio"])]
    show.image(figures.tile([figures.array_image(a, 56) for a in views["filters"]], cols=7,
                            labels=labels),
               "The top principal components of W_E's filters, each drawn as a "
               f"{P}×{P} colour patch (as in the ViT paper's Figure 7, left); the percentage is "
               "the share of variance it explains."
               + ("" if model.info.trained else " Random weights give noise here."),
               "embedding-filters")
with right:
    st.subheader("Position embeddings")
    sim = views["pos_sim"]
    r, col = divmod(p, g)
    show.image(figures.overlay(prep.crop, sim[r, col], alpha=0.75, cmap="viridis"),
               f"cosine similarity of patch {p}'s position vector with every other position",
               "position-similarity")
    maps = [figures.array_image((sim[i, j] + 1) / 2, 48) for i in range(g) for j in range(g)]
    show.image(figures.tile(maps, cols=g, pad=2, cell=48 if g <= 8 else 24),
               "every position's similarity map, laid out on the grid (Figure 7, centre)",
               "position-similarity-all")

st.subheader("The sum that enters block 0")
first_rows = ["CLS"] if c.class_token else []
emb = tr["embed"][: N + pre].numpy()
st.plotly_chart(figures.matrix_heatmap(
    emb, f"embed = [{'CLS; ' if c.class_token else ''}patch_embed] + E_pos: "
    f"{emb.shape[0]}×{D} (row of patch {p} outlined)", highlight_row=p + pre, square=False,
    height=360, row_labels=figures.token_labels(c),
    row_ticks=figures.token_ticks(figures.token_labels(c), c.grid), y_title="token",
    x_title=f"dimension (0 … {D - 1})", value_name="value"), key=keys.EMBED_MATRIX)
st.write(f"{N} patch rows" + (" + 1 CLS row" if c.class_token else "") +
         f" = **{N + pre}** tokens of **{D}** numbers each.")
st.info("What to notice: neighbouring positions have similar position vectors, so the model "
        "learned the 2-D layout of the grid from data; nothing told it which patches touch."
        if model.info.trained else
        "What to notice: with random weights the position vectors are unrelated to each other; "
        "a trained model learns that neighbouring patches should look alike.")
