"""The whole forward pass at a glance: the patch grid and the shape of every stage, live."""

import streamlit as st

from ui import figures, keys, state
from ui.tables import stage_table
from vit_core.trace import symbol_sizes

inp, name, model, prep, tr = state.load_current()
c = model.config
st.title("From pixels to logits, in one pass")
st.write(
    f"The model cuts the {c.img_size}×{c.img_size} image into square patches of "
    f"{c.patch_size}×{c.patch_size} pixels, turns each patch into a vector of {c.embed_dim} "
    f"numbers, and lets these vectors exchange information through {c.depth} blocks of "
    f"attention and MLP layers. Everything below was computed just now, on your image, in a "
    f"single forward pass that kept all {len(tr)} intermediate tensors."
)
s = symbol_sizes(c)
st.latex(rf"N = \frac{{H}}{{P}}\cdot\frac{{W}}{{P}} = \frac{{{c.img_size}}}{{{c.patch_size}}}"
         rf"\cdot\frac{{{c.img_size}}}{{{c.patch_size}}} = {s['N']},\qquad "
         rf"z_0 = [x_\mathrm{{cls}};\,x_pE] + E_\mathrm{{pos}} \in \mathbb{{R}}^{{{s['S']}"
         rf"\times {s['D']}}}")
left, right = st.columns([1, 1])
with left:
    st.subheader("What the model sees")
    st.plotly_chart(figures.patch_grid(prep.crop, c.patch_size), key=keys.OVERVIEW_GRID)
    st.caption(f"{inp.label} · resized and centre-cropped to {c.img_size}×{c.img_size}, "
               f"{c.grid}×{c.grid} = {c.num_patches} patches")
with right:
    st.subheader("Prediction")
    if c.num_classes:
        probs = tr.logits.softmax(-1).numpy()
        names = list(c.class_names) or [f"class {i}" for i in range(c.num_classes)]
        st.plotly_chart(figures.top_k_bars(probs, names), key=keys.OVERVIEW_TOPK)
    else:
        caption_slot = st.empty()  # filled last: a caption is one forward pass per word
st.subheader("Every stage, with the shape it had just now")
st.dataframe(stage_table(tr), hide_index=True, key=keys.OVERVIEW_TABLE)
st.info("What to notice: the token count S stays the same through every block; only the "
        "attention pattern is S×S, which is why smaller patches cost quadratically more.")
if not c.num_classes:
    with caption_slot.container(), st.spinner("Writing its caption, one forward pass per word…"):
        gen = state.generation(inp, name, mask=state.chosen_mask())
        st.markdown(f"Its caption, one word at a time (greedy): **“{gen.text}”**")
        st.plotly_chart(figures.word_bars(gen.words, gen.chosen), key=keys.OVERVIEW_WORDS)
        st.caption("Each bar: how sure the model was of that word when it wrote it "
                   "([EOS] ends the caption). The Logits page steps through it.")
