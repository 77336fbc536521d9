"""The whole forward pass at a glance: the patch grid and the shape of every stage, live."""

import streamlit as st

from ui import figures, keys, models, navigate, session, show, state
from ui.scene_notes import caption_note, class_note
from ui.tables import stage_table
from vit_core.explain.stages import model_map
from vit_core.io.images import describe_preprocessing
from vit_core.scenes.world import Composition

navigate.open_pending()  # a click on the map's boxes opens that stage
inp, name, model, prep, tr = session.load_current()
c = model.config
S, D, N, g, pre = tr["embed"].shape[0], c.embed_dim, c.num_patches, c.grid, c.num_prefix_tokens
headless = not c.num_classes and not c.has_text
st.title("From pixels to logits, in one pass")
map_tr, gen = tr, None
if c.has_text:  # the map shows the pass that wrote the caption's last word: image + its text
    with st.spinner("Writing its caption, one forward pass per word…"):
        gen, _, map_tr = state.caption_pass(inp, name, mask=session.chosen_mask())
_, C, H, W = prep.pixels.shape
mm = model_map(map_tr, (H, W, C), st.session_state[keys.LAYER])
big = 1.3 if st.session_state.get(keys.PRESENTER) else 1.0  # a projector: the map drawn larger
st.plotly_chart(figures.model_map(mm, scale=big), key=keys.OVERVIEW_MAP, on_select=lambda:
                navigate.on_map_click(keys.OVERVIEW_MAP), selection_mode="points",
                config={"displayModeBar": False}, width="content")
pick = (" The dotted frame is one block; the cells under it pick which block's tensors label "
        "its arrows." if c.depth > 1 else " The dotted frame is the model's only block.")
written = ""
if c.has_text:
    k = map_tr.n_text - 1  # words read besides [SOS]
    last = "[EOS]" if gen.words and gen.words[-1] == "[EOS]" else f"“{gen.words[-1]}”"
    written = (f" The text stream is the pass in which it wrote its last token, {last}: it read "
               f"[SOS] and the {k} word{'' if k == 1 else 's'} it had written before, under "
               f"the {map_tr.mask_kind} mask, so S = {map_tr.n_image} image + {map_tr.n_text} "
               f"text tokens = {map_tr['embed'].shape[0]} there.")
st.caption(
    "Each box is one step of the forward pass on your image: click it to open the page that "
    "explains it (a box inside the block also selects that block). Each blue label is the shape "
    "of the tensor on that arrow in this very pass (e.g. tokens × numbers per token, or "
    "heads × tokens × tokens for attention)." + pick + written)
blocks = "1 block" if c.depth == 1 else f"{c.depth} blocks"
st.write(
    f"The model cuts the {c.img_size}×{c.img_size} image into square patches of "
    f"{c.patch_size}×{c.patch_size} pixels, turns each patch into a vector of {D} "
    f"numbers, and lets these vectors exchange information through {blocks} of "
    f"attention and MLP layers. Everything below comes from one forward pass on your "
    f"image" + (" (the caption takes one more pass per word)" if c.has_text else "")
    + f", which offers {len(tr)} intermediate tensors by name. It keeps the residual stream, "
    f"the input and output of every block; when a page opens a block's inside (Q, K, V, "
    f"attention, the MLP), that one block is run again from its kept input, which gives the "
    f"same numbers."
)
prefix_tex = "".join(rf"x_\mathrm{{{n.lower()}}};\," for n in c.prefix_names)
st.latex(rf"N = \frac{{H}}{{P}}\cdot\frac{{W}}{{P}} = \frac{{{c.img_size}}}{{{c.patch_size}}}"
         rf"\cdot\frac{{{c.img_size}}}{{{c.patch_size}}} = {N},\qquad "
         rf"z_0 = [{prefix_tex}x_pE] + E_\mathrm{{pos}} \in \mathbb{{R}}^{{{S}"
         rf"\times {D}}}")
composed = (Composition.parse(st.session_state[keys.SCENE])
            if inp.label.startswith("composed") and st.session_state.get(keys.SCENE) else None)
left, right = st.columns([1, 1])
with left:
    st.subheader("What the model sees")
    st.plotly_chart(figures.patch_grid(prep.crop, c.patch_size, show_index=g <= 16),
                    key=keys.OVERVIEW_GRID)
    st.caption(f"{inp.label} · {describe_preprocessing(c)} · {g}×{g} = {N} patches")
with right:
    if c.num_classes:
        st.subheader("Prediction")
        probs = tr.logits.softmax(-1).numpy()
        names = list(c.class_names) or [f"class {i}" for i in range(c.num_classes)]
        st.plotly_chart(figures.top_k_bars(probs, names, x_title="probability"),
                        key=keys.OVERVIEW_TOPK)
        if c.global_pool == "avg":
            how = (f"The class is read from the mean of the {N} final patch tokens"
                   + (", normalised by fc_norm," if c.fc_norm else "")
                   + " through one linear layer (the head)"
                   + (", not from the CLS token." if c.class_token else "."))
        elif c.dist_token:
            how = ("This DeiT model has two heads, one on the final CLS token and one on the "
                   "final DIST token; its prediction is the mean of their two logit vectors, "
                   "as DeiT does at inference.")
        else:
            how = "The class is read from the final CLS token by one linear layer (the head)."
        shown = (f"all {c.num_classes} classes" if c.num_classes <= 5 else
                 f"the 5 most likely of {c.num_classes} classes")
        st.caption(f"Bars: P(class) after softmax, {shown}. " + how)
        sure = models.sureness_note(model, float(probs.max()), inp.label, session.chosen_mask())
        if sure:
            st.caption(sure)
        if composed:
            st.info(class_note(composed, names, [float(p) for p in probs]))
    elif c.has_text:
        st.subheader("Caption")
        st.markdown(f"Its caption, one word at a time (greedy): **“{gen.text}”**")
        st.plotly_chart(figures.word_bars(gen.words, gen.chosen), key=keys.OVERVIEW_WORDS)
        st.caption("Each bar: how sure the model was of that word when it wrote it "
                   "([EOS] ends the caption). The Logits page steps through it.")
        sure = models.sureness_note(model, sum(gen.chosen) / len(gen.chosen), inp.label,
                                    session.chosen_mask())
        if sure:
            st.caption(sure)
        if composed:
            st.info(caption_note(composed, gen.words))
    else:
        st.subheader("What it outputs")
        st.write(f"This model has no classifier: it is an encoder that outputs {S} token "
                 f"vectors of {D} numbers for other models to use (e.g. DINO features), so "
                 f"there is no prediction to show.")
        last = tr[f"blocks.{c.depth - 1}.attn.pattern"].mean(0)  # [S, S], heads averaged
        cls_to_patches = last[0, pre:pre + N] if c.class_token else None
        if cls_to_patches is not None and float(cls_to_patches.sum()) > 1e-6:
            st.plotly_chart(figures.map_over_image(
                prep.crop, cls_to_patches.reshape(g, g).numpy(),
                f"Where the final CLS token looks (block {c.depth - 1}, mean of "
                f"{c.num_heads} head{'s' if c.num_heads > 1 else ''})",
                value_name="attention weight", zmin=0), key=keys.OVERVIEW_OUTPUT)
            st.caption(f"Colour: the share of CLS's attention each patch receives in the last "
                       f"block; together the patches get {float(cls_to_patches.sum()):.0%}, the "
                       f"rest goes to {' and '.join(c.prefix_names)}.")
        else:
            if c.class_token:
                st.write(f"Under the {tr.mask_kind} mask the CLS token (token 0) sees only "
                         "itself, so its attention says nothing about the image; here are the "
                         "patch tokens instead.")
            pca = state.patch_pca(inp, name, session.chosen_mask())  # [g, g, 3] in [0, 1]
            show.image(figures.array_image(pca.transpose(2, 0, 1), 224),
                       "Each final patch token's first three principal components shown as "
                       "red, green and blue: patches the model represents alike get alike "
                       "colours.", "patch-pca")
st.subheader("Every stage, with the shape it had just now")
if c.has_text:
    st.caption(f"This table is the pass over the image alone (no text fed), as the other pages "
               f"start: S = {S} tokens here, {map_tr['embed'].shape[0]} in the map above.")
st.dataframe(stage_table(tr), hide_index=True, key=keys.OVERVIEW_TABLE)
if c.depth > 2:
    st.caption(f"Blocks 1 to {c.depth - 2} are left out of the table: they hold the same tensors "
               f"with the same shapes as blocks 0 and {c.depth - 1}.")
heads = f"{c.num_heads} head{'s' if c.num_heads > 1 else ''}"
tokens = (f"S = {S} image tokens (plus one per word while it writes a caption)" if c.has_text
          else f"S = {S} tokens")
st.info(f"What to notice: the token count stays {tokens} through every block; only the "
        f"attention scores and pattern are S×S = {S * S:,} entries for each of {heads} in each "
        f"of the {blocks}, so their cost grows with the square of the token count, and smaller "
        f"patches mean more tokens.")
