"""Token vectors summarised: one token's mean and spread, and all patch tokens as colours."""

from __future__ import annotations

import torch


def token_stats(x: torch.Tensor) -> dict[str, float]:
    """Mean and (biased, as LayerNorm uses) standard deviation of one token vector."""
    x = x.double()
    mu = x.mean()
    return {"mean": float(mu), "std": float(((x - mu) ** 2).mean().sqrt())}


def pca_rgb(tokens: torch.Tensor, grid: int) -> torch.Tensor:
    """First three principal components of the patch tokens as colours: [N, D] -> [g, g, 3].

    Patches the model represents alike get alike colours (each component scaled to [0, 1]).
    """
    x = tokens.double() - tokens.double().mean(0, keepdim=True)
    _, _, vh = torch.linalg.svd(x, full_matrices=False)
    k = min(3, vh.shape[0])
    proj = x @ vh[:k].T  # [N, k]
    if k < 3:
        proj = torch.cat([proj, torch.zeros(proj.shape[0], 3 - k, dtype=proj.dtype)], 1)
    lo, hi = proj.amin(0), proj.amax(0)
    return ((proj - lo) / (hi - lo).clamp_min(1e-12)).reshape(grid, grid, 3).float()


def layernorm_steps(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                    eps: float) -> dict:
    """LayerNorm of one token, step by step, in float64: the token's own mean and (biased)
    std, the normalised vector (x - μ) / √(σ² + ε) with its mean and std, and the output
    γ ⊙ normalised + β with its mean and std. `identity` says whether γ is all 1 and β all 0
    (LN's learned scale and shift then change nothing); `gamma_mean`, `beta_mean` their means."""
    x, w, b = x.double(), weight.double(), bias.double()
    mu = x.mean()
    var = ((x - mu) ** 2).mean()
    xhat = (x - mu) / torch.sqrt(var + eps)
    out = w * xhat + b
    return {"before": token_stats(x), "normalised": token_stats(xhat),
            "after": token_stats(out), "out": out,
            "identity": bool((weight == 1).all() and (bias == 0).all()),
            "gamma_mean": float(w.mean()), "beta_mean": float(b.mean())}


def sublayer_norms(trace) -> dict[str, torch.Tensor]:
    """The norm of what each block's attention and MLP add to every token, {"attn": [L, S],
    "mlp": [L, S]} (`Trace.sublayer_norms`: a lean trace recomputes each block's attention
    half, one block at a time, and keeps nothing)."""
    return trace.sublayer_norms()


def residual_stream(trace, token: int, norms: dict | None = None) -> dict:
    """One token's residual stream through the blocks, in forward order.

    Args:
        norms: `sublayer_norms(trace)` if already computed (it recomputes every block's
            attention half).
    Returns:
        {"labels": ["embed", "block 0", ...], "resid": norms of the token at the embedding and
         after each block (L + 1 values), "attn" / "mlp": norms of what each block's attention
         and MLP add (L values each)}.
    """
    L = trace.config.depth
    norms = sublayer_norms(trace) if norms is None else norms
    return {
        "labels": ["embed"] + [f"block {b}" for b in range(L)],
        "resid": [float(trace["embed"][token].norm())]
        + [float(trace[f"blocks.{b}.resid_post"][token].norm()) for b in range(L)],
        "attn": [float(v) for v in norms["attn"][:, token]],
        "mlp": [float(v) for v in norms["mlp"][:, token]],
    }


def mlp_units(trace, layer: int, token: int, k: int) -> dict:
    """One token's MLP in block `layer`: its hidden inputs U and outputs GELU(U) (numpy), how
    many units are on (U > 0) of F, U's range, the k largest outputs ("top_values", "top_units")
    and the norms of the token before the MLP ("mid"), of what the MLP adds ("out") and after
    ("post")."""
    u = trace[f"blocks.{layer}.mlp.pre"][token]
    g = trace[f"blocks.{layer}.mlp.post"][token]
    top = torch.topk(g, min(k, g.numel()))
    return {"u": u.numpy(), "gelu": g.numpy(), "on": int((u > 0).sum()), "F": int(u.numel()),
            "lo": float(u.min()), "hi": float(u.max()),
            "top_values": top.values.numpy(), "top_units": top.indices.tolist(),
            "mid": float(trace[f"blocks.{layer}.resid_mid"][token].norm()),
            "out": float(trace[f"blocks.{layer}.mlp_out"][token].norm()),
            "post": float(trace[f"blocks.{layer}.resid_post"][token].norm())}


def gelu_curve(lo: float, hi: float, n: int = 400) -> tuple[torch.Tensor, torch.Tensor]:
    """GELU drawn from lo - 0.5 to hi + 0.5: (inputs [n], outputs [n])."""
    xs = torch.linspace(lo - 0.5, hi + 0.5, n)
    return xs, torch.nn.functional.gelu(xs)


def sublayer_totals(attn, mlp) -> dict:
    """What attention and the MLP add to one token over the blocks (`residual_stream`'s "attn"
    and "mlp" norms): {"attn", "mlp": their sums, "mlp_larger": the blocks where the MLP's
    addition is the larger}."""
    a, m = [float(v) for v in attn], [float(v) for v in mlp]
    return {"attn": sum(a), "mlp": sum(m),
            "mlp_larger": sum(y > x for x, y in zip(a, m, strict=True))}
