"""Stage 6: the MLP of one token: LN2 -> W_1 -> GELU -> W_2 -> residual, and the residual stream."""

import streamlit as st
import torch

from ui import controls, figures, keys, session, state, steps
from vit_core.explain.tokens import describe_residual_stream, residual_stream

inp, name, model, prep, tr = session.load_current(text_free_note=True)
c = model.config
D, F_, L, pre = c.embed_dim, c.mlp_hidden, c.depth, c.num_prefix_tokens
labels = figures.token_labels(c)
st.title("6 · The MLP: every token thinks on its own")
if steps.first():
    st.write(
        f"After attention has mixed information between tokens, each token goes through the same "
        f"small two-layer network, separately: widen from {D} to {F_} numbers, bend them with GELU "
        f"(negative inputs are squashed towards 0, positive ones pass), and project back to {D}. "
        f"The result is added to the token, like the attention output before it: the residual "
        f"stream only ever receives additions."
    )
    # a space after every \quad: "\quadG" would be an unknown command (KaTeX prints it in red)
    st.latex(rf"\hat X = \mathrm{{LN}}(X'),\quad U = \hat X W_1 + b_1 \in \mathbb{{R}}^{{{F_}}},"
             rf"\quad G = \mathrm{{GELU}}(U),\quad X_\mathrm{{out}} = X' + G W_2 + b_2 "
             rf"\in \mathbb{{R}}^{{{D}}}")
cols = st.columns(3)
with cols[0]:
    layer = controls.layer(c)
with cols[1]:
    p = controls.patch(c, label="Token: patch")
with cols[2]:
    use_cls = c.class_token and st.toggle("Use the CLS token", key=keys.MLP_CLS)
i = 0 if use_cls else p + pre
u = tr[f"blocks.{layer}.mlp.pre"][i]
gelu_u = tr[f"blocks.{layer}.mlp.post"][i]
on = int((u > 0).sum())
stream = residual_stream(tr, i, state.sublayer_norms(inp, name, session.chosen_mask()))

if steps.show("mlp", 0):
    left, right = st.columns(2)
    with left:
        xs = torch.linspace(float(u.min()) - 0.5, float(u.max()) + 0.5, 400)
        st.plotly_chart(figures.gelu_scatter(u.numpy(), gelu_u.numpy(), xs.numpy(),
                                             torch.nn.functional.gelu(xs).numpy(), labels[i]),
                        key=keys.MLP_GELU)
        st.caption(f"{labels[i]} (token {i}) at block {layer}: each dot is one of its {F_} hidden "
                   "units, placed at its input U and its output GELU(U).")
    with right:
        st.metric("share of hidden units switched on (U > 0)", f"{on / F_:.1%}",
                  help="GELU passes positive inputs almost unchanged and squashes negative ones.")
        st.caption(f"{on} of {F_} units")
        top = torch.topk(gelu_u, min(10, F_))
        st.plotly_chart(figures.top_units_bars(top.values.numpy(), top.indices.tolist()),
                        key=keys.MLP_TOP)
        mid, out = tr[f"blocks.{layer}.resid_mid"][i], tr[f"blocks.{layer}.mlp_out"][i]
        st.write(f"‖X'‖ = {float(mid.norm()):.2f} before, the MLP adds a vector of norm "
                 f"{float(out.norm()):.2f}, giving ‖X_out‖ = "
                 f"{float(tr[f'blocks.{layer}.resid_post'][i].norm()):.2f}.")

if steps.show("mlp", 1):
    st.subheader(f"The residual stream of {labels[i]}, block by block")
    st.plotly_chart(figures.residual_norms(
        stream["attn"], stream["mlp"], stream["resid"],
        title=f"{labels[i]}: the norm of what each sublayer adds (bars) and of the token after "
              "it (line)"), key=keys.MLP_RESID)
    st.caption("Bars: the size of what each sublayer adds; line: the size of the token afterwards "
               "(additions can point in different directions, so they need not add up).")
st.info(f"What to notice: {on / F_:.1%} of this token's hidden units are on in block {layer}. "
        + describe_residual_stream(stream)
        + " Attention moves information between tokens; the MLP transforms it inside each token.")
