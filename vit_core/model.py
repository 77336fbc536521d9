"""The Vision Transformer, written out so that forward reads like the notes' equations.

Pieces in order of use: Attention -> Mlp -> Block -> PatchEmbed -> ViT. Parameter names are
timm's, so a classifier's state dict loads into timm's VisionTransformer with strict=True.
Every intermediate passes through a HookPoint; `run_trace` (trace.py) collects them by name, and
`run_with_hooks` (hooked.py) lets a function replace any of them: experiments (heads off,
positions left out, another attention mask, local windows) are such hooks, so forward holds only
what the model itself computes, with its own mask (a captioner's causal or prefix mask).

Symbols: B batch, C channels, P patch size, N patches, D width, H heads, d_k = D/H,
S = N (+1 for CLS) (+T text tokens), d_ff MLP width, K classes, V vocabulary size.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .config import ViTConfig
from .hooked import with_mask
from .hooks import HookPoint, current_writes, name_hook_points, wanted, writes, writing
from .masks import is_own, own_mask
from .patches import patchify


class Attention(nn.Module):
    """Multi-head self-attention: softmax(Q K^T / sqrt(d_k) + M) V, heads concatenated, then W_O."""

    def __init__(self, c: ViTConfig):
        super().__init__()
        self.num_heads = c.num_heads
        self.scale = c.head_dim**-0.5
        self.qkv = nn.Linear(c.embed_dim, 3 * c.embed_dim, bias=c.qkv_bias)  # [W_Q | W_K | W_V]
        self.proj = nn.Linear(c.embed_dim, c.embed_dim)  # W_O
        self.hook_q = HookPoint()  # [batch, head, pos, d_k]
        self.hook_k = HookPoint()  # [batch, head, pos, d_k]
        self.hook_v = HookPoint()  # [batch, head, pos, d_k]
        self.hook_scores = HookPoint()  # [batch, head, query_pos, key_pos], scaled + masked
        self.hook_pattern = HookPoint()  # [batch, head, query_pos, key_pos], rows sum to 1
        self.hook_z = HookPoint()  # [batch, head, pos, d_k], each head's output A V

    def forward(self, x, mask=None, pattern_only: bool = False):
        """(B, S, D) -> (B, S, D); with pattern_only, the pattern A (B, H, S, S) and no more
        (what a lean trace recomputes for attention summaries)."""
        B, S, D = x.shape
        H = self.num_heads
        # one matmul gives Q, K and V for all heads; split D into H heads of d_k
        qkv = self.qkv(x).view(B, S, 3, H, D // H).permute(2, 0, 3, 1, 4)  # (3, B, H, S, d_k)
        q, k, v = qkv[0], qkv[1], qkv[2]
        inside = (self.hook_q, self.hook_k, self.hook_v, self.hook_scores, self.hook_pattern)
        written = writes(*inside)  # a hook replaces Q, K, V, the scores or A
        if pattern_only or written or wanted(*inside):
            q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)
            scores = (q @ k.transpose(-2, -1)) * self.scale  # (B, H, S, S)  Q K^T / sqrt(d_k)
            if mask is not None:
                scores = scores + mask  # + M: -inf where a query may not see a key
            scores = self.hook_scores(scores)
            pattern = self.hook_pattern(scores.softmax(dim=-1))  # (B, H, S, S)  A
            if pattern_only:
                return pattern
        if written:
            z = pattern @ v  # (B, H, S, d_k)  A V from the written tensors
        else:
            # softmax(Q K^T / sqrt(d_k) + M) V by torch's fused kernel, which never forms A, so
            # a pass that reads no pattern (a plain forward, a lean trace) skips it. A pass that
            # only reads computes z this same way, so a lean trace's kept residual stream and
            # the block internals it recomputes are bit for bit those of a pass that keeps all.
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale)
        z = self.hook_z(z)  # (B, H, S, d_k)  each head's output
        z = z.transpose(1, 2).reshape(B, S, D)  # (B, S, D)  concat(head_1, ..., head_H)
        return self.proj(z)  # (B, S, D)  ... W_O


class Mlp(nn.Module):
    """Per token: GELU(x W_1 + b_1) W_2 + b_2, with exact (erf) GELU as in ViT."""

    def __init__(self, c: ViTConfig):
        super().__init__()
        self.fc1 = nn.Linear(c.embed_dim, c.mlp_hidden)
        self.fc2 = nn.Linear(c.mlp_hidden, c.embed_dim)
        self.hook_pre = HookPoint()  # [batch, pos, d_ff]  U = x W_1 + b_1
        self.hook_post = HookPoint()  # [batch, pos, d_ff]  G = GELU(U)

    def forward(self, x):
        u = self.hook_pre(self.fc1(x))  # (B, S, d_ff)
        g = self.hook_post(F.gelu(u))  # (B, S, d_ff)
        return self.fc2(g)  # (B, S, D)


class Block(nn.Module):
    """Pre-LayerNorm transformer block: X' = X + MSA(LN(X)); X_out = X' + MLP(LN(X'))."""

    def __init__(self, c: ViTConfig):
        super().__init__()
        self.norm1 = nn.LayerNorm(c.embed_dim, eps=c.norm_eps)
        self.attn = Attention(c)
        self.norm2 = nn.LayerNorm(c.embed_dim, eps=c.norm_eps)
        self.mlp = Mlp(c)
        self.hook_resid_pre = HookPoint()  # [batch, pos, D], the block's input X
        self.hook_ln1 = HookPoint()  # [batch, pos, D]
        self.hook_attn_out = HookPoint()  # [batch, pos, D]
        self.hook_resid_mid = HookPoint()  # [batch, pos, D]
        self.hook_ln2 = HookPoint()  # [batch, pos, D]
        self.hook_mlp_out = HookPoint()  # [batch, pos, D]
        self.hook_resid_post = HookPoint()  # [batch, pos, D]

    def forward(self, x, mask=None):
        x = self.hook_resid_pre(x)  # X: embed for block 0, else the previous block's output
        attn_out = self.hook_attn_out(self.attn(self.hook_ln1(self.norm1(x)), mask))
        x = self.hook_resid_mid(x + attn_out)  # X' = X + MSA(LN(X))
        mlp_out = self.hook_mlp_out(self.mlp(self.hook_ln2(self.norm2(x))))
        return self.hook_resid_post(x + mlp_out)  # X_out = X' + MLP(LN(X'))


class PatchEmbed(nn.Module):
    """Cut the image into P x P patches, flatten each, and project: x_p E + b (a stride-P conv)."""

    def __init__(self, c: ViTConfig):
        super().__init__()
        self.proj = nn.Conv2d(c.in_chans, c.embed_dim, c.patch_size, c.patch_size)  # timm name

    def forward(self, patches):
        W_E = self.proj.weight.flatten(1)  # (D, C*P*P), the (c, p, p) order of patchify
        return patches @ W_E.T + self.proj.bias  # (B, N, D)


class ViT(nn.Module):
    """A ViT classifier, or (vocab_size > 0) the single-stream image -> text model.

    Image tokens come first ([CLS] if used, then N patches, with learned positions), then the
    text tokens (token embedding + 1D text positions): one sequence of S = N (+1) + T tokens.
    """

    def __init__(self, config: ViTConfig):
        super().__init__()
        c = self.config = config
        D = c.embed_dim
        self.patch_embed = PatchEmbed(c)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, D)) if c.class_token else None
        self.dist_token = nn.Parameter(torch.zeros(1, 1, D)) if c.dist_token else None  # DeiT
        self.pos_embed = nn.Parameter(torch.zeros(1, c.num_image_tokens, D))  # E_pos
        if c.has_text:
            self.text_embed = nn.Embedding(c.vocab_size, D)  # E, V x D
            self.text_pos_embed = nn.Parameter(torch.zeros(1, c.max_text_len, D))  # P_txt
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.depth))
        self.norm = nn.LayerNorm(D, eps=c.norm_eps) if not c.fc_norm else nn.Identity()
        self.fc_norm = nn.LayerNorm(D, eps=c.norm_eps) if c.fc_norm else None
        self.head = nn.Linear(D, c.num_classes) if c.num_classes else None
        self.head_dist = nn.Linear(D, c.num_classes) if c.num_classes and c.dist_token else None
        self.text_head = nn.Linear(D, c.vocab_size) if c.has_text and not c.tie_text_head else None
        r = c.seg_upsample
        self.seg_head = nn.Linear(D, c.seg_classes * r * r) if c.seg_classes else None

        self.hook_patches = HookPoint()  # [batch, N, C*P*P], flattened in (c, p, p) order
        self.hook_patch_embed = HookPoint()  # [batch, N, D]
        self.hook_embed = HookPoint()  # [batch, S, D], block 0 input
        self.hook_ln_final = HookPoint()  # [batch, S, D]
        self.hook_logits = HookPoint()  # [batch, K] or [batch, T, V]
        self.hook_seg_logits = HookPoint()  # [batch, N, seg_classes, r, r]
        name_hook_points(self)  # gives every HookPoint its trace name
        self.init_weights()

    def init_weights(self):
        """timm-style init: truncated normal(0.02) weights, zero biases, unit LayerNorms."""
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d, nn.Embedding)):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)
        for p in (self.pos_embed, getattr(self, "text_pos_embed", None), self.cls_token,
                  self.dist_token):
            if p is not None:
                nn.init.trunc_normal_(p, std=0.02)

    def embed(self, pixels, text_ids=None):
        """z_0 = [x_cls; x_p E] + E_pos, then (text) concat(E[t] + P_txt): (B, S, D)."""
        B, C, Hpx, Wpx = pixels.shape
        size = self.config.img_size
        if (C, Hpx, Wpx) != (self.config.in_chans, size, size):
            raise ValueError(f"This model reads {self.config.in_chans}x{size}x{size} images, "
                             f"got {C}x{Hpx}x{Wpx}; preprocess the image first.")
        patches = self.hook_patches(patchify(pixels, self.config.patch_size))  # (B, N, C*P*P)
        x = self.hook_patch_embed(self.patch_embed(patches))  # (B, N, D)  x_p E + b
        prefix = [t.expand(B, -1, -1) for t in (self.cls_token, self.dist_token) if t is not None]
        if prefix:
            x = torch.cat([*prefix, x], dim=1)  # (B, N+1, D), or N+2 with DeiT's [DIST]
        x = x + self.pos_embed  # + E_pos
        if text_ids is not None:
            T = text_ids.shape[1]
            if T > self.config.max_text_len:
                raise ValueError(f"At most {self.config.max_text_len} text tokens fit, got {T}.")
            t = self.text_embed(text_ids) + self.text_pos_embed[:, :T]  # (B, T, D)
            x = torch.cat([x, t], dim=1)  # (B, S, D)  image tokens first, then text
        return self.hook_embed(x)

    def forward(self, pixels, text_ids=None, mask=None):
        """Args:
            pixels: (B, C, H, W) normalised images.
            text_ids: (B, T) token ids (text model only), starting with [SOS].
            mask: None, the model's own mask (config.default_mask); or, as a convenience,
                another one: "full" | "causal" | "prefix" | "window:M" | "window:M:shifted",
                an additive (S, S) tensor or a per-block (L, S, S) one (block l adds mask[l]),
                run as written hooks on every block's scores (hooked.mask_hooks), around the
                hooks already written.
        Returns:
            class logits (B, K), or text logits (B, T, V) for the text model.
        """
        if text_ids is not None and not self.config.has_text:
            raise ValueError("This model has no text stream; it cannot read text.")
        n_text = 0 if text_ids is None else text_ids.shape[1]
        if mask is not None and not is_own(self.config, mask, n_text):
            with writing(with_mask(self, mask, n_text, current_writes())):
                return self.forward(pixels, text_ids)
        mask = own_mask(self.config, n_text)  # (S, S): a captioner's causal/prefix, or None
        if mask is not None:
            mask = mask.to(pixels.device, pixels.dtype)
        x = self.embed(pixels, text_ids)  # (B, S, D)
        for block in self.blocks:
            x = block(x, mask)
        x = self.hook_ln_final(self.norm(x))  # (B, S, D)  X_f = LN_f(X_L)
        n_img, n_pre = self.config.num_image_tokens, self.config.num_prefix_tokens
        if self.seg_head is not None:
            r = self.config.seg_upsample
            seg = self.seg_head(x[:, n_pre:n_img])  # (B, N, classes * r * r)
            self.hook_seg_logits(seg.unflatten(-1, (self.config.seg_classes, r, r)))
        if self.config.has_text:
            xt = x[:, n_img:]  # (B, T, D)  text positions only
            w = self.text_embed.weight if self.text_head is None else self.text_head.weight
            b = None if self.text_head is None else self.text_head.bias
            return self.hook_logits(F.linear(xt, w, b))  # (B, T, V)  X_f,txt E^T (tied)
        if self.head is None:
            return x  # a headless encoder (e.g. DINO): its output is the tokens themselves
        return self.hook_logits(self.classify(x))  # (B, K)

    def classify(self, x):
        """Class logits from the final tokens X_f (B, S, D): what the class head reads.

        "token": the CLS token (DeiT distilled: the mean of the CLS head and the DIST head);
        "avg": the mean of the patch tokens (prefix tokens left out), then fc_norm if any.
        """
        n_img, n_pre = self.config.num_image_tokens, self.config.num_prefix_tokens
        if self.config.global_pool == "avg":
            pooled = x[:, n_pre:n_img].mean(dim=1)  # (B, D)  mean over patch tokens
            pooled = self.fc_norm(pooled) if self.fc_norm is not None else pooled
            return self.head(pooled)  # (B, K)
        logits = self.head(x[:, 0])  # (B, K)  from the CLS token
        if self.head_dist is not None:  # DeiT at inference: the mean of the two heads
            logits = (logits + self.head_dist(x[:, 1])) / 2
        return logits
