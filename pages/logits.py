"""Stage 7: logits. Classifier: CLS -> LN -> head -> softmax, and the logit lens.
Captioner: next-token distributions, generation step by step, and a typed caption's scores."""

import numpy as np
import streamlit as st

from ui import figures, keys, models, player, session, show, state
from ui import steps as stepper  # `steps` is the caption's word count below
from vit_core import allowed_keys
from vit_core.config import MASK_KINDS
from vit_core.explain.generation import caption_note, scored_column
from vit_core.explain.lens import logit_lens
from vit_core.explain.readout import (
    blind_reason,
    distribution_note,
    headless_summary,
    image_blind,
    lens_leaders,
    lens_lines,
    lens_note,
    readout,
    readout_path,
)

inp, name, model, prep, tr = session.load_current()
c = model.config
st.title("7 · Logits: from the last layer to an answer")
masked = "" if session.chosen_mask() is None else f" (under the {tr.mask_kind} mask)"
if c.num_classes:
    K = c.num_classes
    names = list(c.class_names) or [f"class {k}" for k in range(K)]
    if stepper.first():
        st.write(
            f"{readout(c)} Softmax turns the scores into probabilities. Dividing the logits by a "
            f"temperature before the softmax makes the distribution sharper (T < 1) or flatter "
            f"(T > 1) without changing which class wins."
        )
        if c.global_pool == "avg":
            pooled = (rf"\mathrm{{LN}}_\mathrm{{fc}}\!\left(\tfrac1{{{c.num_patches}}}\sum_p "
                      rf"z_L^p\right)" if c.fc_norm else rf"\tfrac1{{{c.num_patches}}}\sum_p z_L^p")
            eq = rf"\hat y = \mathrm{{softmax}}\!\left(\frac{{{pooled}\,W_c + b_c}}{{T}}\right)"
        elif c.dist_token:
            eq = (r"\hat y = \mathrm{softmax}\!\left(\frac{\tfrac12\left("
                  r"\mathrm{LN}(z_L^\mathrm{CLS})W_c + b_c + "
                  r"\mathrm{LN}(z_L^\mathrm{DIST})W_d + b_d\right)}{T}\right)")
        else:
            eq = (r"\hat y = \mathrm{softmax}\!\left(\frac{\mathrm{LN}(z_L^\mathrm{CLS})\,"
                  r"W_c + b_c}{T}\right)")
        st.latex(eq + rf",\quad W_c\in\mathbb{{R}}^{{{c.embed_dim}\times {K}}}")
    T = st.slider("Temperature T", 0.1, 5.0, 1.0, 0.1, key=keys.CLASS_TEMPERATURE)
    logits = tr.logits
    probs = (logits / T).softmax(-1).numpy()
    lens = (logit_lens(model, tr) / T).softmax(-1).numpy()  # [L + 1, K]
    blind = image_blind(c, tr.mask)  # e.g. CLS under the causal mask: no patch reaches the head
    if stepper.show("logits", 0):
        left, right = st.columns(2)
        with left:
            st.plotly_chart(figures.top_k_bars(probs, names, k=min(5, K),
                                               title=f"top {min(5, K)} of {K} classes at T = {T:g}",
                                               x_title="probability", y_title="class"),
                            key=keys.LOGITS_TOPK)
            best = int(np.argmax(probs))
            st.write(f"Prediction{masked}: **{names[best]}** with {probs[best]:.1%} at T = {T:g} "
                     f"(logit {float(logits[best]):.2f}).")
            if blind:
                st.warning(blind_reason(c, tr.mask_kind))
        with right:
            st.plotly_chart(figures.logit_bars(logits.numpy(), names), key=keys.LOGITS_RAW)
    if stepper.show("logits", 1):
        st.subheader("The logit lens: how the answer forms with depth")
        top, left_out = lens_lines(probs, lens)
        leaders = lens_leaders(lens)
        first_on_top = {k: int(np.argmax(lens.argmax(1) == k)) for k in leaders}
        where = ["the embedding"] + [f"block {i}" for i in range(c.depth)]
        n_final = min(3, K)
        st.plotly_chart(figures.line_chart(
            ["embed"] + [f"block {i}" for i in range(c.depth)],
            {names[k]: lens[:, k] for k in top},
            f"P(class) if the network stopped after each block (T = {T:g})", "read out after",
            "probability"), key=keys.LOGITS_LENS)
        st.caption(f"Each point sends the residual stream after that block down the same path as "
                   f"the answer ({readout_path(c)}), as if the network stopped there; the last "
                   f"point is exactly the prediction above. Lines: the "
                   + (f"{n_final} classes" if n_final > 1 else "class")
                   + " the model ranks highest at the end, and "
                   + ("every class that is on top at some depth." if not left_out else
                      f"{len(leaders) - len(left_out)} of the {len(leaders)} classes that are on "
                      f"top at some depth; to keep the chart readable, {len(left_out)} more "
                      f"that lead at some depth are not drawn: "
                      + ", ".join(f"{names[k]} (on top after {where[first_on_top[k]]})"
                                  for k in left_out) + "."))
    if stepper.show("logits", 1):
        st.info("What to notice: " + distribution_note(probs, names, T, image_blind=blind) + " "
                + lens_note(lens, names))
elif not c.has_text:
    summary = headless_summary(tr)
    tok = summary["token"]
    D = c.embed_dim
    if stepper.show("logits", 0):
        st.write(f"{models.plain_label(name)} has no class head, so there are no class logits: its "
                 f"output is the final token vectors themselves ({D} numbers each). Here is the "
                 f"final {tok} vector, the one that stands for the whole image.")
        ln = "" if c.fc_norm else r"\mathrm{LN}"
        st.latex(rf"z_\mathrm{{out}} = {ln}(z_L^\mathrm{{{tok.split()[0]}}})\in"
                 rf"\mathbb{{R}}^{{{D}}}")
        st.plotly_chart(figures.vector_strip(
            summary["vector"].numpy(), f"the final {tok} vector ({D} dimensions)",
            x_title="dimension of D", value_name="value", row_names=[tok], y_title="token"),
            key=keys.LOGITS_RAW)
    g = c.grid
    if stepper.show("logits", 1):
        left, right = st.columns(2)
        with left:
            sim = summary["similarity"].reshape(g, g).numpy()
            show.image(figures.with_scale(figures.overlay(prep.crop, sim), float(sim.min()),
                                          float(sim.max()), "cosine similarity", fmt="{:.2f}"),
                       f"cosine similarity of each final patch vector with the {tok} vector",
                       "final-token-similarity", width=320)
        with right:
            dims = ", ".join(f"{i} ({v:+.2f})" for i, v in summary["top_dims"])
            near = ", ".join(f"patch {i} ({s:.2f})" for i, s in summary["nearest"])
            st.write(f"Its norm is {summary['norm']:.2f}; its largest dimensions are {dims}; the "
                     f"patches pointing most like it are {near}.")
    st.info(f"What to notice: without a head the model gives vectors, not answers; the patch "
            f"most like the {tok} vector is patch {summary['nearest'][0][0]} (cosine "
            f"{summary['nearest'][0][1]:.2f}).")
else:
    tok_vocab = c.vocab
    if stepper.first():
        st.write(
            "An image-to-text model reads the image tokens and then the text so far, starting with "
            "[SOS]. At every text position it produces one logit per word of its vocabulary: its "
            "guess for the next word. Generation picks a word, appends it, and runs again."
        )
        head_w = "E^\\top" if c.tie_text_head else "W_\\mathrm{vocab}"
        st.latex(rf"Z = \mathrm{{LN}}(X_L)[{c.num_image_tokens}{{:}}]\,{head_w} \in "
                 rf"\mathbb{{R}}^{{T\times {c.vocab_size}}}")
    if stepper.show("logits", 0):
        cols = st.columns(3)
        temperature = cols[0].slider("Temperature (0 = greedy)", 0.0, 2.0, 0.0, 0.1,
                                     key=keys.TEMPERATURE)
        top_k = cols[1].number_input("Top-k (0 = all)", 0, c.vocab_size, 0, key=keys.TOP_K)
        seed = cols[2].number_input("Sampling seed", 0, 10_000, 0, key=keys.GEN_SEED)
        signature = (inp.key, name, temperature, top_k, seed)
        if st.session_state.get(keys.GEN_FOR) != signature:
            st.session_state[keys.GEN_FOR], st.session_state[keys.GEN_STEPS] = signature, 0
        with st.spinner("Writing the caption, one forward pass per word…"):
            # The whole caption once per settings (greedy ignores the seed, so it shares the
            # overview's); each step is a prefix of it, so Next token costs no forward pass.
            gen = state.generation(inp, name, temperature=temperature, top_k=int(top_k) or None,
                                   seed=int(seed) if temperature > 0 else None,
                                   mask=session.chosen_mask())

        def rewind_caption() -> None:
            """Play from [SOS] when the caption is already written out."""
            if st.session_state[keys.GEN_STEPS] >= len(gen.words):
                st.session_state[keys.GEN_STEPS] = 0

        def next_word() -> bool:
            st.session_state[keys.GEN_STEPS] = min(st.session_state[keys.GEN_STEPS] + 1,
                                                   len(gen.words))
            return st.session_state[keys.GEN_STEPS] < len(gen.words)

        b = st.columns(4)
        if b[0].button("Next token", key=keys.GEN_NEXT):
            st.session_state[keys.GEN_STEPS] += 1
        if b[1].button("Run to end", key=keys.GEN_ALL):
            st.session_state[keys.GEN_STEPS] = c.max_text_len
        if b[2].button("Start again", key=keys.GEN_RESET):
            st.session_state[keys.GEN_STEPS] = 0
        player.play("caption", keys.PLAY_CAPTION, rewind_caption, next_word, where=b[3],
                    help=f"Write the caption one word every {player.PLAY_EVERY:g} s.")
        steps = st.session_state[keys.GEN_STEPS]
        shown = gen.words[:steps]
        st.subheader("[SOS] " + " ".join(shown) + (" …" if len(gen.words) > steps else ""))
        if len(gen.words) > steps:
            p = gen.probs[steps].numpy()
            n_bars = min(8, len(p))
            st.plotly_chart(figures.top_k_bars(
                p, list(tok_vocab), k=n_bars, title=f"P(word {steps + 1} | image, words before)"
                + (f" at T = {temperature:g}" if temperature > 0 else ""),
                x_title="probability", y_title="word"), key=keys.GEN_DIST)
            live = int((p > 0).sum())  # words top-k (or float underflow) leaves any probability
            zero = n_bars - min(live, n_bars)
            kept = (f" Top-k = {int(top_k)}: only the {live} most likely words keep any "
                    f"probability, renormalised to sum to 1." if top_k else "")
            st.caption((f"The {n_bars} most likely next words{masked}" if not zero else
                        f"The {n_bars - zero} most likely next words{masked} (and {zero} "
                        f"words at 0 %)")
                       + (": greedy takes the tallest bar." if temperature == 0 else
                          f", from softmax(logits / {temperature:g}); the next word is sampled "
                          f"from it.") + kept)
        elif gen.words and gen.words[-1] == "[EOS]":
            st.success(f"Finished: “{gen.text}” (the model wrote [EOS]).")
        else:
            st.success(f"Finished: “{gen.text}” (the {c.max_text_len} text positions ran out "
                       f"before [EOS]).")
    if stepper.show("logits", 1):
        st.subheader("Score your own caption")
        text = st.text_input("Type a caption", "a red ball on the grass", key=keys.CAPTION,
                             max_chars=2000)
        scored = state.scores(inp, name, text, mask=session.chosen_mask())
        if name.startswith("shapes-captioner"):
            st.caption("Trained with label smoothing 0.05: a word the model is sure of gets about "
                       "95 %, not 100 %.")
        if scored.notice:
            st.warning(scored.notice)
        # Does a text position see the words after it under the mask in force (full: yes)?
        ahead = tr.mask_kind in MASK_KINDS and bool(
            allowed_keys(tr.mask_kind, c.num_image_tokens, 2)[-2, -1])
        column = scored_column(ahead)
        rows = [{"word": w + (" (unknown → [UNK])" if u else ""), column: f"{p:.2%}"}
                for w, p, u in zip(scored.words, scored.probs, scored.unknown, strict=True)]
        if ahead:
            st.caption(f"Under the {tr.mask_kind} mask every text position also sees the words "
                       f"after it, so each word is scored by a position that can see the whole "
                       f"caption: not a prediction from the words before.")
        st.dataframe(rows, hide_index=True, key=keys.CAPTION_SCORES)
        st.info("What to notice: " + caption_note(scored, sees_ahead=ahead))
