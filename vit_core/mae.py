"""A masked autoencoder (MAE, He et al. 2021) around our ViT: hide most patches, encode the rest,
and reconstruct the hidden ones from what was seen.

    1. every patch becomes a token with its position, x_p E + b + E_pos        (B, N, D)
    2. a random N_vis of them are kept (the order of `noise` decides which)     (B, N_vis, D)
    3. the encoder (our ViT's blocks) reads [CLS; visible tokens]               (B, 1+N_vis, D)
    4. the decoder maps them to D_dec, puts a shared learned [MASK] token at every hidden
       place, adds its own positions and runs a few blocks                     (B, 1+N, D_dec)
    5. a linear head predicts each patch's P·P·C pixel values                   (B, N, P²C)
    6. the loss is the mean squared error on the hidden patches only:
       L = (1/|M|) Σ_{i∈M} (1/P²C) ‖x̂_i − x_i‖²  (x_i normalised per patch with norm_pix_loss)

Masking, positions, pixel order and loss follow transformers' ViTMAEForPreTraining exactly, so a
checkpoint of that format gives the same numbers for the same noise (tests/test_mae.py). The
encoder is a plain headless ViT (vit_core/model.py), loaded and traced like any other.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

import torch
from torch import nn

from .config import ViTConfig
from .hooks import HookPoint, name_hook_points
from .model import Block, ViT
from .patches import patchify

NORM_PIX_EPS = 1e-6  # var + eps under the square root, as in MAE and transformers


@dataclass(frozen=True)
class MAEConfig:
    """The decoder and the masking; the encoder's geometry is its ViTConfig."""

    decoder_dim: int = 512  # D_dec, the decoder's width
    decoder_depth: int = 8  # decoder blocks
    decoder_heads: int = 16
    decoder_mlp_ratio: float = 4.0
    mask_ratio: float = 0.75  # r: the share of the N patches hidden from the encoder
    norm_pix_loss: bool = False  # target: each patch's pixels normalised to mean 0, variance 1

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> MAEConfig:
        data = json.loads(text)
        extra = sorted(set(data) - {f.name for f in fields(cls)})
        if extra:
            raise ValueError(f"The MAE config has fields this version does not know: {extra}.")
        return cls(**data)


def num_visible(num_patches: int, mask_ratio: float) -> int:
    """N_vis = int(N (1 − r)): transformers' rule (it rounds down), kept for parity."""
    return int(num_patches * (1 - mask_ratio))


def noise_hiding(num_patches: int, hidden) -> torch.Tensor:
    """(1, N) noise that hides exactly the patches in `hidden` when N − len(hidden) are kept:
    the visible ones get i/N, the hidden ones 1 + i/N (so the encoder reads them in grid order)."""
    hide = torch.zeros(num_patches)
    hide[list(hidden)] = 1.0
    return (hide + torch.arange(num_patches) / num_patches)[None]


def sincos_positions(grid: int, dim: int) -> torch.Tensor:
    """MAE's fixed 2D sine-cosine positions (1, 1 + grid², dim); the CLS row is zeros.

    Patch (row i, column j) gets [sin(j ω) | cos(j ω) | sin(i ω) | cos(i ω)] with
    ω_k = 1/10000^(k/(D/4)), k = 0..D/4−1: the column in the first half, the row in the second
    (the original MAE's layout, which its pretrained weights rely on). Computed in float64,
    returned in float32.
    """
    if dim % 4:
        raise ValueError(f"Sine-cosine positions need a width divisible by 4, not {dim}.")
    omega = 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float64) / (dim // 4))  # (D/4,)
    rows, cols = torch.meshgrid(torch.arange(grid, dtype=torch.float64),
                                torch.arange(grid, dtype=torch.float64), indexing="ij")
    a_col = cols.flatten()[:, None] * omega  # (N, D/4)
    a_row = rows.flatten()[:, None] * omega
    table = torch.cat([a_col.sin(), a_col.cos(), a_row.sin(), a_row.cos()], dim=1)  # (N, D)
    return torch.cat([torch.zeros(1, dim, dtype=torch.float64), table])[None].float()


def pixel_targets(pixels: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, N, P·P·C), each patch flattened in (row, column, channel) order: the
    order MAE's prediction head writes (patchify's is (channel, row, column), the conv's)."""
    p = patchify(pixels, patch_size)  # (B, N, C·P·P)
    B, N, _ = p.shape
    C = pixels.shape[1]
    return p.view(B, N, C, patch_size * patch_size).transpose(2, 3).reshape(B, N, -1)


def pixels_from_targets(targets: torch.Tensor, patch_size: int, channels: int = 3) -> torch.Tensor:
    """Inverse of pixel_targets: (B, N, P·P·C) -> (B, C, H, W), on a square grid."""
    B, N, _ = targets.shape
    g, P, C = round(N**0.5), patch_size, channels
    x = targets.view(B, g, g, P, P, C).permute(0, 5, 1, 3, 2, 4)  # (B, C, g, P, g, P)
    return x.reshape(B, C, g * P, g * P)


def normalise_patches(targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each patch to mean 0 and variance 1 over its P·P·C values: (normalised, mean, std).
    The variance is the unbiased one, as in MAE and transformers."""
    mean = targets.mean(dim=-1, keepdim=True)
    std = (targets.var(dim=-1, keepdim=True) + NORM_PIX_EPS) ** 0.5
    return (targets - mean) / std, mean, std


def mean_colour_errors(target: torch.Tensor, channels: int = 3) -> torch.Tensor:
    """(B, N) squared error of predicting each patch by its own mean colour: every pixel of the
    patch gets the patch's per-channel mean. `target` is (B, N, P²C) in (row, col, channel)."""
    B, N, _ = target.shape
    t = target.view(B, N, -1, channels)  # (B, N, P², C)
    return ((t - t.mean(dim=2, keepdim=True)) ** 2).mean(dim=(2, 3))


def visible_colour_errors(target: torch.Tensor, mask: torch.Tensor,
                          channels: int = 3) -> torch.Tensor:
    """(B, N) squared error of predicting every patch by the mean colour of the image's visible
    patches (mask 0): the best flat guess from what the encoder sees."""
    B, N, _ = target.shape
    t = target.view(B, N, -1, channels)  # (B, N, P², C)
    seen = (1 - mask)[..., None]  # (B, N, 1)
    colour = (t.mean(dim=2) * seen).sum(dim=1) / seen.sum(dim=1)  # (B, C)
    return ((t - colour[:, None, None]) ** 2).mean(dim=(2, 3))


def random_masking(x: torch.Tensor, noise: torch.Tensor, keep: int):
    """Keep the `keep` tokens of x (B, N, D) with the smallest noise (B, N), as transformers'
    random_masking. Returns (kept tokens (B, N_vis, D), ids_keep (B, N_vis), ids_restore (B, N),
    mask (B, N): 1 where a patch is hidden, in grid order)."""
    B, N, D = x.shape
    ids_shuffle = torch.argsort(noise, dim=1)  # (B, N) patch indices, smallest noise first
    ids_restore = torch.argsort(ids_shuffle, dim=1)  # (B, N) its inverse permutation
    ids_keep = ids_shuffle[:, :keep]  # (B, N_vis)
    x = torch.gather(x, 1, ids_keep[..., None].expand(-1, -1, D))  # (B, N_vis, D)
    mask = torch.ones(B, N, device=x.device)
    mask[:, :keep] = 0  # in shuffled order: the kept ones first
    mask = torch.gather(mask, 1, ids_restore)  # (B, N) back in grid order, 1 = hidden
    return x, ids_keep, ids_restore, mask


@dataclass(frozen=True)
class MAEOutput:
    """Every intermediate of one MAE pass. Shapes for a batch of B; N patches, N_vis kept."""

    noise: torch.Tensor  # (B, N) the random numbers that decided the masking
    ids_keep: torch.Tensor  # (B, N_vis) visible patch indices, in the order the encoder reads them
    ids_restore: torch.Tensor  # (B, N) where each patch sits in the shuffled order
    mask: torch.Tensor  # (B, N) 1 = hidden, 0 = visible, in grid order
    encoder_input: torch.Tensor  # (B, 1+N_vis, D) [CLS + E_pos[0]; visible x_p E + b + E_pos]
    encoded: torch.Tensor  # (B, 1+N_vis, D) after the blocks and the final LayerNorm
    decoder_tokens: torch.Tensor  # (B, 1+N, D_dec) embedded visible tokens and [MASK] tokens,
    #                               back in grid order, before the decoder's positions
    decoder_input: torch.Tensor  # (B, 1+N, D_dec) decoder_tokens + decoder positions
    decoded: torch.Tensor  # (B, 1+N, D_dec) after the decoder blocks and its LayerNorm
    pred: torch.Tensor  # (B, N, P²C) predicted pixels of every patch ((row, col, channel) order)
    target: torch.Tensor  # (B, N, P²C) what pred is compared with (per-patch normalised or not)
    error: torch.Tensor  # (B, N) mean squared error of each patch
    loss: torch.Tensor  # () the mean of `error` over hidden patches only

    @property
    def n_visible(self) -> int:
        return self.ids_keep.shape[1]


class MAEDecoder(nn.Module):
    """D -> D_dec, [MASK] tokens, fixed positions, a few pre-LN blocks, LayerNorm, pixels."""

    def __init__(self, c: ViTConfig, encoder_dim: int):
        super().__init__()
        self.embed = nn.Linear(encoder_dim, c.embed_dim)  # D -> D_dec
        self.mask_token = nn.Parameter(torch.zeros(1, 1, c.embed_dim))
        self.pos_embed = nn.Parameter(sincos_positions(c.grid, c.embed_dim), requires_grad=False)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.depth))
        self.norm = nn.LayerNorm(c.embed_dim, eps=c.norm_eps)
        self.pred = nn.Linear(c.embed_dim, c.patch_size**2 * c.in_chans)  # a patch's P·P·C pixels
        name_hook_points(self)
        for point in self.modules():  # trace names beside the encoder's: decoder.blocks.0.attn.q
            if isinstance(point, HookPoint):
                point.name = "decoder." + point.name


class MAE(nn.Module):
    """A masked autoencoder whose encoder is `encoder`, a headless ViT with a CLS token.

    Parameter names: `encoder.*` are the ViT's own (timm's); `decoder.embed`, `decoder.mask_token`,
    `decoder.pos_embed`, `decoder.blocks.{i}.*` (timm's block names), `decoder.norm`,
    `decoder.pred`. Both position tables are fixed (not trained).
    """

    def __init__(self, encoder: ViT, config: MAEConfig):
        super().__init__()
        c = encoder.config
        if not c.class_token or c.dist_token or c.has_text or c.num_classes or c.seg_classes:
            raise ValueError("An MAE's encoder is a headless image ViT with a CLS token "
                             "(num_classes=0, no DIST token, no text, no segmentation head).")
        self.encoder, self.config = encoder, config
        self.decoder_config = ViTConfig(
            img_size=c.img_size, patch_size=c.patch_size, in_chans=c.in_chans,
            embed_dim=config.decoder_dim, depth=config.decoder_depth,
            num_heads=config.decoder_heads, mlp_ratio=config.decoder_mlp_ratio, num_classes=0,
            norm_eps=c.norm_eps, qkv_bias=c.qkv_bias, mean=c.mean, std=c.std)
        self.decoder = MAEDecoder(self.decoder_config, c.embed_dim)

    def init_fixed_positions(self) -> None:
        """Set both position tables to MAE's sine-cosine codes and freeze them (training)."""
        c = self.encoder.config
        with torch.no_grad():
            self.encoder.pos_embed.copy_(sincos_positions(c.grid, c.embed_dim))
        self.encoder.pos_embed.requires_grad_(False)

    def forward(self, pixels: torch.Tensor, noise: torch.Tensor | None = None,
                mask_ratio: float | None = None, n_visible: int | None = None) -> MAEOutput:
        """Args:
            pixels: (B, C, H, W) normalised images.
            noise: (B, N); the N_vis patches with the smallest noise stay visible (None: uniform
                random numbers, a new masking every call).
            mask_ratio: r, the share hidden (default: the config's); N_vis = int(N (1 − r)).
            n_visible: keep exactly this many instead (overrides mask_ratio).
        """
        enc, c = self.encoder, self.encoder.config
        B, N = pixels.shape[0], c.num_patches
        ratio = self.config.mask_ratio if mask_ratio is None else mask_ratio
        keep = num_visible(N, ratio) if n_visible is None else int(n_visible)
        if not 0 < keep <= N:
            raise ValueError(f"Between 1 and {N} patches must stay visible, not {keep}.")
        if noise is None:
            noise = torch.rand(B, N, device=pixels.device)

        # 1. every patch -> token + its position (CLS comes later: it is never masked)
        x = enc.patch_embed(patchify(pixels, c.patch_size))  # (B, N, D)  x_p E + b
        x = x + enc.pos_embed[:, 1:]  # (B, N, D)  + E_pos

        # 2. random masking: sort by noise, keep the first N_vis
        x, ids_keep, ids_restore, mask = random_masking(x, noise, keep)  # x: (B, N_vis, D)

        # 3. the encoder reads [CLS; visible]: S = 1 + N_vis tokens instead of 1 + N
        cls = (enc.cls_token + enc.pos_embed[:, :1]).expand(B, -1, -1)  # (B, 1, D)
        x = torch.cat([cls, x], dim=1)  # (B, 1+N_vis, D)
        encoder_input = x
        for block in enc.blocks:
            x = block(x)
        encoded = enc.norm(x)  # (B, 1+N_vis, D)

        # 4. the decoder: D -> D_dec, a [MASK] token at every hidden place, positions, blocks
        dec = self.decoder
        y = dec.embed(encoded)  # (B, 1+N_vis, D_dec)
        Dd = y.shape[-1]
        masks = dec.mask_token.expand(B, N - keep, -1)  # (B, N−N_vis, D_dec), one shared vector
        y_ = torch.cat([y[:, 1:], masks], dim=1)  # (B, N, D_dec) in shuffled order
        y_ = torch.gather(y_, 1, ids_restore[..., None].expand(-1, -1, Dd))  # grid order
        tokens = torch.cat([y[:, :1], y_], dim=1)  # (B, 1+N, D_dec)
        z = decoder_input = tokens + dec.pos_embed  # + the decoder's positions
        for block in dec.blocks:
            z = block(z)
        decoded = dec.norm(z)  # (B, 1+N, D_dec)
        pred = dec.pred(decoded)[:, 1:]  # (B, N, P²C), the CLS token's prediction dropped

        # 5. the loss on hidden patches only
        target = pixel_targets(pixels, c.patch_size)  # (B, N, P²C)
        if self.config.norm_pix_loss:
            target = normalise_patches(target)[0]
        error = ((pred - target) ** 2).mean(dim=-1)  # (B, N)  per patch
        loss = (error * mask).sum() / mask.sum()  # mean over hidden patches
        return MAEOutput(noise=noise, ids_keep=ids_keep, ids_restore=ids_restore, mask=mask,
                         encoder_input=encoder_input, encoded=encoded, decoder_tokens=tokens,
                         decoder_input=decoder_input, decoded=decoded, pred=pred, target=target,
                         error=error, loss=loss)

    def reconstruction(self, out: MAEOutput, pixels: torch.Tensor,
                       paste_visible: bool = False) -> torch.Tensor:
        """The predicted image (B, C, H, W) in the input's normalised units.

        With norm_pix_loss the model predicts each patch up to its mean and spread; to draw it,
        each patch's own mean and standard deviation (from `pixels`) are put back. With
        paste_visible, the visible patches are the original ones (only hidden ones predicted).
        """
        c = self.encoder.config
        pred = out.pred
        truth = pixel_targets(pixels, c.patch_size)
        if self.config.norm_pix_loss:
            _, mean, std = normalise_patches(truth)
            pred = pred * std + mean
        if paste_visible:
            pred = torch.where(out.mask[..., None] > 0, pred, truth)
        return pixels_from_targets(pred, c.patch_size, c.in_chans)
