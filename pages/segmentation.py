"""Stage 9: the segmentation pivot: keep the patch tokens, lay them on the grid, label each."""

import numpy as np
import streamlit as st

from ui import figures, keys, show, state
from vit_core.explain.segmentation import class_map

inp, name, model, prep, tr = state.load_current()
c = model.config
g, N, D, pre = c.grid, c.num_patches, c.embed_dim, c.num_prefix_tokens
st.title("9 · The segmentation pivot")
st.write(
    f"Classification keeps one vector, CLS, and throws away where things are. Segmentation "
    f"wants a label for every pixel, so it does the opposite: drop CLS, keep the {N} patch "
    f"tokens, and put them back on their {g}×{g} grid. That grid is a feature map, like a CNN's, "
    f"except every cell has already seen the whole image through attention. A small head labels "
    f"each cell, and the labels are upsampled to pixels."
)
st.latex(rf"Z_\mathrm{{patches}} = Z_L[{pre}{{:}}] \in \mathbb{{R}}^{{{N}\times{D}}}\;\to\;"
         rf"\mathbb{{R}}^{{{g}\times{g}\times{D}}}\;\to\;\mathbb{{R}}^{{{c.img_size}\times"
         rf"{c.img_size}\times K}}")
left, right = st.columns(2)
with left:
    st.subheader("Patch tokens as colours")
    rgb = state.patch_pca(inp, name)
    show.image(figures.tile([prep.crop, figures.array_image(rgb.transpose(2, 0, 1),
                                                           c.img_size)], cols=2, cell=240),
               "the image, and its patch tokens' first three principal components as red, "
               "green and blue: patches with similar colours have similar final vectors",
               "patch-token-pca")
with right:
    st.subheader("Class map")
    if "seg_logits" in tr:
        labels = class_map(tr["seg_logits"], g, c.img_size).numpy()
        names = ["background"] + list(c.class_names or range(c.seg_classes - 1))
        show.image(figures.class_map_image(prep.crop, labels, c.seg_classes - 1),
                   f"each pixel's class from the per-patch head ({c.seg_upsample}×"
                   f"{c.seg_upsample} cells per patch, upsampled bilinearly)", "class-map")
        found = {names[k]: float((labels == k).mean()) for k in np.unique(labels)}
        st.dataframe([{"class": k, "share of the image": f"{v:.1%}"} for k, v in
                      sorted(found.items(), key=lambda kv: -kv[1])], hide_index=True,
                     key=keys.SEG_TABLE)
    else:
        st.warning(f"{name} has no segmentation head. The bundled shapes-classifier has one; "
                   "the colours on the left still show how its patch tokens group.")
st.info("What to notice: the class map is sharper than the patch grid because each patch "
        "token predicts several cells, yet its edges still follow the patch boundaries.")
