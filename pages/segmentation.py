"""Stage 9: the segmentation pivot: keep the patch tokens, lay them on the grid, label each."""

import numpy as np
import streamlit as st
import torch

from ui import figures, keys, models, session, show, state
from ui.numbers import percent
from vit_core.explain.attention import allowed_from_mask
from vit_core.explain.segmentation import boundary_note, boundary_stats, class_map, pca_variance

inp, name, model, prep, tr = session.load_current(text_free_note=True)
c = model.config
g, N, D, pre, P = c.grid, c.num_patches, c.embed_dim, c.num_prefix_tokens, c.patch_size
prefix = " and ".join(c.prefix_names)
st.title("9 · The segmentation pivot")
drop = (f"drop {prefix}, keep the {N} patch tokens" if pre else
        f"keep all {N} patch tokens (this model has no CLS token to drop)")

# What a patch token has seen by the last layer, read from the mask this trace ran with: under
# the full (or prefix) mask every patch sees every patch; under the causal mask patch i sees only
# the tokens before it and itself.
S = c.num_image_tokens
allowed = allowed_from_mask(tr.mask)[:S, :S]  # the additive mask, as booleans
seen = allowed[pre:pre + N, pre:pre + N]
if bool(seen.all()):
    reach = "except every cell has already seen the whole image through attention"
elif torch.equal(seen, torch.ones(N, N, dtype=torch.bool).tril()):
    before = f"{prefix} and " if pre and bool(allowed[pre:pre + N, :pre].all()) else ""
    reach = (f"except that attention has mixed the patches only forwards: under the "
             f"{tr.mask_kind} mask patch i has seen only {before}patches 0 to i (in reading "
             f"order), so patch 0 has seen no other patch and only the last, patch {N - 1}, has "
             f"seen the whole image")
else:
    counts = seen.sum(1)
    reach = (f"except that attention has mixed the patches: under the {tr.mask_kind} mask each "
             f"cell has seen between {int(counts.min())} and {int(counts.max())} of the {N} "
             f"patches")
st.write(
    f"Classification keeps one summary of the image and throws away where things are. "
    f"Segmentation wants a label for every pixel, so it does the opposite: {drop}, and put "
    f"them back on their {g}×{g} grid. That grid is a feature map, like a CNN's, "
    f"{reach}. A small head scores each cell for every class, and the scores are upsampled to "
    f"pixels."
)
K = rf"K_\mathrm{{seg}}={c.seg_classes}" if c.seg_classes else "K"
st.latex(rf"Z_\mathrm{{patches}} = Z_L[{pre}{{:}}{pre + N}] \in \mathbb{{R}}^{{{N}\times{D}}}"
         rf"\;\to\;\mathbb{{R}}^{{{g}\times{g}\times{D}}}\;\to\;\mathbb{{R}}^{{{c.img_size}\times"
         rf"{c.img_size}\times {K}}}")
left, right = st.columns(2)
with left:
    st.subheader("Patch tokens as colours")
    rgb = state.patch_pca(inp, name, session.chosen_mask())
    share = pca_variance(tr["ln_final"][pre:pre + N])
    show.image(figures.tile([prep.crop, figures.array_image(rgb.transpose(2, 0, 1),
                                                           c.img_size)], cols=2, cell=240),
               "left: the image; right: each patch's final vector ("
               + ("this model has no final LayerNorm: its fc_norm comes after pooling"
                  if c.fc_norm else "after the final LayerNorm")
               + ") projected on the first three principal components of this image's "
               f"{N} patch vectors, shown as red, green and blue (each scaled to 0–1 over the "
               "patches)", "patch-token-pca")
    st.caption(f"The three components explain {share[0]:.0%}, {share[1]:.0%} and "
               f"{share[2]:.0%} of the variance of the patch vectors. Patches with similar "
               f"colours have similar final vectors; the colours themselves have no fixed "
               f"meaning and change from image to image.")
stats = None
with right:
    st.subheader("Class map")
    if "seg_logits" in tr:
        labels = class_map(tr["seg_logits"], g, c.img_size).numpy()
        names = ["background"] + [str(n) for n in (c.class_names or range(c.seg_classes - 1))]
        palette = figures.class_palette(c.seg_classes - 1)
        found = {k: float((labels == k).mean()) for k in np.unique(labels)}
        order = sorted(found, key=lambda k: -found[k])
        entries = [(f"{names[k]} {percent(found[k])}", tuple(palette[k])) for k in order]
        r = c.seg_upsample
        show.image(figures.with_legend(figures.class_map_image(prep.crop, labels,
                                                               c.seg_classes - 1), entries),
                   f"each pixel's class from the per-patch head ({r}×{r} cells per patch, "
                   f"scores upsampled bilinearly, then the most likely class), painted at 55 % "
                   f"over the image; the legend lists the classes found and their share of the "
                   f"pixels", "class-map")
        st.dataframe([{"class": names[k], "share of the image": percent(found[k], 1)}
                      for k in order], hide_index=True, key=keys.SEG_TABLE)
        stats = boundary_stats(labels, P)
    else:
        st.info(f"{models.plain_label(name)} has no segmentation head, so there is no class map; "
                f"the bundled shapes-classifier has one.")
if stats is not None:
    st.info("What to notice: " + boundary_note(stats, c.seg_upsample))
else:
    st.info(f"What to notice: the first three components hold {float(share.sum()):.0%} of the "
            f"variance of these {N} patch vectors, so the colours show "
            + ("most" if float(share.sum()) >= 0.5 else "only part")
            + " of how the model's final patch tokens differ.")
