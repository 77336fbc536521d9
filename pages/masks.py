"""Stage 5: attention masks. Who may look at whom: full, causal and bidirectional-prefix."""

import numpy as np
import streamlit as st

from ui import figures, keys, state
from vit_core import allowed_keys, bundled_models
from vit_core.explain.generation import tokenizer_for

inp, name, model, prep, tr = state.load_current()
st.title("5 · Masks: who may look at whom")
st.write(
    "An image-to-text model puts the image tokens first and the text after them, in one "
    "sequence. A mask M is added to the scores before the softmax: 0 where a query may read a "
    "key, −∞ where it may not, which the softmax turns into a weight of exactly 0. The mask "
    "decides what each token can know. Text must never see words after it (otherwise "
    "training would let it copy the answer), but the image has no order, so its patches may "
    "as well see each other in both directions: that is the prefix mask."
)
st.latex(r"A = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right),\qquad "
         r"M_{ij}\in\{0, -\infty\}")
# the captioners: the two bundled ones (side by side), else the one chosen, else the preset
trained = [m for m in ("shapes-captioner-prefix", "shapes-captioner-causal")
           if m in bundled_models()]
if trained:
    captioners = trained
elif model.config.has_text:
    captioners = [name]
else:
    captioners = ["vit-b16-text"]
models = {m: state.get_model(m) for m in captioners}
cap = models[captioners[0]]
cc = cap.config
caption = st.text_input("Caption fed to the text stream", "a red ball on the grass",
                        key=keys.MASK_CAPTION, max_chars=2000)
enc = tokenizer_for(cap).encode(caption, max_len=cc.max_text_len)
if enc.notice:
    st.warning(enc.notice)
n_img, n_txt = cc.num_image_tokens, len(enc.ids)
S = n_img + n_txt
st.write(f"{captioners[0]}: **{n_img}** image tokens + **{n_txt}** text tokens "
         f"([SOS] + {n_txt - 1} words) = S = **{S}**.")
cols = st.columns(3)
for col, kind in zip(cols, ("full", "causal", "prefix"), strict=True):
    allowed = allowed_keys(kind, n_img, n_txt)
    col.plotly_chart(figures.mask_figure(allowed.numpy(), n_img, f"{kind}: {S}×{S}"),
                     key=keys.mask_kind(kind))
visible = {k: allowed_keys(k, n_img, n_txt).sum(1).numpy() for k in ("causal", "prefix")}
st.plotly_chart(figures.line_chart(range(S), visible, "How many keys each query may see",
                                   "query position (image tokens first, then text)",
                                   "visible keys"), key=keys.MASK_VISIBLE)
st.caption(f"Under the causal mask the first image patch sees only itself and patch i sees "
           f"i + 1 tokens; under the prefix mask every image token sees all {n_img} image "
           f"tokens. Text tokens see the same keys under both.")

st.subheader("The trained attention, live")
c1, c2 = st.columns(2)
with c1:
    layer = st.slider("Layer", 0, cc.depth - 1, cc.depth - 1, key=keys.MASK_LAYER)
with c2:
    head = st.slider("Head", 0, cc.num_heads - 1, 0, key=keys.MASK_HEAD)
runs = ([(m, models[m].config.default_mask) for m in captioners] if len(captioners) > 1
        else [(captioners[0], "prefix"), (captioners[0], "causal")])
cols = st.columns(len(runs))
for col, (m, kind) in zip(cols, runs, strict=True):
    t = state.trace(inp, m, mask=kind, text_ids=enc.ids)
    tl = figures.token_labels(models[m].config, enc.words)
    col.plotly_chart(figures.matrix_heatmap(
        t[f"blocks.{layer}.attn.pattern"][head].numpy(), f"{m}, {kind} mask", colorscale="Viridis",
        zmid=None, height=380, x_title="key token (what is looked at)",
        y_title="query token (who looks)", value_name="attention weight",
        row_labels=tl, col_labels=tl, row_ticks=figures.token_ticks(tl, models[m].config.grid),
        col_ticks=figures.token_ticks(tl, models[m].config.grid),
        boundaries=(models[m].config.num_image_tokens,)), key=keys.mask_live(m, kind))
    info = models[m].info
    col.markdown(f"Its caption for this image (greedy): **“{state.greedy_caption(inp, m, kind)}”**")
    if info.metrics.get("exact_match") is not None:
        col.write(f"Held-out (model card): exact caption {info.metrics['exact_match']:.1%}, "
                  f"token accuracy {info.metrics['token_accuracy']:.1%}.")
    scored = state.scores(inp, m, caption, mask=kind)
    col.dataframe([{"word": w, "P(word)": f"{p:.1%}"} for w, p in
                   zip(scored.words, scored.probs, strict=True)], hide_index=True,
                  key=keys.mask_scores(m, kind))
if trained:
    st.caption("The bundled captioners were trained with label smoothing 0.05, so a word they "
               "are sure of gets about 95 %, not 100 %.")
if not all(models[m].info.trained for m in captioners):
    st.warning("These captioners are untrained (random weights): the masks are real, the "
               "probabilities are not.")

st.subheader("A mask changes what a token can know: the classifier under a causal mask")
clf_name = name if model.config.num_classes and model.config.class_token else (
    "shapes-classifier" if "shapes-classifier" in bundled_models() else "vit-b16")
clf = state.get_model(clf_name)
names = list(clf.config.class_names) or [f"class {k}" for k in range(clf.config.num_classes)]
full = state.trace(inp, clf_name).logits.softmax(-1).numpy()
causal = state.trace(inp, clf_name, mask="causal").logits.softmax(-1).numpy()
left, right = st.columns(2)
left.plotly_chart(figures.top_k_bars(full, names), key=keys.CLF_FULL)
left.caption(f"{clf_name} as trained (full attention)")
right.plotly_chart(figures.top_k_bars(causal, names), key=keys.CLF_CAUSAL)
right.caption("the same model with a causal mask")
st.write(f"CLS sits at position 0, so under a causal mask it can attend only to itself in "
         f"every layer: its final vector no longer depends on the image at all. The prediction "
         f"becomes **{names[int(np.argmax(causal))]}** ({causal.max():.1%}) for *any* picture.")
st.info("What to notice: the prefix and causal masks differ only in the image block; the text "
        "rows are identical. What changes is what the image tokens know by the time the text "
        "reads them: under the causal mask the early patches never see the rest of the image."
        + (" On these simple scenes the two trained captioners end level (" + " vs ".join(
            f"{models[m].info.metrics['exact_match']:.1%} {models[m].config.default_mask}"
            for m in captioners) + " exact captions); the causal one even learned faster at "
           "first, perhaps because a causal mask tells each token its position (token i sees "
           "exactly i + 1 keys), and position words were the hard part to learn."
           if len(trained) == 2 else ""))
