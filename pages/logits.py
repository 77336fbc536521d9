"""Stage 7: logits. Classifier: CLS -> LN -> head -> softmax, and the logit lens.
Captioner: next-token distributions, generation step by step, and a typed caption's scores."""

import numpy as np
import streamlit as st

from ui import figures, keys, state
from vit_core.explain.lens import logit_lens

inp, name, model, prep, tr = state.load_current()
c = model.config
st.title("7 · Logits: from the last layer to an answer")
if c.num_classes:
    K = c.num_classes
    names = list(c.class_names) or [f"class {k}" for k in range(K)]
    st.write(
        f"Only the CLS token's final vector is used: it goes through the final LayerNorm and "
        f"one linear layer that gives one score (logit) per class, {K} in all. Softmax turns "
        f"the scores into probabilities. Dividing the logits by a temperature before the "
        f"softmax makes the distribution sharper (T < 1) or flatter (T > 1) without changing "
        f"which class wins."
    )
    st.latex(rf"\hat y = \mathrm{{softmax}}\!\left(\frac{{\mathrm{{LN}}(z_L^0)\,W_c + b_c}}{{T}}"
             rf"\right),\quad W_c\in\mathbb{{R}}^{{{c.embed_dim}\times {K}}}")
    T = st.slider("Temperature T", 0.1, 5.0, 1.0, 0.1, key=keys.CLASS_TEMPERATURE)
    logits = tr.logits
    probs = (logits / T).softmax(-1).numpy()
    left, right = st.columns(2)
    with left:
        st.plotly_chart(figures.top_k_bars(probs, names, k=min(5, K)), key=keys.LOGITS_TOPK)
        best = int(np.argmax(probs))
        st.write(f"Prediction: **{names[best]}** with {probs[best]:.1%} at T = {T:g} "
                 f"(logit {float(logits[best]):.2f}).")
    with right:
        st.plotly_chart(figures.matrix_heatmap(
            logits.numpy()[None], "the raw logits", col_labels=names, row_labels=["logit"],
            square=False, height=190, x_title="class", y_title="", value_name="logit"),
            key=keys.LOGITS_RAW)
    st.subheader("The logit lens: how the answer forms with depth")
    lens = (logit_lens(model, tr) / T).softmax(-1).numpy()  # [L + 1, K]
    top = np.argsort(-probs)[:3]
    st.plotly_chart(figures.line_chart(
        ["embed"] + [f"block {i}" for i in range(c.depth)],
        {names[k]: lens[:, k] for k in top}, "P(class) if the network stopped after each block",
        "", "probability"), key=keys.LOGITS_LENS)
    st.info("What to notice: early blocks give almost uniform guesses; the winning class "
            "usually takes over only in the last blocks, once CLS has gathered the object."
            if model.info.trained else
            f"What to notice: with random weights every class gets about 1/{K} = {1 / K:.1%}; "
            "a trained model is confident, and its lens shows when the answer appears.")
else:
    tok_vocab = c.vocab
    st.write(
        "An image-to-text model reads the image tokens and then the text so far, starting with "
        "[SOS]. At every text position it produces one logit per word of its vocabulary: its "
        "guess for the next word. Generation picks a word, appends it, and runs again."
    )
    st.latex(rf"Z = \mathrm{{LN}}(X_L)[N{{:}}]\,E^\top \in \mathbb{{R}}^{{T\times {c.vocab_size}}}")
    cols = st.columns(3)
    temperature = cols[0].slider("Temperature (0 = greedy)", 0.0, 2.0, 0.0, 0.1,
                                 key=keys.TEMPERATURE)
    top_k = cols[1].number_input("Top-k (0 = all)", 0, c.vocab_size, 0, key=keys.TOP_K)
    seed = cols[2].number_input("Sampling seed", 0, 10_000, 0, key=keys.GEN_SEED)
    signature = (inp.key, name, temperature, top_k, seed)
    if st.session_state.get(keys.GEN_FOR) != signature:
        st.session_state[keys.GEN_FOR], st.session_state[keys.GEN_STEPS] = signature, 0
    b = st.columns(3)
    if b[0].button("Next token", key=keys.GEN_NEXT):
        st.session_state[keys.GEN_STEPS] += 1
    if b[1].button("Run to end", key=keys.GEN_ALL):
        st.session_state[keys.GEN_STEPS] = c.max_text_len
    if b[2].button("Start again", key=keys.GEN_RESET):
        st.session_state[keys.GEN_STEPS] = 0
    steps = st.session_state[keys.GEN_STEPS]
    with st.spinner("Writing the caption, one forward pass per word…"):
        # The whole caption once per settings (greedy ignores the seed, so it shares the
        # overview's); each step is a prefix of it, so Next token costs no forward pass.
        gen = state.generation(inp, name, temperature=temperature, top_k=int(top_k) or None,
                               seed=int(seed) if temperature > 0 else None,
                               mask=state.chosen_mask())
    shown = gen.words[:steps]
    st.subheader("[SOS] " + " ".join(shown) + (" …" if len(gen.words) > steps else ""))
    if len(gen.words) > steps:
        p = gen.probs[steps].numpy()
        st.plotly_chart(figures.top_k_bars(p, list(tok_vocab), k=8), key=keys.GEN_DIST)
        st.caption(f"The distribution for word {steps + 1}"
                   + (" (greedy: the tallest bar is taken)" if temperature == 0 else
                      f" at temperature {temperature:g}; the next word is sampled from it."))
    else:
        st.success(f"Finished: “{gen.text}”")
    st.subheader("Score your own caption")
    text = st.text_input("Type a caption", "a red ball on the grass", key=keys.CAPTION,
                         max_chars=2000)
    scored = state.scores(inp, name, text, mask=state.chosen_mask())
    if name.startswith("shapes-captioner"):
        st.caption("Trained with label smoothing 0.05: a word the model is sure of gets about "
                   "95 %, not 100 %.")
    if scored.notice:
        st.warning(scored.notice)
    rows = [{"word": w + (" (unknown → [UNK])" if u else ""), "P(word | image, words before)":
             f"{p:.2%}"} for w, p, u in zip(scored.words, scored.probs, scored.unknown,
                                              strict=True)]
    st.dataframe(rows, hide_index=True, key=keys.CAPTION_SCORES)
    st.info("What to notice: words the image decides (colour, shape, background) get high "
            "probability only when they match the picture; grammar words are near-certain.")
