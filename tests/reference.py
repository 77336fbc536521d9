"""An independent float64 implementation of the notes' equations, used only by the tests.

Written from the equations, not from vit_core.model: explicit loops over heads, LayerNorm from its
definition, softmax from exp, GELU from erf. It reads the weights of a vit_core ViT by timm name.
"""

import math

import torch


def layer_norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)  # biased variance, as LayerNorm defines it
    return (x - mu) / torch.sqrt(var + eps) * gamma + beta


def softmax(s):
    s = s - s.max(-1, keepdim=True).values
    e = torch.exp(s)
    return e / e.sum(-1, keepdim=True)


def gelu(u):
    return u * 0.5 * (1.0 + torch.erf(u / math.sqrt(2.0)))  # x * Phi(x)


def block(sd: dict, prefix: str, X, num_heads: int, M, eps: float):
    """One pre-LN block on X [S, D] in float64; returns a dict of intermediates."""
    g = {k[len(prefix):]: v.double() for k, v in sd.items() if k.startswith(prefix)}
    S, D = X.shape
    dk = D // num_heads
    Xt = layer_norm(X, g["norm1.weight"], g["norm1.bias"], eps)  # X~ = LN(X)
    W, b = g["attn.qkv.weight"], g["attn.qkv.bias"]  # [3D, D]
    W_Q, W_K, W_V = W[:D].T, W[D:2 * D].T, W[2 * D:].T  # each [D, D]
    Q, K, V = Xt @ W_Q + b[:D], Xt @ W_K + b[D:2 * D], Xt @ W_V + b[2 * D:]
    heads, patterns = [], []
    for h in range(num_heads):
        cols = slice(h * dk, (h + 1) * dk)
        Sc = Q[:, cols] @ K[:, cols].T / math.sqrt(dk) + M  # [S, S]
        A = softmax(Sc)
        patterns.append(A)
        heads.append(A @ V[:, cols])  # [S, d_k]
    O = torch.cat(heads, dim=1) @ g["attn.proj.weight"].T + g["attn.proj.bias"]
    X1 = X + O  # X' = X + O
    Xh = layer_norm(X1, g["norm2.weight"], g["norm2.bias"], eps)
    U = Xh @ g["mlp.fc1.weight"].T + g["mlp.fc1.bias"]
    Mo = gelu(U) @ g["mlp.fc2.weight"].T + g["mlp.fc2.bias"]
    return {"ln1": Xt, "pattern": torch.stack(patterns), "attn_out": O, "resid_mid": X1,
            "mlp_pre": U, "mlp_out": Mo, "resid_post": X1 + Mo}


def forward(model, pixels, text_ids=None, M=None):
    """Whole-model float64 reference: returns (block outputs list, logits)."""
    c = model.config
    sd = {k: v.detach().double() for k, v in model.state_dict().items()}
    P, D = c.patch_size, c.embed_dim
    img = pixels[0].double()
    rows = []
    for i in range(0, c.img_size, P):  # patches in row-major scan order
        for j in range(0, c.img_size, P):
            rows.append(img[:, i:i + P, j:j + P].reshape(-1))  # (c, p, p) order
    Xp = torch.stack(rows)  # [N, C P^2]
    E = sd["patch_embed.proj.weight"].reshape(D, -1)  # [D, C P^2]
    Z = Xp @ E.T + sd["patch_embed.proj.bias"]
    if c.class_token:
        Z = torch.cat([sd["cls_token"][0], Z])
    Z = Z + sd["pos_embed"][0]
    if text_ids is not None:
        T = len(text_ids)
        Z = torch.cat([Z, sd["text_embed.weight"][text_ids] + sd["text_pos_embed"][0, :T]])
    S = Z.shape[0]
    M = torch.zeros(S, S, dtype=torch.float64) if M is None else M.double()
    outs = []
    for layer in range(c.depth):
        Z = block(sd, f"blocks.{layer}.", Z, c.num_heads, M, c.norm_eps)["resid_post"]
        outs.append(Z)
    Xf = layer_norm(Z, sd["norm.weight"], sd["norm.bias"], c.norm_eps)
    if text_ids is not None:
        return outs, Xf[c.num_image_tokens:] @ sd["text_embed.weight"].T  # tied head
    return outs, Xf[0] @ sd["head.weight"].T + sd["head.bias"]
