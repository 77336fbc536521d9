"""Stage 5: attention masks. Who may look at whom: full, causal and bidirectional-prefix."""

import numpy as np
import streamlit as st

from ui import figures, inputs, keys, session, state, steps, tour
from ui import models as picker
from vit_core import allowed_keys
from vit_core.explain.generation import learning_curve, tokenizer_for

inp, name, model, prep, tr = session.load_current()
st.title("5 · Masks: who may look at whom")
if steps.first():
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
# the captioners: the two bundled ones (side by side), else the one chosen, else the preset;
# the read-ahead (ui/readahead.py) computes their captions before the student gets here
captioners, runs, clf_name = tour.masks_page_models(name, model)
trained = [m for m in captioners if m in tour.BUNDLED]
models = {m: state.get_model(m) for m in captioners}
cap = models[captioners[0]]
cc = cap.config
caption = st.text_input("Caption fed to the text stream", tour.MASK_CAPTION,
                        key=keys.MASK_CAPTION, max_chars=2000)
tok = tokenizer_for(cap)
enc = tok.encode(caption, max_len=cc.max_text_len)
if enc.notice:
    st.warning(enc.notice)
fed = ["[UNK]" if i == tok.unk_id else w for w, i in zip(enc.words, enc.ids, strict=True)]
n_img, n_txt = cc.num_image_tokens, len(enc.ids)
S = n_img + n_txt
pre_names = " + ".join(cc.prefix_names)
if steps.show("masks", 0):
    st.write(f"{captioners[0]}: **{n_img}** image tokens ({pre_names + ' + ' if pre_names else ''}"
             f"{cc.num_patches} patches) + **{n_txt}** text tokens ([SOS] + {n_txt - 1} "
             f"word{'' if n_txt == 2 else 's'}) = "
             f"S = **{S}**.")
cap_labels = figures.token_labels(cc, fed)
if steps.show("masks", 0):
    mask_ticks = figures.spaced_ticks(cap_labels, cc.grid, 190)  # three masks side by side
    cols = st.columns(3)
    for col, kind in zip(cols, ("full", "causal", "prefix"), strict=True):
        allowed = allowed_keys(kind, n_img, n_txt)
        col.plotly_chart(figures.mask_figure(allowed.numpy(), n_img,
                                             f"{kind}: {S}×{S} (light: may look; dark: −∞)",
                                             labels=cap_labels, ticks=mask_ticks, height=300),
                         key=keys.mask_kind(kind))
    visible = {k: allowed_keys(k, n_img, n_txt).sum(1).numpy() for k in ("causal", "prefix")}
    st.plotly_chart(figures.visible_keys_chart(visible, cap_labels,
                                               figures.spaced_ticks(cap_labels, cc.grid, 760),
                                               n_img),
                    key=keys.MASK_VISIBLE)
    first = (f"{cc.prefix_names[0]} (token 0) sees only itself and patch p (token p + "
             f"{cc.num_prefix_tokens}) sees p + {cc.num_prefix_tokens + 1} tokens"
             if cc.num_prefix_tokens else "patch 0 sees only itself and patch p sees p + 1 tokens")
    st.caption(f"On the axes pN is patch N; the text rows and columns are [SOS] and then, in "
               f"order, {' '.join(fed[1:]) or 'no words'} (where they do not fit, only some "
               f"are printed). Under the causal mask token i sees i + 1 tokens: "
               f"{first}. Under the prefix mask every image token sees all {n_img} image tokens. "
               f"A text token sees the same keys under both: every image token, and the text up to "
               f"itself.")

if steps.show("masks", 1):
    st.subheader("The trained attention, live")
    if name not in captioners:  # the page shows other models than the one chosen
        photo = inp.label.startswith(("upload", "camera"))
        these = " and ".join(captioners)
        st.caption(f"{these} {'are' if len(captioners) > 1 else 'is'} not "
                   f"{picker.plain_label(name)}: this stage needs a model with a text stream."
                   + (" They were trained only on this repository's generated scenes of shapes, "
                      "so on a photo their captions say which scene they would see in it, not "
                      "what the photo shows." if trained and photo else ""))
    c1, c2 = st.columns(2)
    with c1:
        layer = st.slider("Layer", 0, cc.depth - 1, cc.depth - 1, key=keys.MASK_LAYER)
    with c2:
        head = st.slider("Head", 0, cc.num_heads - 1, 0, key=keys.MASK_HEAD)
    cols = st.columns(len(runs))
    for col, (m, kind) in zip(cols, runs, strict=True):
        t = state.trace(inp, m, mask=kind, text_ids=enc.ids)
        tl = figures.token_labels(models[m].config, fed)
        live_ticks = figures.spaced_ticks(tl, models[m].config.grid, 200)
        col.plotly_chart(figures.matrix_heatmap(
            t[f"blocks.{layer}.attn.pattern"][head].numpy(), f"{m}, {kind} mask",
            colorscale="Viridis",
            zmid=None, height=380, x_title="key token (what is looked at)",
            y_title="query token (who looks)", value_name="attention weight",
            row_labels=tl, col_labels=tl, row_ticks=live_ticks, col_ticks=live_ticks,
            boundaries=(models[m].config.num_prefix_tokens, models[m].config.num_image_tokens)),
            key=keys.mask_live(m, kind))
        info = models[m].info
        col.markdown(f"Its caption for this image (greedy): "
                     f"**“{state.greedy_caption(inp, m, kind)}”**")
        if info.metrics.get("exact_match") is not None:
            col.write(f"Held-out (model card): exact caption {info.metrics['exact_match']:.1%}, "
                      f"token accuracy {info.metrics['token_accuracy']:.1%}.")
        scored = state.scores(inp, m, caption, mask=kind)
        col.dataframe([{"word": w + (" (unknown → [UNK])" if u else ""), "P(word)": f"{p:.1%}"}
                       for w, p, u in zip(scored.words, scored.probs, scored.unknown,
                                          strict=True)], hide_index=True,
                      key=keys.mask_scores(m, kind))
    if trained:
        st.caption("The bundled captioners were trained with label smoothing 0.05, so a word they "
                   "are sure of gets about 95 %, not 100 %.")
    if not all(models[m].info.trained for m in captioners):
        st.warning("These captioners are untrained (random weights): the masks are real, the "
                   "probabilities are not.")

if steps.show("masks", 2):
    st.subheader("A mask changes what a token can know: a classifier under a causal mask")
    clf = state.get_model(clf_name)
    k = clf.config
    if clf_name != name:
        st.write(f"{picker.plain_label(name)} has no class head, so this part uses {clf_name}.")
    names = list(k.class_names) or [f"class {i}" for i in range(k.num_classes)]
    full = state.logits(inp, clf_name, mask="full").softmax(-1).numpy()
    causal_logits = state.logits(inp, clf_name, mask="causal")
    causal = causal_logits.softmax(-1).numpy()
    other_seed, other = tour.other_sample(inp)
    other_logits = state.logits(other, clf_name, mask="causal")
    gap = float((other_logits - causal_logits).abs().max())
    left, right = st.columns(2)
    label = picker.plain_label(clf_name)
    as_trained = " (as trained)" if clf.info.source == "bundled" else ""  # a file: unknown
    left.plotly_chart(figures.top_k_bars(full, names, title=f"{label}, full attention{as_trained}",
                                        x_title="probability"), key=keys.CLF_FULL)
    right.plotly_chart(figures.top_k_bars(causal, names, title=f"{label}, causal mask",
                                         x_title="probability"), key=keys.CLF_CAUSAL)
    win = f"**{names[int(np.argmax(causal))]}** ({causal.max():.1%})"
    compare = (f"On another picture (“{inputs.sample_caption(other_seed)}”) its causal logits are "
               + (f"the same (largest difference {gap:.1g})" if gap < 1e-4 else
                  f"different (by up to {gap:.2f})") + ".")
    if k.global_pool == "avg":
        first = ("CLS (token 0) sees only itself, but the class head does not read CLS: it reads "
                 "the mean of the patch tokens" if k.class_token else
                 "This model has no CLS token: patch 0 sees only itself, and the class head reads "
                 "the mean of the patch tokens")
        st.write(f"{first}. The last patch still sees every token, so the prediction still depends "
                 f"on the image: {win} with the causal mask. {compare}")
    elif k.dist_token:
        st.write(f"CLS is token 0 and DIST token 1, so under a causal mask CLS sees only itself "
                 f"and DIST only CLS and itself, in every layer. The class heads read only these "
                 f"two, so the prediction no longer depends on the image: it becomes {win} for any "
                 f"picture. {compare}")
    else:
        st.write(f"CLS is token 0, so under a causal mask it can attend only to itself in every "
                 f"layer: its final vector, the only one the class head reads, no longer depends "
                 f"on the image. The prediction becomes {win} for any picture. {compare}")
if steps.show("masks", 2):
    story = ""
    if len(trained) == 2:
        curves = {m: learning_curve(models[m].info.card) for m in captioners}
        early = min(set.intersection(*(set(cv) for cv in curves.values())), default=None)
        story = (" On these scenes the two trained captioners end close (" + " vs ".join(
            f"{models[m].info.metrics['exact_match']:.1%} {models[m].config.default_mask}"
            for m in captioners) + " exact captions on 1000 held-out scenes)")
        if early is not None:
            story += (f"; at step {early} of training they stood at " + " vs ".join(
                f"{curves[m][early]:.1%}" for m in captioners) + " (model cards)")
        story += (". A causal mask also tells each token its position: token i sees exactly i + 1 "
                  "keys.")
    st.info("What to notice: the prefix and causal masks differ only in the image block; the text "
            "rows are identical. What changes is what the image tokens know by the time the text "
            "reads them: under the causal mask the early patches never see the rest of the image."
            + story)
