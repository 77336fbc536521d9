"""Stage 10: change one thing, rerun the model, and compare the predictions side by side."""

import streamlit as st

from ui import controls, figures, keys, state

inp, name, model, prep, tr = state.load_current()
c = model.config
L, H, N = c.depth, c.num_heads, c.num_patches
st.title("10 · Experiments")
st.write(
    "The best way to see what a part of the model does is to take it away. Pick an "
    "intervention below: the model runs again on the same image with that one change, and the "
    "two predictions are shown side by side."
)
st.latex(r"\mathrm{MSA}(X) = \big[\,m_1\,\mathrm{head}_1;\ \dots;\ m_H\,\mathrm{head}_H"
         r"\,\big]\,W_O + b_O,\quad m_h\in\{0,1\};\qquad z_0 = [x_\mathrm{cls};\,X_pE] + "
         r"\lambda E_\mathrm{pos},\ \lambda\in\{0,1\}")
KINDS = {
    "Switch off attention heads": "heads",
    "Grey out patches": "occlude",
    "Remove position embeddings": "positions",
    "Shuffle the patches": "shuffle",
    "Shuffle the patches and remove positions": "shuffle_no_positions",
    "Apply another attention mask": "mask",
}
choice = st.radio("Intervention", list(KINDS), key=keys.EXP_KIND, horizontal=True)
kind = KINDS[choice]
arg: tuple = ()
if kind == "heads":
    layer = controls.layer(c)
    options = [f"layer {layer} head {h}" for h in range(H)]
    picked = st.multiselect(f"Heads to switch off in layer {layer}", options,
                            default=options[:1], key=keys.EXP_HEADS)
    arg = tuple((layer, int(p.split()[-1])) for p in picked)
    st.caption("Switching a head off sets its output A·V to zero before W_O; with every head "
               "of a layer off, only W_O's bias is left of that layer's attention output.")
elif kind == "occlude":
    p = controls.patch(c)
    g = c.grid
    r, col = divmod(p, g)
    around = [rr * g + cc for rr in range(r - 1, r + 2) for cc in range(col - 1, col + 2)
              if 0 <= rr < g and 0 <= cc < g]
    picked = st.multiselect("Patches to grey out", list(range(N)), default=around,
                            key=keys.EXP_PATCHES)
    arg = tuple(sorted(picked))
    st.caption("Greyed-out patches are set to the normalisation mean (mid-grey).")
elif kind in ("shuffle", "shuffle_no_positions"):
    arg = (int(st.number_input("Shuffle seed", 0, 10_000, 0, key=keys.EXP_SEED)),)
elif kind == "mask":
    arg = (st.selectbox("Mask", ["causal", "prefix", "full"], key=keys.EXP_MASK),)

text_ids = None
if c.has_text:  # score the model's own caption before and after
    text_ids = [1] + state.generation(inp, name).ids[: c.max_text_len - 1]
base = state.trace(inp, name, text_ids=text_ids)
after = state.experiment(inp, name, kind, arg, text_ids)

left, right = st.columns(2)
if c.num_classes:
    names = list(c.class_names) or [f"class {k}" for k in range(c.num_classes)]
    p0, p1 = base.logits.softmax(-1).numpy(), after.logits.softmax(-1).numpy()
    with left:
        st.subheader("Before")
        st.plotly_chart(figures.top_k_bars(p0, names), key=keys.EXP_BEFORE)
    with right:
        st.subheader("After: " + choice.lower())
        st.plotly_chart(figures.top_k_bars(p1, names), key=keys.EXP_AFTER)
    b0, b1 = int(p0.argmax()), int(p1.argmax())
    verdict = ("The prediction did not change" if b0 == b1 else
               f"The prediction changed from **{names[b0]}** to **{names[b1]}**")
    st.write(f"{verdict}: P({names[b0]}) went from {p0[b0]:.1%} to {p1[b0]:.1%}; the logits "
             f"moved by {float((after.logits - base.logits).abs().max()):.3f} at most.")
else:
    tok = list(c.vocab)
    rows = []
    for t in range(len(text_ids)):
        nxt = text_ids[t + 1] if t + 1 < len(text_ids) else 2
        rows.append({"next word": tok[nxt],
                     "P before": f"{float(base.logits[t].softmax(-1)[nxt]):.1%}",
                     "P after": f"{float(after.logits[t].softmax(-1)[nxt]):.1%}"})
    st.dataframe(rows, hide_index=True, key=keys.EXP_CAPTION)
WHY = {
    "heads": "Heads work in parallel and their outputs are added, so removing one rarely breaks "
             "a trained model; removing a whole late layer's heads usually hurts more.",
    "occlude": "Greying out the object removes the evidence; greying out background usually "
               "changes little, which is a check that the model looks at the right place.",
    "positions": "The model was trained with positions added; without them every patch token is "
                 "shifted away from what the later layers expect.",
    "shuffle": "With positions, a shuffled image is a different image: each piece carries the "
               "position of where it now sits, and the shape is broken up.",
    "shuffle_no_positions": "Without positions, attention is permutation-equivariant: the CLS "
                            "token gets the same answer for any order of the patches, so this "
                            "equals 'remove position embeddings' exactly.",
    "mask": "A causal mask lets token i see only tokens before it; CLS sits at position 0, so "
            "under a causal mask it can only attend to itself and learns nothing from the image.",
}
st.info("What to notice: " + WHY[kind])
