"""Stage 4: attention, head by head: scores, softmax, where each patch looks, and summaries."""

import streamlit as st

from ui import controls, figures, keys, player, session, show, state, steps
from vit_core.explain.attention import (
    allowed_from_mask,
    distance_note,
    entropy_note,
    keys_holding,
    max_entropy,
    rollout_note,
    uniform_distance,
)

inp, name, model, prep, tr = session.load_current(text_free_note=True)
c = model.config
g, pre, H, L, dk, P = c.grid, c.num_prefix_tokens, c.num_heads, c.depth, c.head_dim, c.patch_size
prefix = c.prefix_names
S = tr["embed"].shape[0]
labels = figures.token_labels(c)
allowed = allowed_from_mask(tr.mask)
st.title("4 · Attention heads")
if steps.first():
    st.write(
        "Each head turns its scores into weights with a softmax over every row, so each query "
        "spreads exactly 1 unit of attention over the keys it may see. Its output for a token is "
        "the weighted average of the value vectors. Heads can learn different habits (looking at "
        "neighbours, at the whole image, at one token); the summaries at the bottom measure what "
        "this model's heads do."
    )
cols = st.columns([4, 4, 4, 1.4], vertical_alignment="bottom")  # the last: ▶ Play


def rewind_layers() -> None:
    """Play from block 0 (from where the slider is, unless that is the last block)."""
    if st.session_state[keys.LAYER] >= L - 1:
        st.session_state[keys.LAYER] = 0


def next_layer() -> bool:
    st.session_state[keys.LAYER] = min(st.session_state[keys.LAYER] + 1, L - 1)
    return st.session_state[keys.LAYER] < L - 1


with cols[0]:
    if L > 1:
        layer = controls.layer(c)
        player.play("layers", keys.PLAY_LAYERS, rewind_layers, next_layer, where=cols[3],
                    help="Show the blocks one after another, one every "
                         f"{player.PLAY_EVERY:g} s, up to block {L - 1}.")
    else:
        layer = 0
        st.markdown("**Layer 0**: this model has a single block.")
with cols[1]:
    if H > 1:
        head = controls.head(c)
    else:
        head = 0
        st.markdown("**Head 0**: this model has a single head.")
with cols[2]:
    p = controls.patch(c)
scores = tr[f"blocks.{layer}.attn.scores"][head]
pattern = tr[f"blocks.{layer}.attn.pattern"][head]
if steps.show("attention", 0):
    st.latex(rf"A = \mathrm{{softmax}}\!\left(\frac{{QK^\top}}{{\sqrt{{{dk}}}}} + M\right)\in"
             rf"\mathbb{{R}}^{{{S}\times{S}}},\qquad \mathrm{{head}} = AV\in"
             rf"\mathbb{{R}}^{{{S}\times{dk}}}")
    view = st.radio("Show", ["raw scores q·k", "scaled scores q·k/√d_k", "softmax pattern A"],
                    index=2, horizontal=True, key=keys.ATTN_VIEW)
    if view.startswith("raw"):
        z, title, scale = scores * dk**0.5, "raw scores q·k", "RdBu_r"
    elif view.startswith("scaled"):
        z, title, scale = scores, "scaled scores q·k/√d_k", "RdBu_r"
    else:
        z, title, scale = pattern, "attention pattern A (rows sum to 1)", "Viridis"
    ticks, tick_text = figures.prefix_ticks(labels[:S], g, prefix)
    st.plotly_chart(figures.matrix_heatmap(
        z.numpy(), f"Layer {layer}, head {head}: {title}, {S}×{S}", row_labels=labels[:S],
        col_labels=labels[:S], highlight_row=p + pre, colorscale=scale,
        zmid=None if scale == "Viridis" else 0.0, height=560,
        x_title="key token (what is looked at)", y_title="query token (who looks)",
        value_name="attention weight" if scale == "Viridis" else "score",
        row_ticks=ticks, col_ticks=ticks, tick_text=tick_text,
        boundaries=tuple(range(1, pre + 1))), key=keys.ATTN_MATRIX)
    if pre:
        first = " and ".join(f"{n} is token {i}" for i, n in enumerate(prefix))
        numbering = (f"{first}, so patch {p} is token {p + pre}; white lines mark where "
                     + ("DIST and " if c.dist_token else "") + "the patches start.")
    else:
        numbering = f"This model has no CLS token: patch {p} is token {p}."
    masked = "" if bool(allowed.all()) else (
        f" Under the {tr.mask_kind} mask, blocked keys get weight 0." if scale == "Viridis" else
        f" Under the {tr.mask_kind} mask, blocked keys score −∞ and are left blank.")
    st.caption(f"Rows are queries, columns are keys; on the axes pN is patch N. {numbering} The "
               f"selected patch's row is outlined.{masked}")

if steps.show("attention", 1):
    left, right = st.columns(2)
    with left:
        st.subheader(f"Where patch {p} looks")
        row = pattern[p + pre, pre:pre + g * g].reshape(g, g).numpy()
        on_prefix = ", ".join(f"{float(pattern[p + pre, i]):.1%} on {n}"
                              for i, n in enumerate(prefix))
        show.image(figures.with_scale(figures.overlay(prep.crop, row), float(row.min()),
                                      float(row.max()), "attention weight"),
                   f"layer {layer}, head {head}: patch {p}'s attention over the patches"
                   + (f" (and {on_prefix})" if pre else ""), "attention-where")
    with right:
        st.subheader(f"Who looks at patch {p}")
        col = pattern[pre:pre + g * g, p + pre].reshape(g, g).numpy()
        show.image(figures.with_scale(figures.overlay(prep.crop, col), float(col.min()),
                                      float(col.max()), "attention weight"),
                   f"layer {layer}, head {head}: how much each patch attends to patch {p}",
                   "attention-who")

summary = state.attention_summary(inp, name, session.chosen_mask())  # once per trace
prefix_rows = summary["prefix_rows"]  # [L, H, prefix, S]: the CLS / DIST queries' rows
cls_step = 1 if pre else 0  # no CLS: no step of CLS maps (ui/steps.py)
if pre and steps.show("attention", 2):
    st.subheader(f"Every head's {' and '.join(prefix)} attention in layer {layer}")
    for i, tok in enumerate(prefix):
        rows = [prefix_rows[layer, h, i, pre:pre + g * g] for h in range(H)]
        top = max(float(r.max()) for r in rows)  # one scale for every head: maps compared
        maps = [figures.overlay(prep.crop, r.reshape(g, g).numpy() / max(top, 1e-12),
                                normalise=False) for r in rows]
        mean_row = prefix_rows[layer, :, i].mean(0)
        n_keys = int(allowed[i].sum())
        if bool(allowed[i, pre:].any()):
            how = (f"Bright = where the {tok} token reads from, over the patches; every map "
                   f"has the same scale, from 0 to {top:.1%}, the largest weight any head gives "
                   f"a patch (each head's own range is printed above it). Averaged over the "
                   f"heads, half of "
                   f"{tok}'s attention falls on {keys_holding(mean_row)} of its {n_keys} "
                   f"key{'' if n_keys == 1 else 's'}; {float(mean_row[:pre].sum()):.0%} on "
                   f"{' and '.join(prefix)}.")
        else:  # e.g. the causal mask: CLS (and DIST) come before every patch
            seen = " and ".join(n for j, n in enumerate(prefix) if allowed[i, j])
            how = (f"Under the {tr.mask_kind} mask the {tok} token sees no patch, only {seen}, so "
                   f"no map colours the image: 0% of its attention on each patch, "
                   f"{float(mean_row[:pre].sum()):.0%} on {seen}.")
        tiled = figures.tile(maps, cols=min(H, 6), cell=160, labels=[
            f"head {h}: {float(r.min()):.1%} to {float(r.max()):.1%}" for h, r in enumerate(rows)])
        show.image(figures.with_scale(tiled, 0.0, top, f"{tok}'s attention weight on a patch, "
                                      "one scale for every head"), how, f"{tok.lower()}-heads")
elif not pre and steps.show("attention", 1):
    st.write("This model has no CLS token, so there is no CLS attention to map.")

if steps.show("attention", 2 + cls_step):
    st.subheader("Attention rollout: all layers together")
    roll = summary["rollout"]
    roll_map = (roll[0, pre:pre + g * g] if pre else roll[:g * g, :g * g].mean(0)).reshape(g, g)
    show.image(figures.with_scale(figures.overlay(prep.crop, roll_map.numpy()),
                                  float(roll_map.min()), float(roll_map.max()), "rollout share"),
               "Rollout (Abnar & Zuidema): average the heads, add the skip connection, "
               "renormalise, and multiply the layers; "
               + ("the CLS row, over the patches." if pre else "averaged over the patch rows."),
               "rollout", width=360)
    st.caption(rollout_note(roll, prefix, g) + " Rollout is an estimate: it follows attention only "
               "and ignores what the values and MLPs do.")

def span(lo: str, hi: str) -> str:
    """'9–12', or '9' when both ends print the same."""
    return lo if lo == hi else f"{lo}–{hi}"


if steps.show("attention", 3 + cls_step):
    st.subheader("Head summaries across depth")
    dist, ent = summary["distance"], summary["entropy"]
    baseline = uniform_distance(g, P, allowed, pre)
    ent_max = max_entropy(allowed)
    share = summary["prefix_share"]  # [L, H]
    left, right = st.columns(2)
    with left:
        st.plotly_chart(figures.distance_chart(dist, baseline, "Mean attention distance"),
                        key=keys.ATTN_DISTANCE)
        per_layer = "; ".join(f"layer {i}: " + span(f"{dist[i].min():.0f}",
                                                     f"{dist[i].max():.0f}") for i in range(L))
        lo, hi = min(float(s.min()) for s in share), max(float(s.max()) for s in share)
        by_head = span(f"{lo:.1%}", f"{hi:.1%}") + (" (by head)" if L * H > 1 else "")
        left_out = (f" Left out: the {by_head} of their attention that patch queries put on "
                    f"{' and '.join(prefix)}." if pre else "")
        st.caption(f"For each patch query: the distance in pixels between patch centres, "
                   f"weighted by its attention re-normalised over the patches it may see, "
                   f"averaged over the {g * g} patch queries (after the ViT paper's Figure 7)."
                   f"{left_out} Per layer (px): {per_layer}. Dashed: every query spreading "
                   f"evenly over the patches it may see.")
    with right:
        st.plotly_chart(figures.matrix_heatmap(
            ent, f"Attention entropy (nats; max for the {tr.mask_kind} mask = {ent_max:.2f})",
            row_labels=[f"layer {i}" for i in range(L)], col_labels=[f"head {h}" for h in range(H)],
            colorscale="Viridis", zmid=None, square=False, height=320, value_name="entropy (nats)",
            x_title="head", y_title="layer"),
            key=keys.ATTN_ENTROPY)
        st.caption(f"Mean over the {S} queries of −Σ A log A. Low: a head that focuses on a few "
                   f"tokens; the max, {ent_max:.2f} nats, is every query spreading evenly over the "
                   f"keys its mask lets it see (the mean of log(visible keys)).")
    st.info("What to notice: " + distance_note(dist, baseline) + " "
            + entropy_note(ent, ent_max, tr.mask_kind))
