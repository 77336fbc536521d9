"""Stage 1: the image the model sees, cut into patches; one patch flattened into a vector."""

import numpy as np
import streamlit as st

from ui import controls, figures, keys, session, show, steps
from vit_core.io.images import denormalize, describe_preprocessing

inp, name, model, prep, tr = session.load_current()
c = model.config
P, g, N, CPP = c.patch_size, c.grid, c.num_patches, c.in_chans * c.patch_size**2
pre = c.num_prefix_tokens
preprocessing = describe_preprocessing(c)
st.title("1 · Input and patch grid")
if steps.first():
    st.write(
        f"A transformer reads a sequence of vectors, so the image has to become one. First your "
        f"picture is prepared the way this model expects: {preprocessing}. The model then cuts the "
        f"{c.img_size}×{c.img_size} result into a grid of {g}×{g} patches of {P}×{P} pixels and "
        f"flattens each patch into a row of {c.in_chans}·{P}² = {CPP} numbers. No learning happens "
        f"here: it is pure reshaping."
    )
    st.latex(rf"N = \frac{{H}}{{P}}\cdot\frac{{W}}{{P}} = \frac{{{c.img_size}}}{{{P}}}\cdot"
             rf"\frac{{{c.img_size}}}{{{P}}} = {N},\qquad X_\mathrm{{patch}} = "
             rf"\mathcal{{U}}(X_\mathrm{{img}}) \in \mathbb{{R}}^{{{N}\times {CPP}}}")
p = st.session_state[keys.PATCH]
if steps.show("patches", 0):
    left, right = st.columns([3, 2])
    with left:
        st.plotly_chart(figures.patch_grid(prep.crop, P, selected=p, show_index=g <= 16),
                        key=keys.GRID_CLICK, on_select=lambda: controls.select_patch_from_chart(
                            keys.GRID_CLICK), selection_mode="points")
        st.caption(f"{inp.label} · what this model does to a photo: {preprocessing} · "
                   "click a patch to select it")
    with right:
        p = controls.patch(c)
        r, col = divmod(p, g)
        st.subheader(f"Patch {p}: row {r}, column {col}")
        show.image(figures.enlarged_patch(prep.crop, r, col, P, 224),
                   f"pixels {r * P}–{(r + 1) * P - 1} down, {col * P}–{(col + 1) * P - 1} across, "
                   "enlarged", "patch-enlarged")
if steps.show("patches", 1) and not steps.show("patches", 0):  # presenter mode, step 2
    p = controls.patch(c)
if steps.show("patches", 1):
    vec = tr["patches"][p].numpy()  # the live row of X_patch (normalised pixel values)
    st.plotly_chart(figures.vector_strip(
        vec, f"Patch {p} flattened: {CPP} numbers, one row per colour channel (normalised values)",
        rows=c.in_chans, row_names=["R", "G", "B"][: c.in_chans], height=180,
        x_title=f"pixel in the patch, row by row (0 … {c.patch_size ** 2 - 1})",
        value_name="normalised pixel", y_title="channel"),
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


def cost(size: int) -> dict:
    """Patches, tokens and attention entries per head if this image were cut at `size`."""
    n = (c.img_size // size) ** 2
    s = n + pre
    return {"N": n, "S": s, "S2": s * s}


if steps.show("patches", 2):
    st.subheader("What if the patches were another size?")
    sizes = sorted({s for s in (8, 14, 16, 28, 32) if c.img_size % s == 0} | {P})
    if st.session_state.get(keys.WHAT_IF_P) not in sizes:  # first visit, or another model
        smaller = [s for s in sizes if s < P]
        st.session_state[keys.WHAT_IF_P] = smaller[-1] if smaller else sizes[-1]
    if len(sizes) > 1:
        what_if = st.select_slider("Patch size P", sizes, key=keys.WHAT_IF_P,
                                   help=f"This model uses P = {P}; only sizes that divide the "
                                        f"{c.img_size}-pixel image are offered.")
    else:
        what_if = P
        st.write(f"Patch size P = {P}: no other size from 8, 14, 16, 28, 32 divides the "
                 f"{c.img_size}-pixel image, so only this model's own P is shown.")
    own, new = cost(P), cost(what_if)
    tokens = " + ".join(["N"] + list(c.prefix_names))
    left, right = st.columns([3, 2])
    with left:
        st.plotly_chart(figures.patch_grid(prep.crop, what_if,
                                           show_index=c.img_size // what_if <= 8, height=360),
                        key=keys.WHAT_IF_GRID)
        st.caption(f"The same {c.img_size}×{c.img_size} crop cut at P = {what_if}: a grid of "
                   f"{c.img_size // what_if}×{c.img_size // what_if} patches"
                   + (" (this model's own patch size)." if what_if == P else
                      f" (this model uses P = {P})."))
    with right:
        st.metric(f"patches N = ({c.img_size}/{what_if})²", f"{new['N']:,}",
                  delta=f"{new['N'] / own['N']:.3g}× this model's {own['N']:,}"
                  if what_if != P else None, delta_color="off", delta_arrow="off")
        st.metric(f"sequence length S = {tokens}" + (" (+ the text, while it writes)"
                                                      if c.has_text else ""), f"{new['S']:,}")
        st.metric("attention entries per head and layer (S²)", f"{new['S2']:,}",
                  delta=f"{new['S2'] / own['S2']:.3g}× this model's {own['S2']:,}"
                  if what_if != P else None, delta_color="off", delta_arrow="off")
    rows = [{"P": s, "grid": f"{c.img_size // s}×{c.img_size // s}", "N patches": cost(s)["N"],
             "tokens S": cost(s)["S"], "values per patch (C·P²)": c.in_chans * s * s,
             "attention entries per head (S²)": cost(s)["S2"],
             "× this model's": round(cost(s)["S2"] / own["S2"], 2)} for s in sizes]
    st.dataframe(rows, hide_index=True, key=keys.WHAT_IF_TABLE)
    if what_if == P:
        half = P // 2 if P % 2 == 0 else None
        note = (f"this is the model's own patch size: N = {own['N']:,} patches, S = {own['S']:,} "
                f"tokens, {own['S2']:,} query–key pairs per head and layer.")
        if half:
            h = cost(half)
            note += (f" Halving P to {half} would give N = {h['N']:,} (4×) and {h['S2']:,} pairs "
                     f"({h['S2'] / own['S2']:.3g}×): attention cost grows with the square of the "
                     "token count.")
    else:
        note = (f"at P = {what_if} instead of {P}, N = {new['N']:,} instead of {own['N']:,} "
                f"({new['N'] / own['N']:.3g}×), and each attention head compares {new['S2']:,} "
                f"instead of {own['S2']:,} query–key pairs ({new['S2'] / own['S2']:.3g}×): N grows "
                f"with 1/P², and attention with the square of the token count."
                + (" Smaller patches see finer detail and pay for it in attention."
                   if what_if < P else " Bigger patches are cheaper but see coarser detail."))
    st.info("What to notice: " + note)
