"""Stage 10: change one thing, rerun the model, and compare the two results."""

import streamlit as st

from ui import controls, figures, keys, session, state, steps
from vit_core import MASK_KINDS, allowed_keys
from vit_core.explain import interventions as ex
from vit_core.explain.generation import score_logits, tokenizer_for
from vit_core.explain.readout import reads_only_prefix
from vit_core.io.images import denormalize

inp, name, model, prep, tr = session.load_current()
c = model.config
L, H, N, P, g = c.depth, c.num_heads, c.num_patches, c.patch_size, c.grid
mask = session.chosen_mask()  # the sidebar's mask: both runs use it (unless the change is the mask)
run_mask = mask or c.default_mask
ss = st.session_state
st.title("10 · Experiments")
if steps.first():
    st.write(
        "The best way to see what a part of the model does is to take it away. Pick an "
        "intervention below: the model runs again on the same image with that one change, and the "
        f"two results are compared. Unless the change is the mask itself, both runs use the "
        f"{run_mask} attention mask{'' if mask else ', the one this model was trained with'} "
        "(sidebar)."
    )
    tokens = "".join(rf"x_\mathrm{{{n.lower()}}};\," for n in c.prefix_names)  # CLS, DIST if any
    st.latex(r"\mathrm{MSA}(X) = \big[\,m_1\,\mathrm{head}_1;\ \dots;\ m_H\,\mathrm{head}_H"
             r"\,\big]\,W_O + b_O,\quad m_h\in\{0,1\}")
    st.latex(r"z_0 = [" + tokens + r"X_pE] + \lambda E_\mathrm{pos},\quad \lambda\in\{0,1\}")
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


def toggle_clicked_patch() -> None:
    """on_select of the grid: a click adds the patch to the grey set, or takes it out."""
    event = ss.get(keys.EXP_GRID)
    chosen = set(ss.get(keys.EXP_OCCLUDED, []))
    for point in (event or {}).get("selection", {}).get("points", []):
        data = point.get("customdata")
        if data is not None:
            chosen ^= {int(data[0] if isinstance(data, list) else data)}
    ss[keys.EXP_OCCLUDED] = sorted(chosen)


def clear_patches() -> None:
    ss[keys.EXP_OCCLUDED] = []


# ---------------------------------------------------------------- choose the change
arg: tuple = ()
if kind == "heads":
    if L > 1:
        layer = controls.layer(c)
    else:
        layer = 0
        st.caption("This model has a single block, so the heads are those of block 0.")
    ss[keys.EXP_HEADS] = [h for h in ss.get(keys.EXP_HEADS, [0]) if h < H]
    picked = st.multiselect(f"Heads of block {layer} to switch off", list(range(H)),
                            format_func=lambda h: f"head {h}", key=keys.EXP_HEADS)
    arg = tuple((layer, h) for h in sorted(picked))
elif kind == "occlude":
    if keys.EXP_OCCLUDED not in ss:  # start with the 3 x 3 patches around the selected one
        r0, c0 = divmod(ss[keys.PATCH], g)
        ss[keys.EXP_OCCLUDED] = [r * g + cc for r in range(r0 - 1, r0 + 2)
                                 for cc in range(c0 - 1, c0 + 2) if 0 <= r < g and 0 <= cc < g]
    arg = tuple(p for p in ss[keys.EXP_OCCLUDED] if p < N)
elif kind in ("shuffle", "shuffle_no_positions"):
    arg = (int(st.number_input("Shuffle seed (which random order)", 0, 10_000, 0,
                               key=keys.EXP_SEED)),)
elif kind == "mask":
    others = [k for k in MASK_KINDS if k != run_mask]
    if ss.get(keys.EXP_MASK) not in others:
        ss[keys.EXP_MASK] = others[0]
    arg = (st.selectbox(f"Mask to run with instead of {run_mask}", others, key=keys.EXP_MASK),)

# ---------------------------------------------------------------- the input, before and after
text_ids = None
if c.has_text:  # the caption the model writes unchanged, fed to both runs to score its words
    gen0 = state.generation(inp, name, mask=mask)
    tok = tokenizer_for(model)
    enc = tok.encode(gen0.text, max_len=c.max_text_len)
    text_ids = enc.ids
    tr = state.trace(inp, name, mask=mask, text_ids=text_ids)
n_text = len(text_ids or [])
altered = ex.alter(model, prep.pixels, kind, arg, mask)
altered_img = figures.array_image(denormalize(altered.pixels[0], c).numpy(), c.img_size)
if steps.show("experiments", 0):
    left, right = st.columns(2)
    if kind == "heads":
        with left:
            st.plotly_chart(figures.head_switches(L, H, arg), key=keys.EXP_INPUT)
        with right:
            st.write(f"The image is unchanged. In block {layer}, the switched-off heads' outputs "
                     "A·V are multiplied by 0 before W_O; every other head runs as before.")
    elif kind == "occlude":
        with left:
            st.plotly_chart(figures.patch_set_grid(
                prep.crop, P, arg, show_index=g <= 16,
                title=f"Original: click patches to grey them out ({len(arg)} chosen)"),
                key=keys.EXP_GRID, on_select=toggle_clicked_patch, selection_mode="points")
            st.button("Grey out no patch", key=keys.EXP_CLEAR, on_click=clear_patches)
        with right:
            st.plotly_chart(figures.labelled_patches(
                altered_img, P, f"What the model sees: {len(arg)} patches greyed out",
                outlined=arg), key=keys.EXP_ALTERED)
    elif kind in ("shuffle", "shuffle_no_positions"):
        few = g <= 16  # numbers stay readable up to a 16 x 16 grid
        with left:
            st.plotly_chart(figures.labelled_patches(
                prep.crop, P, "Original: each patch's number" if few else "Original",
                labels=range(N) if few else None), key=keys.EXP_INPUT)
        with right:
            st.plotly_chart(figures.labelled_patches(
                altered_img, P, ("Shuffled: each cell shows the number of the patch it holds"
                                 if few else "Shuffled (reassembled from the moved patches)"),
                labels=altered.perm.tolist() if few else None), key=keys.EXP_ALTERED)
        if kind == "shuffle_no_positions":
            st.caption("The model gets the shuffled image, and no position embedding is added to "
                       "any image token.")
    elif kind == "positions":
        with left:
            st.image(prep.crop, caption="The image is unchanged", width=320)
        with right:
            z0 = "; ".join(list(c.prefix_names) + ["X_p E"])  # CLS, DIST if any, then patches
            st.write(f"What changes is the first sum of the model: z₀ = [{z0}] + E_pos "
                     f"becomes z₀ = [{z0}]. Every patch token still carries what its patch "
                     "shows, but nothing of where the patch is."
                     + (" The text tokens keep their positions P_txt." if c.has_text else ""))
    elif kind == "mask":
        n_img = c.num_image_tokens
        for col, kind_, when in ((left, run_mask, "before"), (right, arg[0], "after")):
            with col:
                st.plotly_chart(figures.token_mask(
                    allowed_keys(kind_, n_img, n_text).numpy(), c, enc.words if n_text else None,
                    f"{when}: the {kind_} mask over {n_img} image"
                    + (f" and {n_text} text tokens" if n_text else " tokens")),
                    key=keys.EXP_INPUT if when == "before" else keys.EXP_ALTERED)

# ---------------------------------------------------------------- the two results
GIVEN_BEFORE = "image, the words before it"  # what a text position sees: causal or prefix mask
GIVEN_FULL = "image, every word fed, itself and those after it too"  # the full mask


def compare(after, diff: float) -> bool | None:
    """Draw the two results and say how they differ; True if the answer moved (None: this
    model gives no answer, only tokens)."""
    if c.num_classes:
        names = list(c.class_names) or [f"class {k}" for k in range(c.num_classes)]
        p0, p1 = tr.logits.softmax(-1), after.logits.softmax(-1)
        top = list(dict.fromkeys(p0.topk(min(5, c.num_classes)).indices.tolist()
                                 + p1.topk(min(5, c.num_classes)).indices.tolist()))
        top.sort(key=lambda k: -float(p0[k]))
        st.plotly_chart(figures.before_after_bars(
            [names[k] for k in top], p0[top].numpy(), p1[top].numpy(),
            title=f"Top classes before and after ({choice.lower()})",
            value_title="probability (softmax of the logits)").update_yaxes(
                title="class" + (" (the top 5 before and after)" if c.num_classes > 5 else "")),
            key=keys.EXP_COMPARE)
        st.write(ex.describe_class_change(p0, p1, names)
                 + f" The largest change of any logit is {diff:.3g}.")
        b0 = int(p0.argmax())
        return int(p1.argmax()) != b0 or abs(float(p1[b0] - p0[b0])) >= ex.SAME_P
    elif c.has_text:
        gen1 = state.experiment_caption(inp, name, kind, arg, mask)
        st.plotly_chart(figures.caption_pair(
            gen0.words, gen0.chosen, gen1.words, gen1.chosen, f"before: “{gen0.text}”",
            f"after ({choice.lower()}): “{gen1.text}”",
            "The caption each run writes, word by word (greedy)").update_xaxes(
                title="word of the caption, in writing order"), key=keys.EXP_COMPARE)
        st.write(ex.describe_caption_change(gen0, gen1))
        s0, s1 = score_logits(tok, enc, tr.logits), score_logits(tok, enc, after.logits)
        masks = (run_mask, arg[0] if kind == "mask" else run_mask)  # before, after
        given = [GIVEN_FULL if m == "full" else GIVEN_BEFORE for m in masks]
        fed_title = ("The caption before, fed to both runs: "
                     + (f"P(each word | {given[0]})" if given[0] == given[1] else
                        f"before ({masks[0]} mask) P(each word | {given[0]}); after "
                        f"({masks[1]} mask) P(each word | {given[1]})"))
        st.plotly_chart(figures.before_after_bars(
            [f"{i + 1}. {w}" for i, w in enumerate(s0.words)], s0.probs, s1.probs,
            title=fed_title, value_title="P(word)").update_yaxes(
                title="word of the caption before, in order"), key=keys.EXP_WORDS)
        m0, m1 = sum(s0.probs) / len(s0.probs), sum(s1.probs) / len(s1.probs)
        st.write(f"Fed the caption written before the change, the changed model gives its "
                 f"words {ex.pct(m1)} on average (unchanged: {ex.pct(m0)}); the largest change "
                 f"of any text logit is {diff:.3g}.")
        return gen0.ids != gen1.ids
    else:
        sims, sentence = ex.describe_similarity(tr, after)
        st.plotly_chart(figures.similarity_bars(
            [f"final {k}" for k in sims], list(sims.values()),
            "How far the final tokens moved").update_yaxes(title="final token"),
            key=keys.EXP_COMPARE)
        st.write(sentence)
    return None


# ---------------------------------------------------------------- what to notice, from the numbers
def shuffled_note(perm) -> str:
    """What the shuffle did, from its permutation: a random order may leave a patch in place."""
    stay = [i for i, p in enumerate(perm.tolist()) if i == p]
    moved = N - len(stay)
    note = (f"every patch keeps its pixels; {'all ' if not stay else ''}{moved} of the {N} "
            f"patches move to another cell, where each is given that cell's position embedding")
    if not stay:
        return note + "."
    which = (f"patch {stay[0]}" if len(stay) == 1 else
             f"patches {', '.join(map(str, stay[:-1]))} and {stay[-1]}" if len(stay) <= 8 else
             f"{len(stay)} patches")
    return (note + f"; this seed's order leaves {which} in {'its' if len(stay) == 1 else 'their'}"
            " own cell.")


def notice(after, diff: float, moved: bool | None) -> str:
    """The note under the results: true for any model, or worded from these two runs."""
    what = ("logits" if c.num_classes else "text logits" if c.has_text
            else "final " + " and ".join(ex.summary(tr)))
    answer = "caption" if c.has_text else "answer"
    if kind == "heads":
        layer, k = arg[0][0], len(arg)
        note = (f"with {'the only head' if H == 1 else f'all {H} heads'} of block {layer} off, "
                "only W_O's bias is left of that block's "
                "attention output: in that block no token takes anything from another token."
                if k == H else
                f"heads work side by side and their outputs are added through W_O, so switching "
                f"off {k} of block {layer}'s {H} heads removes {k} of {H} terms from that sum.")
    elif kind == "occlude":
        rgb = ", ".join(f"{round(255 * m)}" for m in c.mean)
        note = (f"the {len(arg)} greyed patches hold the normalisation mean, RGB ({rgb}), in every "
                "pixel; the rest of the image is untouched. Grey out the object to see whether the "
                "answer rests on it, and the background to check that it does not.")
    elif kind in ("positions", "shuffle"):
        note = ("the pixels are the same; only E_pos is left out, so the model no longer knows "
                "where each patch is." if kind == "positions" else shuffled_note(altered.perm))
        if run_mask == "causal" and reads_only_prefix(c):
            own = ("CLS's own position embedding (row 0 of E_pos)" if not c.dist_token else
                   "CLS's and DIST's own position embeddings (rows 0 and 1 of E_pos)")
            sees = "CLS sees only itself" + (" and DIST only CLS and itself" if c.dist_token
                                             else "")
            if kind == "shuffle":
                note += (f" Under the causal mask {sees}, and {own} "
                         f"{'stay' if c.dist_token else 'stays'}, so where the patches "
                         f"are cannot reach the answer: the largest change of any logit is "
                         f"{diff:.3g}.")
            else:
                note += (f" Under the causal mask {sees}, so the patches' positions cannot reach "
                         f"the answer; but leaving out E_pos also removes {own}, and that alone "
                         + (f"moves the logits here, by up to {diff:.3g}." if diff >= ex.SAME_OUTPUT
                            else f"changes the logits here by only {diff:.2g}."))
        elif moved is not None:
            note += (f" For this image the {answer} {'changed' if moved else 'hardly changed'}, so "
                     f"it {'depends' if moved else 'hardly depends'} on where the patches are.")
    elif kind == "shuffle_no_positions":
        plain = state.experiment(inp, name, "positions", (), text_ids, mask)
        d = ex.max_difference(after, plain)
        same = d < ex.SAME_OUTPUT
        note = (f"compared with 'Remove position embeddings' on the unshuffled image, the largest "
                f"difference in the {what} is {d:.2g}: "
                + ("exactly the same. " if d == 0 else "the same up to float rounding. "
                   if same else "they differ. "))
        if run_mask != "causal" and same:
            note += (f"Without positions, and with every image token seeing every other "
                     f"({run_mask} mask), shuffling only reorders the patch tokens, and nothing "
                     "that reads them can tell one order from the other.")
        elif run_mask == "causal" and same and reads_only_prefix(c):
            note += ("But only because under the causal mask CLS sees nothing but itself: the "
                     "answer does not depend on the image at all.")
        elif run_mask == "causal" and not same:
            note += ("Under the causal mask patch i sees only the patches before it, so the order "
                     "matters even without positions.")
    else:  # another mask
        new = arg[0]
        if ex.same_image_masks(model, run_mask, new, n_text):
            note = (f"with {'no' if not n_text else n_text} text tokens, the {new} mask allows "
                    f"exactly the keys the {run_mask} mask does, so both runs are the same "
                    f"(largest difference {diff:.2g}).")
        elif new == "causal" and reads_only_prefix(c):
            p1 = after.logits.softmax(-1)
            names = list(c.class_names) or [f"class {k}" for k in range(c.num_classes)]
            note = ("under the causal mask CLS (token 0) may attend only to itself"
                    + (", and DIST only to CLS and itself" if c.dist_token else "")
                    + ", so what reaches the class head no longer depends on the image: this model "
                    f"now answers {names[int(p1.argmax())]} ({ex.pct(float(p1.max()))}) for every "
                    "picture.")
        elif new == "causal":
            note = ("under the causal mask each token sees only itself and the tokens before it: "
                    "patch i no longer sees the patches after it.")
        elif new == "full" and n_text:
            note = ("under the full mask every text position also sees the words after it, so fed "
                    "the caption before, each position can see the very word it is asked to "
                    "predict.")
        else:
            note = (f"under the {new} mask the image tokens see each other in both directions"
                    + ("; the text stays causal." if n_text and new == "prefix" else "."))
    return note


if steps.show("experiments", 1):
    if (kind == "heads" or kind == "occlude") and not arg:
        st.info("What to notice: nothing is switched off or greyed out yet, so both runs would be "
                "the same; " + ("pick a head above." if kind == "heads" else
                                "click a patch on the grid."))
    else:
        after = state.experiment(inp, name, kind, arg, text_ids, mask)
        diff = ex.max_difference(tr, after)
        st.subheader("Before and after")
        moved = compare(after, diff)
        st.info("What to notice: " + notice(after, diff, moved))
