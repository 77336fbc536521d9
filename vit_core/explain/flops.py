"""The shape trace as a table: each step's operation, equation, shape, parameters and cost.

Cost counts the matrix multiplications, which dominate a transformer, in two conventions:
multiply-adds (MACs: m·k·n for an [m, k] @ [k, n] product, what papers quote, e.g. "17.6
GFLOPs" for ViT-B/16) and FLOPs = 2 × MACs (one multiply and one add each, what torch's FLOP
counter counts: 35.1 G for ViT-B/16). Softmax, LayerNorm, GELU, pooling and additions are
O(S·D) each and are listed with 0.
"""

from __future__ import annotations

from ..config import ViTConfig


def _mm(m: int, k: int, n: int) -> int:
    return 2 * m * k * n


def _row(step: str, op: str, eq: str, shape: str, params: int = 0, flops: int = 0,
         times: int = 1) -> dict:
    return dict(step=step, op=op, eq=eq, shape=shape, params=params, flops=flops, times=times)


def stage_rows(c: ViTConfig, n_text: int = 0) -> list[dict]:
    """One row per step of the forward pass (one block shown, with its count × L in `times`)."""
    S = c.num_image_tokens + n_text
    return [*_input_rows(c, n_text, S), *_block_rows(c, S), _final_ln_row(c, S),
            *_head_rows(c, n_text)]


def _input_rows(c: ViTConfig, n_text: int, S: int) -> list[dict]:
    """The image cut into patches, embedded, with CLS / DIST and positions; a captioner's text."""
    N, D = c.num_patches, c.embed_dim
    CPP = c.in_chans * c.patch_size**2
    cls = "".join(f"+{n} " for n in c.prefix_names)
    first = "; ".join(f"x_{n.lower()}" for n in c.prefix_names)
    rows = [
        _row("patchify", "cut into P×P patches, flatten", "X_p = U(X_img)", f"{N} × {CPP}"),
        _row("patch embedding", "linear projection", "X_p W_E + b", f"{N} × {D}",
             CPP * D + D, _mm(N, CPP, D)),
        _row("tokens", f"{cls}+ positions" + (", the image tokens" if c.has_text else ""),
             f"z_0{',img' if c.has_text else ''} = [{first + '; ' if first else ''}X_p W_E]"
             " + E_pos", f"{c.num_image_tokens} × {D}",
             c.num_prefix_tokens * D + c.num_image_tokens * D),
    ]
    if c.has_text:  # its own parameters: the word embeddings E (V x D), the text positions P_txt
        rows.append(_row(
            "text tokens", f"append T = {n_text} text token{'' if n_text == 1 else 's'}: word "
            f"embedding E ({c.vocab_size} × {D}) + text position P_txt ({c.max_text_len} × {D})",
            "z_0 = [z_0,img; E[t_1..t_T] + P_txt]", f"{S} × {D}",
            c.vocab_size * D + c.max_text_len * D))
    return rows


def _block_rows(c: ViTConfig, S: int) -> list[dict]:
    """The steps of one block, each run L times."""
    D, H, dk, F, L = c.embed_dim, c.num_heads, c.head_dim, c.mlp_hidden, c.depth
    rows = [
        ("LN1", "LayerNorm per token", "LN(X)", f"{S} × {D}", 2 * D, 0),
        ("Q, K, V", "one linear layer, split into heads", "X W_QKV", f"3 × {H} × {S} × {dk}",
         D * 3 * D + (3 * D if c.qkv_bias else 0), _mm(S, D, 3 * D)),
        ("scores", "scaled dot products (+ mask)", "Q Kᵀ / √d_k + M", f"{H} × {S} × {S}", 0,
         H * _mm(S, dk, S)),
        ("softmax", "row-wise softmax", "A = softmax(scores)", f"{H} × {S} × {S}", 0, 0),
        ("A V", "weighted sum of values", "A V", f"{H} × {S} × {dk}", 0, H * _mm(S, S, dk)),
        ("W_O", "concat heads, project", "concat(heads) W_O + b", f"{S} × {D}", D * D + D,
         _mm(S, D, D)),
        ("residual", "add", "X' = X + attn_out", f"{S} × {D}", 0, 0),
        ("LN2", "LayerNorm per token", "LN(X')", f"{S} × {D}", 2 * D, 0),
        ("MLP up", "linear to d_ff", "U = X W_1 + b_1", f"{S} × {F}", D * F + F, _mm(S, D, F)),
        ("GELU", "non-linearity", "GELU(U)", f"{S} × {F}", 0, 0),
        ("MLP down", "linear back to D", "G W_2 + b_2", f"{S} × {D}", F * D + D, _mm(S, F, D)),
        ("residual", "add", "X_out = X' + mlp_out", f"{S} × {D}", 0, 0),
    ]
    return [_row(*r, times=L) for r in rows]


def _final_ln_row(c: ViTConfig, S: int) -> dict:
    D = c.embed_dim
    if c.fc_norm:
        return _row("final LN", "none: fc_norm after pooling instead", "X_f = X_L", f"{S} × {D}")
    return _row("final LN", "LayerNorm per token", "X_f = LN_f(X_L)", f"{S} × {D}", 2 * D)


def _class_head(c: ViTConfig) -> tuple[str, str]:
    """The class head's operation and equation."""
    if c.global_pool == "avg":
        op = "mean of the patch tokens" + (", fc_norm" if c.fc_norm else "") + " -> K logits"
        return op, "LN_fc(mean X_f,p) W_c + b_c" if c.fc_norm else "mean(X_f,p) W_c + b_c"
    if c.dist_token:
        return "CLS and DIST, two heads, averaged", "½(x_cls W_c + b_c + x_dist W_d + b_d)"
    return "CLS -> K logits", "x_cls W_c + b_c"


def _head_rows(c: ViTConfig, n_text: int) -> list[dict]:
    """What reads the final tokens: a class head, the text head, a segmentation head."""
    D, V, rows = c.embed_dim, c.vocab_size, []
    if c.num_classes:
        K, heads = c.num_classes, 2 if c.dist_token and c.global_pool != "avg" else 1
        rows.append(_row("class head", *_class_head(c), f"{K}",
                         (D * K + K) * (2 if c.dist_token else 1) + (2 * D if c.fc_norm else 0),
                         heads * _mm(1, D, K)))
    if c.has_text:
        tied = c.tie_text_head
        rows.append(_row("text head", "text positions -> V logits",
                         "X_f,txt Eᵀ" if tied else "X_f,txt W_vocab + b", f"{n_text} × {V}",
                         0 if tied else D * V + V, _mm(n_text, D, V)))
    if c.seg_classes:
        out = c.seg_classes * c.seg_upsample**2
        rows.append(_row("segmentation head", "each patch token -> r² cells × classes",
                         "Z_patches W_seg + b", f"{c.num_patches} × {out}", D * out + out,
                         _mm(c.num_patches, D, out)))
    return rows


# The trace's tensor behind each row's shape (block 0's for the block's rows)
TRACED = {"patchify": "patches", "patch embedding": "patch_embed", "tokens": "embed",
          "LN1": "blocks.0.ln1", "Q, K, V": "blocks.0.attn.q", "scores": "blocks.0.attn.scores",
          "softmax": "blocks.0.attn.pattern", "A V": "blocks.0.attn.z",
          "W_O": "blocks.0.attn_out", "LN2": "blocks.0.ln2", "MLP up": "blocks.0.mlp.pre",
          "GELU": "blocks.0.mlp.post", "MLP down": "blocks.0.mlp_out",
          "final LN": "ln_final", "class head": "logits", "text head": "logits",
          "segmentation head": "seg_logits"}
RESIDUALS = ("blocks.0.resid_mid", "blocks.0.resid_post")  # the two rows named "residual"


def traced_shapes(tr) -> list[str]:
    """Per row of stage_rows(tr.config, tr.n_text): the shape of the trace's tensor behind it
    ("a × b", as the rows write theirs), or "—" where the trace holds none. Q, K, V is three
    tensors of q's shape; the image tokens are the first rows of `embed`, the text tokens all of
    it."""
    c, shapes, residuals = tr.config, [], iter(RESIDUALS)
    for r in stage_rows(c, tr.n_text):
        t = next(residuals) if r["step"] == "residual" else TRACED.get(r["step"])
        shape = tuple(tr.shape(t)) if t in tr else None
        if r["step"] == "tokens":  # the image tokens: the first rows of z_0 (the text follows)
            shape = (c.num_image_tokens, *tr.shape("embed")[1:])
        elif r["step"] == "text tokens":
            shape = tuple(tr.shape("embed"))
        elif r["step"] == "Q, K, V" and shape:
            shape = (3, *shape)
        shapes.append(" × ".join(map(str, shape)) if shape else "—")
    return shapes


def params_by_component(model) -> dict[str, int]:
    """The model's parameters counted by component, largest first: a top-level module's name
    ("patch_embed", "head", ...) or "blocks: attn" / "blocks: mlp" / "blocks: LayerNorms" for a
    block's parts, summed over the blocks."""
    groups: dict[str, int] = {}
    for name, p in model.named_parameters():
        part = name.split(".")
        key = f"blocks: {part[2]}" if part[0] == "blocks" else part[0]
        key = key.replace("norm1", "LayerNorms").replace("norm2", "LayerNorms")
        groups[key] = groups.get(key, 0) + p.numel()
    return dict(sorted(groups.items(), key=lambda kv: -kv[1]))


def total_flops(c: ViTConfig, n_text: int = 0) -> int:
    """FLOPs of one forward pass: 2 per multiply-add (torch.utils.flop_counter's convention)."""
    return sum(r["flops"] * r["times"] for r in stage_rows(c, n_text))


def total_macs(c: ViTConfig, n_text: int = 0) -> int:
    """Multiply-adds of one forward pass (the convention of the literature's "GFLOPs")."""
    return total_flops(c, n_text) // 2


def total_params(c: ViTConfig) -> int:
    return sum(r["params"] * r["times"] for r in stage_rows(c))


def attention_share(c: ViTConfig, n_text: int = 0) -> float:
    """The share of all counted FLOPs spent on Q Kᵀ and A V (the part quadratic in S)."""
    rows = stage_rows(c, n_text)
    quad = sum(r["flops"] * r["times"] for r in rows if r["step"] in ("scores", "A V"))
    return quad / max(1, total_flops(c, n_text))


def si(n: float) -> str:
    """A count with an SI prefix and 3 significant figures: 35127656448 -> '35.1 G'."""
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {prefix}"
    return f"{n:.3g}"
