"""run_trace: one forward pass keeping every intermediate tensor, by name, in a read-only Trace."""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch

from .config import ViTConfig
from .hooks import capture

# Every name a trace can hold: pattern -> (shape in the notes' symbols, what it is).
# `l` is the block index 0..L-1. The README's table is generated from this one, and a test checks
# both against a real trace.
TRACE_NAMES: dict[str, tuple[str, str]] = {
    "patches": ("N, C·P²", "the image cut into P×P patches, each flattened in (c, row, col) order"),
    "patch_embed": ("N, D", "patches · W_Eᵀ + b: each patch projected to D dimensions"),
    "embed": ("S, D", "block 0 input: [CLS; patch_embed] + E_pos (then text tokens + P_txt)"),
    "blocks.l.resid_pre": ("S, D", "X, the block's input: embed for block 0, else block l−1's "
                                   "resid_post"),
    "blocks.l.ln1": ("S, D", "LayerNorm before attention"),
    "blocks.l.attn.q": ("H, S, d_k", "queries per head"),
    "blocks.l.attn.k": ("H, S, d_k", "keys per head"),
    "blocks.l.attn.v": ("H, S, d_k", "values per head"),
    "blocks.l.attn.scores": ("H, S, S", "Q Kᵀ / √d_k + M: scaled, masked, before softmax"),
    "blocks.l.attn.pattern": ("H, S, S", "softmax of the scores; row i: where query i looks"),
    "blocks.l.attn.z": ("H, S, d_k", "each head's output, pattern · V"),
    "blocks.l.attn_out": ("S, D", "heads concatenated, times W_O (+ b)"),
    "blocks.l.resid_mid": ("S, D", "X' = X + attn_out"),
    "blocks.l.ln2": ("S, D", "LayerNorm before the MLP"),
    "blocks.l.mlp.pre": ("S, d_ff", "U = LN2 · W_1 + b_1, before GELU"),
    "blocks.l.mlp.post": ("S, d_ff", "GELU(U)"),
    "blocks.l.mlp_out": ("S, D", "GELU(U) · W_2 + b_2"),
    "blocks.l.resid_post": ("S, D", "X' + mlp_out: the block's output"),
    "ln_final": ("S, D", "the final LayerNorm over every token"),
    "seg_logits": ("N, K_seg, r, r", "segmentation head: class scores for r×r cells per patch"),
    "logits": ("K or T, V", "class logits from CLS, or next-token logits at each text position"),
}


def name_pattern(name: str) -> str:
    """`blocks.3.attn.q` -> `blocks.l.attn.q`, the key into TRACE_NAMES."""
    return re.sub(r"^blocks\.\d+\.", "blocks.l.", name)


def symbol_sizes(config: ViTConfig, n_text: int = 0) -> dict[str, int]:
    """The notes' symbols for this model and text length, e.g. {'N': 196, 'S': 197, ...}."""
    c = config
    return {"N": c.num_patches, "C·P²": c.in_chans * c.patch_size**2, "D": c.embed_dim,
            "S": c.num_image_tokens + n_text, "H": c.num_heads, "d_k": c.head_dim,
            "d_ff": c.mlp_hidden, "K": c.num_classes, "T": n_text, "V": c.vocab_size,
            "K_seg": c.seg_classes, "r": c.seg_upsample}


class Trace(Mapping):
    """Read-only mapping from trace names to CPU tensors (batch dimension removed).

    Attributes:
        config: the model's ViTConfig.
        mask: the additive [S, S] mask used (zeros for "full").
        mask_kind: "full" | "causal" | "prefix" | "custom".
        text_ids: [T] token ids fed to the text stream, or None.
    """

    def __init__(self, tensors: dict, config: ViTConfig, mask: torch.Tensor, mask_kind: str,
                 text_ids: torch.Tensor | None = None):
        self._tensors = dict(tensors)
        self.config, self.mask, self.mask_kind, self.text_ids = config, mask, mask_kind, text_ids

    def __getitem__(self, name: str) -> torch.Tensor:
        try:
            return self._tensors[name]
        except KeyError:
            raise KeyError(f"No tensor named '{name}' in this trace; see trace.names().") from None

    def __iter__(self):
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def names(self) -> list[str]:
        return list(self._tensors)

    @property
    def logits(self) -> torch.Tensor:
        return self._tensors["logits"]

    @property
    def n_text(self) -> int:
        return 0 if self.text_ids is None else len(self.text_ids)

    @property
    def n_image(self) -> int:  # image-side tokens, CLS included
        return self.config.num_image_tokens

    def nbytes(self) -> int:
        """Bytes of memory the trace holds. Names that share memory count once: `resid_pre` of
        block l is block l-1's `resid_post`, and q, k, v are views of one qkv tensor."""
        storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
                    for t in self._tensors.values()}
        return sum(storages.values())


def run_trace(model, pixels: torch.Tensor, text_ids=None, mask=None, head_mask=None,
              positions: bool = True) -> Trace:
    """Run one forward pass and return every intermediate tensor under its trace name.

    Args:
        model: a ViT.
        pixels: one preprocessed image, [1, C, H, W] or [C, H, W].
        text_ids: token ids [T] or [1, T] for the text model (starting with [SOS]).
        mask: "full" | "causal" | "prefix", an additive [S, S] tensor, or None = model default.
        head_mask: optional [L, H] multipliers on head outputs (0 switches a head off).
        positions: False leaves out the image position embeddings (an experiment).
    """
    if pixels.dim() == 3:
        pixels = pixels.unsqueeze(0)
    if pixels.shape[0] != 1:
        raise ValueError("run_trace traces one image at a time.")
    if text_ids is not None:
        text_ids = torch.as_tensor(text_ids, dtype=torch.long).reshape(1, -1)
    n_text = 0 if text_ids is None else text_ids.shape[1]
    kind = mask if isinstance(mask, str) else ("custom" if mask is not None else None)
    kind = kind or model.config.default_mask
    resolved = model.resolve_mask(mask, n_text)  # None means "full": nothing to add
    # Capture lives in a context variable: concurrent traces of one model never mix.
    with torch.inference_mode(), capture() as store:
        model(pixels, text_ids, mask="full" if resolved is None else resolved,
              head_mask=head_mask, positions=positions)
    tensors = {name: t[0].detach().cpu() for name, t in store.items()}  # in forward order
    S = model.config.num_image_tokens + n_text
    resolved = torch.zeros(S, S) if resolved is None else resolved.detach().cpu()
    return Trace(tensors, model.config, resolved, kind,
                 None if text_ids is None else text_ids[0].clone())


def names_table() -> str:
    """TRACE_NAMES as the Markdown table the README shows (a test keeps the two in sync)."""
    rows = ["| name | shape | what it is |", "|---|---|---|"]
    rows += [f"| `{name}` | [{shape}] | {meaning} |" for name, (shape, meaning) in
             TRACE_NAMES.items()]
    return "\n".join(rows)

