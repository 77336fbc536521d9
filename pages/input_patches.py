"""Stage 1: the image the model sees, cut into patches; one patch flattened into a vector."""

import numpy as np
import streamlit as st

from ui import controls, figures, keys, show, state
from vit_core.io.images import denormalize

inp, name, model, prep, tr = state.load_current()
c = model.config
P, g, N, CPP = c.patch_size, c.grid, c.num_patches, c.in_chans * c.patch_size**2
st.title("1 · Input and patch grid")
st.write(
    f"A transformer reads a sequence of vectors, so the image has to become one. The model "
    f"first resizes and centre-crops your picture to {c.img_size}×{c.img_size} pixels, then "
    f"cuts it into a {g}×{g} grid of {P}×{P} patches and flattens each patch into a row of "
    f"{c.in_chans}·{P}² = {CPP} numbers. No learning happens here: it is pure reshaping."
)
st.latex(rf"N = \frac{{H}}{{P}}\cdot\frac{{W}}{{P}} = \frac{{{c.img_size}}}{{{P}}}\cdot"
         rf"\frac{{{c.img_size}}}{{{P}}} = {N},\qquad X_\mathrm{{patch}} = \mathcal{{U}}(X_\mathrm"
         rf"{{img}}) \in \mathbb{{R}}^{{{N}\times {CPP}}}")
p = st.session_state[keys.PATCH]
left, right = st.columns([3, 2])
with left:
    st.plotly_chart(figures.patch_grid(prep.crop, P, selected=p, show_index=g <= 16),
                    key=keys.GRID_CLICK, on_select=lambda: controls.select_patch_from_chart(
                        keys.GRID_CLICK), selection_mode="points")
    st.caption(f"{inp.label} · click a patch to select it")
with right:
    p = controls.patch(c)
    r, col = divmod(p, g)
    st.subheader(f"Patch {p}: row {r}, column {col}")
    show.image(figures.enlarged_patch(prep.crop, r, col, P, 224),
               f"pixels {r * P}–{(r + 1) * P - 1} down, {col * P}–{(col + 1) * P - 1} across, "
               "enlarged", "patch-enlarged")
vec = tr["patches"][p].numpy()  # the live row of X_patch (normalised pixel values)
st.plotly_chart(figures.vector_strip(
    vec, f"Patch {p} flattened: {CPP} numbers, one row per colour channel (normalised values)",
    rows=c.in_chans, row_names=["R", "G", "B"][: c.in_chans], height=180,
    x_title=f"pixel in the patch, row by row (0 … {c.patch_size ** 2 - 1})",
    value_name="normalised pixel"),
    key=keys.PATCH_VECTOR)
back = denormalize(tr["patches"][p].reshape(c.in_chans, P, P), c)  # undo the normalisation
st.caption(f"First values: {np.array2string(vec[:6], precision=3)} … — pixel (0, 0) of patch "
           f"{p} is R={back[0, 0, 0] * 255:.0f} before normalisation by mean {c.mean[0]} and "
           f"std {c.std[0]}.")
st.plotly_chart(figures.matrix_heatmap(
    tr["patches"].numpy(), f"X_patch: all {N} patches × {CPP} values (row {p} outlined)",
    highlight_row=p, square=False, height=360, value_name="normalised pixel",
    y_title=f"patch (0 … {N - 1})", x_title=f"value in the flattened patch (0 … {CPP - 1})"),
    key=keys.PATCH_MATRIX)

st.subheader("What if the patches were another size?")
sizes = [s for s in (8, 14, 16, 28, 32) if c.img_size % s == 0]
what_if = st.select_slider("Patch size P", sizes, value=P if P in sizes else sizes[-1],
                           key=keys.WHAT_IF_P)
rows = []
for s in sizes:
    n = (c.img_size // s) ** 2
    S = n + c.num_prefix_tokens
    rows.append({"P": s, "grid": f"{c.img_size // s}×{c.img_size // s}", "N patches": n,
                 "values per patch (C·P²)": c.in_chans * s * s,
                 "attention entries per head (S²)": S * S,
                 "× this model's": round(S * S / (N + c.num_prefix_tokens) ** 2, 2)})
st.dataframe(rows, hide_index=True, key=keys.WHAT_IF_TABLE)
n_new = (c.img_size // what_if) ** 2
st.write(f"With P = {what_if}: N = ({c.img_size}/{what_if})² = **{n_new}** patches, and each "
         f"attention head would compare **{(n_new + c.num_prefix_tokens) ** 2:,}** query–key "
         f"pairs per layer.")
st.info("What to notice: halving P quadruples N, and the attention matrix grows with N², so "
        "it costs about 16× more. Small patches see finer detail at a steep price.")
