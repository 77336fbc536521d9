"""Stage 8: the whole path as one table, from the live trace, next to the notes' ViT-B/16."""

import streamlit as st

from ui import figures, keys, models, session, state
from ui import steps as stepper  # `steps` is this page's table
from vit_core import PRESETS
from vit_core.explain.flops import (
    attention_share,
    si,
    stage_rows,
    total_macs,
    total_params,
)

inp, name, model, prep, tr = session.load_current()
c = model.config
ref = PRESETS["vit-b16"]
st.title("8 · The shape trace")
if stepper.first():
    st.write(
        "Every step of the forward pass: what it does, its equation, the shape of what it "
        "produces (read from the tensors your image just produced) and how many parameters it has; "
        "then what its matrix multiplications cost, next to the notes' reference model, ViT-B/16. "
        "Block steps are listed once and happen in every layer."
    )
fed = ""
if c.has_text:  # a captioner never runs without text: trace the pass that wrote its last token
    with st.spinner("Writing its caption, one forward pass per word…"):
        gen, text, tr = state.caption_pass(inp, name, mask=session.chosen_mask())
    last = ("[EOS]" if gen.words[-1:] == ["[EOS]"] else
            f"“{gen.words[-1]}”" if gen.words else "its first token")
    k = len(text) - 1  # words read besides [SOS]
    fed = (f"A captioner always reads text along with the image, so this is the pass in which "
           f"it wrote the last token of its caption, {last}: it read "
           f"“{' '.join(c.vocab[i] for i in text)}” ([SOS] and the {k} word{'' if k == 1 else 's'} "
           f"it had written before, T = {len(text)} text token{'' if len(text) == 1 else 's'}), "
           f"so S = {c.num_image_tokens} image + {len(text)} text tokens = "
           f"{tr['embed'].shape[0]}.")
S, D, N = tr["embed"].shape[0], c.embed_dim, c.num_patches
if stepper.first():
    st.latex(rf"\mathbb{{R}}^{{{c.img_size}\times{c.img_size}\times{c.in_chans}}}\to"
             rf"\mathbb{{R}}^{{{N}\times{c.in_chans * c.patch_size**2}}}\to"
             rf"\mathbb{{R}}^{{{S}\times{D}}}\xrightarrow{{\times {c.depth}\ \mathrm{{blocks}}}}"
             rf"\mathbb{{R}}^{{{S}\times{D}}}\to\text{{logits}}")
TRACED = {"patchify": "patches", "patch embedding": "patch_embed", "tokens": "embed",
          "LN1": "blocks.0.ln1", "Q, K, V": "blocks.0.attn.q", "scores": "blocks.0.attn.scores",
          "softmax": "blocks.0.attn.pattern", "A V": "blocks.0.attn.z",
          "W_O": "blocks.0.attn_out", "LN2": "blocks.0.ln2", "MLP up": "blocks.0.mlp.pre",
          "GELU": "blocks.0.mlp.post", "MLP down": "blocks.0.mlp_out",
          "final LN": "ln_final", "class head": "logits", "text head": "logits",
          "segmentation head": "seg_logits"}
mine, theirs = stage_rows(c, tr.n_text), {r["step"]: r for r in stage_rows(ref)}
steps, costs = [], []
for r in mine:
    t = TRACED.get(r["step"])
    traced = " × ".join(map(str, tr[t].shape)) if t in tr else "—"
    if r["step"] == "tokens":  # the image tokens: the first rows of z_0 (the text follows)
        traced = " × ".join(map(str, tr["embed"][:c.num_image_tokens].shape))
    elif r["step"] == "text tokens":
        traced = " × ".join(map(str, tr["embed"].shape))
    if r["step"] == "Q, K, V":
        traced = "3 × " + traced
    b16 = theirs.get(r["step"], {})
    macs = r["flops"] // 2 * r["times"]
    steps.append({"step": r["step"], "operation": r["op"], "equation": r["eq"],
                  "traced shape": traced, "× layers": r["times"], "parameters": f"{r['params']:,}"})
    costs.append({"step": r["step"], "MACs (all layers)": si(macs),
                  "FLOPs = 2 × MACs": si(2 * macs),
                  "ViT-B/16 shape": b16.get("shape", "—"),
                  "ViT-B/16 MACs": si(b16["flops"] // 2 * b16["times"]) if b16 else "—",
                  "ViT-B/16 FLOPs": si(b16["flops"] * b16["times"]) if b16 else "—"})
if stepper.show("shapes", 0):
    st.subheader(f"{models.plain_label(name)}, step by step")
    if fed:
        st.caption(fed)
    st.dataframe(steps, hide_index=True, key=keys.SHAPE_TABLE, height=38 + 35 * len(steps))
macs, ref_macs = total_macs(c, tr.n_text), total_macs(ref)
label = models.plain_label(name).split(" (")[0]
if stepper.show("shapes", 1):
    st.subheader("What each step costs, next to ViT-B/16")
    st.dataframe(costs, hide_index=True, key=keys.SHAPE_COST_TABLE, height=38 + 35 * len(costs))
    st.caption("MACs: multiply-adds of the matrix multiplications (m·k·n for an [m, k] @ [k, n] "
               "product), the convention of papers: the “17.6 GFLOPs” quoted for ViT-B/16 are "
               "17.6 G multiply-adds. FLOPs = 2 × MACs (a multiply and an add), the convention of "
               "torch.utils.flop_counter. Softmax, LayerNorm, GELU, pooling and additions are not "
               "counted. G = 10⁹, M = 10⁶, k = 10³.")
    m = st.columns(3)
    m[0].metric(f"{label} parameters", f"{total_params(c) / 1e6:.2f} M")
    m[1].metric(f"{label} multiply-adds (MACs)", si(macs))
    m[2].metric(f"{label} FLOPs (2 × MACs)", si(2 * macs))
    m = st.columns(3)
    m[0].metric("ViT-B/16 parameters", f"{total_params(ref) / 1e6:.1f} M")
    m[1].metric("ViT-B/16 multiply-adds (MACs)", si(ref_macs))
    m[2].metric("ViT-B/16 FLOPs (2 × MACs)", si(2 * ref_macs))

if stepper.show("shapes", 2):
    st.subheader("Parameters by component")
    groups: dict[str, int] = {}
    for pname, prm in model.named_parameters():
        part = pname.split(".")
        key = f"blocks: {part[2]}" if part[0] == "blocks" else part[0]
        key = key.replace("norm1", "LayerNorms").replace("norm2", "LayerNorms")
        groups[key] = groups.get(key, 0) + prm.numel()
    st.dataframe([{"component": k, "parameters": f"{v:,}", "share": f"{v / total_params(c):.1%}"}
                  for k, v in sorted(groups.items(), key=lambda kv: -kv[1])], hide_index=True,
                 key=keys.PARAM_TABLE)

if stepper.show("shapes", 3):
    st.subheader("Attention cost against patch size")
    sizes = sorted({s for s in (8, 14, 16, 28, 32, 56) if c.img_size % s == 0} | {c.patch_size})
    configs = {s: c.replace(patch_size=s, seg_classes=0) for s in sizes}  # what the chart draws
    st.plotly_chart(figures.line_chart(
        sizes, {"all matrix multiplications": [total_macs(k) / 1e9 for k in configs.values()],
                "QKᵀ and AV only": [total_macs(k) * attention_share(k) / 1e9
                                    for k in configs.values()]},
        f"{label} at {c.img_size}×{c.img_size} with other patch sizes (no text, no seg head)",
        "patch size P", "G multiply-adds (MACs)"), key=keys.COST_VS_PATCH)
    smallest = min(sizes)
    other = (f"; at P = {smallest} it is {attention_share(configs[smallest]):.1%}"
             if smallest != c.patch_size else "")
    st.info(f"What to notice: in the chart, at P = {c.patch_size} the quadratic part (QKᵀ and "
            f"AV) is {attention_share(configs[c.patch_size]):.1%} of the multiply-adds{other}. "
            f"Shapes never change inside the stack: every block maps S×D to S×D.")
