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


def stage_rows(c: ViTConfig, n_text: int = 0) -> list[dict]:
    """One row per step of the forward pass (one block shown, with its count × L in `times`)."""
    N, D, H, dk, F, L = c.num_patches, c.embed_dim, c.num_heads, c.head_dim, c.mlp_hidden, c.depth
    S = c.num_image_tokens + n_text
    CPP = c.in_chans * c.patch_size**2
    cls = "".join(f"+{n} " for n in c.prefix_names)
    first = "; ".join(f"x_{n.lower()}" for n in c.prefix_names)
    rows = [
        dict(step="patchify", op="cut into P×P patches, flatten", eq="X_p = U(X_img)",
             shape=f"{N} × {CPP}", params=0, flops=0, times=1),
        dict(step="patch embedding", op="linear projection", eq="X_p W_E + b",
             shape=f"{N} × {D}", params=CPP * D + D, flops=_mm(N, CPP, D), times=1),
        dict(step="tokens", op=f"{cls}+ positions" + (", the image tokens" if c.has_text else ""),
             eq=(f"z_0{',img' if c.has_text else ''} = [{first + '; ' if first else ''}X_p W_E]"
                 " + E_pos"), shape=f"{c.num_image_tokens} × {D}",
             params=c.num_prefix_tokens * D + c.num_image_tokens * D, flops=0, times=1),
    ]
    if c.has_text:  # its own parameters: the word embeddings E (V x D), the text positions P_txt
        rows.append(dict(
            step="text tokens", op=f"append T = {n_text} text token{'' if n_text == 1 else 's'}:"
            f" word embedding E ({c.vocab_size} × {D}) + text position P_txt "
            f"({c.max_text_len} × {D})",
            eq="z_0 = [z_0,img; E[t_1..t_T] + P_txt]", shape=f"{S} × {D}",
            params=c.vocab_size * D + c.max_text_len * D, flops=0, times=1))
    rows += [
        dict(step="LN1", op="LayerNorm per token", eq="LN(X)", shape=f"{S} × {D}",
             params=2 * D, flops=0, times=L),
        dict(step="Q, K, V", op="one linear layer, split into heads", eq="X W_QKV",
             shape=f"3 × {H} × {S} × {dk}", params=D * 3 * D + (3 * D if c.qkv_bias else 0),
             flops=_mm(S, D, 3 * D), times=L),
        dict(step="scores", op="scaled dot products (+ mask)", eq="Q Kᵀ / √d_k + M",
             shape=f"{H} × {S} × {S}", params=0, flops=H * _mm(S, dk, S), times=L),
        dict(step="softmax", op="row-wise softmax", eq="A = softmax(scores)",
             shape=f"{H} × {S} × {S}", params=0, flops=0, times=L),
        dict(step="A V", op="weighted sum of values", eq="A V", shape=f"{H} × {S} × {dk}",
             params=0, flops=H * _mm(S, S, dk), times=L),
        dict(step="W_O", op="concat heads, project", eq="concat(heads) W_O + b",
             shape=f"{S} × {D}", params=D * D + D, flops=_mm(S, D, D), times=L),
        dict(step="residual", op="add", eq="X' = X + attn_out", shape=f"{S} × {D}",
             params=0, flops=0, times=L),
        dict(step="LN2", op="LayerNorm per token", eq="LN(X')", shape=f"{S} × {D}",
             params=2 * D, flops=0, times=L),
        dict(step="MLP up", op="linear to d_ff", eq="U = X W_1 + b_1", shape=f"{S} × {F}",
             params=D * F + F, flops=_mm(S, D, F), times=L),
        dict(step="GELU", op="non-linearity", eq="GELU(U)", shape=f"{S} × {F}", params=0,
             flops=0, times=L),
        dict(step="MLP down", op="linear back to D", eq="G W_2 + b_2", shape=f"{S} × {D}",
             params=F * D + D, flops=_mm(S, F, D), times=L),
        dict(step="residual", op="add", eq="X_out = X' + mlp_out", shape=f"{S} × {D}",
             params=0, flops=0, times=L),
        dict(step="final LN", op="none: fc_norm after pooling instead" if c.fc_norm else
             "LayerNorm per token", eq="X_f = X_L" if c.fc_norm else "X_f = LN_f(X_L)",
             shape=f"{S} × {D}", params=0 if c.fc_norm else 2 * D, flops=0, times=1),
    ]
    if c.num_classes:
        K, heads = c.num_classes, 2 if c.dist_token and c.global_pool != "avg" else 1
        if c.global_pool == "avg":
            op = "mean of the patch tokens" + (", fc_norm" if c.fc_norm else "") + " -> K logits"
            eq = ("LN_fc(mean X_f,p) W_c + b_c" if c.fc_norm else "mean(X_f,p) W_c + b_c")
        elif heads == 2:
            op, eq = "CLS and DIST, two heads, averaged", "½(x_cls W_c + b_c + x_dist W_d + b_d)"
        else:
            op, eq = "CLS -> K logits", "x_cls W_c + b_c"
        rows.append(dict(step="class head", op=op, eq=eq, shape=f"{K}",
                         params=(D * K + K) * (2 if c.dist_token else 1)
                         + (2 * D if c.fc_norm else 0),
                         flops=heads * _mm(1, D, K), times=1))
    if c.has_text:
        tied = c.tie_text_head
        rows.append(dict(step="text head", op="text positions -> V logits",
                         eq="X_f,txt Eᵀ" if tied else "X_f,txt W_vocab + b",
                         shape=f"{n_text} × {c.vocab_size}",
                         params=0 if tied else D * c.vocab_size + c.vocab_size,
                         flops=_mm(n_text, D, c.vocab_size), times=1))
    if c.seg_classes:
        r2 = c.seg_upsample**2
        rows.append(dict(step="segmentation head", op="each patch token -> r² cells × classes",
                         eq="Z_patches W_seg + b", shape=f"{N} × {c.seg_classes * r2}",
                         params=D * c.seg_classes * r2 + c.seg_classes * r2,
                         flops=_mm(N, D, c.seg_classes * r2), times=1))
    return rows


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
