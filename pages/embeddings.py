"""Stage 2: patch vectors projected by W_E, CLS (and DIST) prepended, position embeddings added."""

import numpy as np
import streamlit as st

from ui import controls, figures, keys, session, show, state, steps
from vit_core.explain.embeddings import describe_position_similarity
from vit_core.explain.generation import tokenizer_for

inp, name, model, prep, tr = session.load_current()
c = model.config
P, g, N, D, CPP = c.patch_size, c.grid, c.num_patches, c.embed_dim, c.in_chans * c.patch_size**2
pre, names = c.num_prefix_tokens, c.prefix_names
tokens_word = " and ".join(names) + (" tokens" if pre > 1 else " token")
st.title("2 · Patch embeddings" + (f", {tokens_word}" if pre else "") + ", positions")
if not pre:
    prefix_text = "This model has no CLS token: the sequence is the patches alone. "
else:
    prefix_text = (
        ("A learned CLS vector is then put in front of the patches. " if pre == 1 else
         "Two learned vectors, CLS and DIST, are then put in front of the patches (DeiT trains "
         "DIST to agree with a teacher network). ")
        + ("It has no pixels of its own, so anything it knows about the image must come "
           "from the patches through attention. " if pre == 1 else
           "They have no pixels of their own, so anything they know about the image must "
           "come from the patches through attention. "))
    if tr.mask_kind == "causal":
        whose = ("chosen in the sidebar" if session.chosen_mask() else
                 "this model's own, the one it was trained with")
        prefix_text += (f"Under the causal mask ({whose}), CLS is token 0 and may attend only "
                        f"to itself. ")
if steps.first():
    st.write(
        f"Each flattened patch is multiplied by one learned matrix W_E ({CPP}×{D}) and shifted "
        f"by a bias b, giving a {D}-number embedding. The same W_E is used for every patch, "
        f"exactly like a convolution with a {P}×{P} kernel and stride {P}. " + prefix_text
        + "Finally a learned position vector is added to every token, because attention itself "
        "does not know where a patch came from."
    )
    prefix_tex = "".join(rf"x_\mathrm{{{n.lower()}}};\," for n in names)
    st.latex(rf"z_0 = [\,{prefix_tex}x_p^1E+b;\dots;x_p^{{{N}}}E+b"
             rf"\,] + E_\mathrm{{pos}},\quad E\in\mathbb{{R}}^{{{CPP}\times {D}}},\;"
             rf"E_\mathrm{{pos}}\in\mathbb{{R}}^{{{N + pre}\times {D}}},\; z_0\in\mathbb{{R}}^"
             rf"{{{N + pre}\times {D}}}")
p = controls.patch(c)
W = model.patch_embed.proj.weight.detach().double().reshape(D, -1)  # [D, C·P·P]
b = model.patch_embed.proj.bias.detach().double()
by_hand = tr["patches"][p].double() @ W.T + b  # the equation, in float64, from the live vector
if steps.show("embeddings", 0):
    st.subheader(f"Patch {p}: {CPP} pixel values → {D} embedding values")
    st.plotly_chart(figures.vector_strip(tr["patch_embed"][p].numpy(),
                                         f"x_p E + b for patch {p} (from the trace): {D} values",
                                         height=140, x_title=f"embedding dimension (0 … {D - 1})",
                                         value_name="embedding value", y_title=f"patch {p}"),
                    key=keys.EMBED_VECTOR)
    st.write(f"Recomputed on this page in float64 as `patches[{p}] @ W_E + b`: the largest "
             f"difference from the traced (float32) value is "
             f"**{float((by_hand - tr['patch_embed'][p].double()).abs().max()):.2e}**, float32 "
             f"rounding; first values {np.array2string(by_hand[:5].numpy(), precision=3)}.")

views = state.weight_views(name)
sim = views["pos_sim"]
r, col = divmod(p, g)
if steps.show("embeddings", 1):
    left, right = st.columns(2)
    with left:
        st.subheader("What W_E looks for")
        labels = [f"PC{i + 1} {r:.0%}" for i, r in enumerate(views["ratio"])]
        show.image(figures.tile([figures.array_image(a, 56) for a in views["filters"]], cols=7,
                                labels=labels),
                   f"The top {len(labels)} principal components of W_E's {D} filters, each drawn "
                   f"as a {P}×{P} colour patch (its values scaled so that its lowest is 0 and its "
                   "highest full intensity in the R, G, B channels), as in the ViT paper's Figure "
                   "7, left; the percentage is the share of the filters' variance it explains."
                   + ("" if model.info.trained else " Random weights give noise here."),
                   "embedding-filters")
    with right:
        st.subheader("Position embeddings")
        st.plotly_chart(figures.grid_heatmap(
            sim[r, col], f"Patch {p}'s position vector vs every position (outlined: itself)",
            value_name="cosine similarity", selected=(r, col), zmin=-1, zmax=1, height=330),
            key=keys.EMBED_POS_ONE)
if steps.show("embeddings", 2):
    st.plotly_chart(figures.similarity_tiles(
        sim, f"Every position's similarity map, laid out on the {g}×{g} grid (Figure 7, centre): "
        "tile (row, column) compares that patch with all positions",
        value_name="cosine similarity", selected=(r, col), height=480 if g > 4 else 360),
        key=keys.EMBED_POS_ALL)
stats = views["pos_stats"]

if steps.show("embeddings", 3):
    st.subheader("The sum that enters block 0")
    emb = tr["embed"][: N + pre].numpy()
    token_names = figures.token_labels(c)
    st.plotly_chart(figures.matrix_heatmap(
        emb, f"embed = [{'; '.join(names) + '; ' if pre else ''}patch_embed] + E_pos: "
        f"{emb.shape[0]} tokens × {D} (row of patch {p} outlined)", highlight_row=p + pre,
        square=False, height=360, row_labels=token_names,
        row_ticks=figures.token_ticks(token_names, g, figures.tick_gap(N + pre, 360)),
        y_title="token",
        x_title=f"embedding dimension (0 … {D - 1})", value_name="value",
        boundaries=(pre,) if pre else ()), key=keys.EMBED_MATRIX)
    st.write(f"{N} patch rows" + "".join(f" + 1 {n} row" for n in names) +
             f" = **{N + pre}** tokens of **{D}** numbers each"
             + (f"; patch {p} is token {p + pre}, because {' and '.join(names)} "
                f"{'comes' if pre == 1 else 'come'} first (tokens count from 0)."
                if pre else f"; with no CLS token, patch {p} is token {p}."))
    if c.has_text:  # the map's "Word embeddings + text positions" box opens this page
        st.subheader("Then the text tokens")
        with st.spinner("Writing its caption, one forward pass per word…"):
            gen, ids, text_tr = state.caption_pass(inp, name, mask=session.chosen_mask())
        n_img, T = c.num_image_tokens, len(ids)
        words = [tokenizer_for(model).vocab[i] for i in ids]
        st.plotly_chart(figures.matrix_heatmap(
            text_tr["embed"][n_img:].numpy(), f"embed, text rows = E[word] + P_txt[t]: {T} "
            f"tokens × {D}", square=False, height=120 + 22 * T, row_labels=words,
            row_ticks=words, y_title="text token", x_title=f"embedding dimension (0 … {D - 1})",
            value_name="value"), key=keys.EMBED_TEXT)
        st.write(f"A captioner's text joins the same sequence after its {n_img} image tokens. "
                 f"Each token's id picks one row of the word embedding E ({c.vocab_size}×{D}), "
                 f"and its place t in the text adds row t of the text positions P_txt "
                 f"({c.max_text_len}×{D}). Here the text is what the model read when it wrote "
                 f"the last token of its greedy caption “{gen.text}”: [SOS] and {T - 1} "
                 f"word{'' if T == 2 else 's'}, so S = {n_img} + {T} = **{n_img + T}** tokens.")
st.info("What to notice: " + describe_position_similarity(stats, model.info.trained))
