"""run_trace: one forward pass, and a read-only Trace that gives every intermediate by name.

A lean trace (the default) keeps what is small and read everywhere: the patches, the residual
stream between blocks and the logits. Every other name is recomputed when it is first read, by
the same modules from what was kept: block l's internals from its input `blocks.l.resid_pre`,
`patch_embed` from `patches`, `ln_final` from the last block's output. Same code, same input,
same shapes, so the numbers are the ones the pass computed, bit for bit. For ViT-B/16 the pass
keeps 8.5 MB instead of 170 MB; reading one name of block l recomputes that block alone (1/L of
a pass) and keeps its internals (14 MB) for the next read, for the KEEP_BLOCKS block(s) read
most recently: a trace never grows past what it kept plus that many blocks, however many layers
a page visits. `shape(name)` says a tensor's shape without recomputing anything. How a
name is recomputed (the pass's settings, the blocks kept, the locks): vit_core/recompute.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType

import torch

from .config import ViTConfig
from .hooked import experiment_hooks
from .hooks import capture, writing
from .masks import own_mask, resolve
from .recompute import Recomputed, Rerun, weights_version

_Rerun = Rerun  # run_trace's name for it

# Every name a trace can hold: pattern -> (shape in the notes' symbols, what it is).
# `l` is the block index 0..L-1. docs/library.md's table is generated from this one, and a test
# checks both against a real trace.
TRACE_NAMES: dict[str, tuple[str, str]] = {
    "patches": ("N, C·P²", "the image cut into P×P patches, each flattened in (c, row, col) order"),
    "patch_embed": ("N, D", "patches · W_E + b (W_E: C·P² × D): each patch projected to D "
                            "dimensions"),
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


# What a lean pass keeps; `blocks.l.resid_pre` is the same tensor as `embed` or block l-1's
# `resid_post`. Everything else is recomputed on first read.
KEPT = ("patches", "embed", "blocks.l.resid_post", "seg_logits", "logits")
KEEP_BLOCKS = 1  # recomputed blocks a lean trace keeps (the one read most recently)


class Trace(Mapping):
    """Read-only mapping from trace names to CPU tensors (batch dimension removed).

    Names are listed in forward order (`names()`, iteration). In a lean trace a block's internals
    are recomputed when one of them is first read, then kept with the trace; `nbytes()` says
    what it holds. Reading is thread-safe: many threads may read one trace, each block is
    recomputed once. For aggregates over every layer, `patterns()`, `blocks()` and `residuals()`
    go block by block and keep nothing new, and so does `sublayer_norms()`.

    Attributes:
        config: the model's ViTConfig.
        mask: the additive [S, S] mask used (zeros for "full"), or [L, S, S] for a per-block
            mask (a window mask: block l added mask[l]).
        mask_kind: "full" | "causal" | "prefix" | "window:M" | "window:M:shifted" | "custom".
        text_ids: [T] token ids fed to the text stream, or None.
    """

    def __init__(self, tensors: dict, config: ViTConfig, mask: torch.Tensor, mask_kind: str,
                 text_ids: torch.Tensor | None = None, *, names: list[str] | None = None,
                 rerun: Rerun | None = None):
        """tensors: the kept tensors; names: every name in forward order (default: tensors');
        rerun: how to recompute the names not in `tensors` (a lean trace, vit_core/recompute)."""
        self._kept = dict(tensors)
        self._names = list(tensors) if names is None else list(names)
        self._known = frozenset(self._names)
        self._rerun = rerun
        self._recomputed = Recomputed(self._recompute, keep=KEEP_BLOCKS)
        self.config, self.mask, self.mask_kind, self.text_ids = config, mask, mask_kind, text_ids

    def __getitem__(self, name: str) -> torch.Tensor:
        if name not in self._known:
            raise KeyError(f"No tensor named '{name}' in this trace; see trace.names().")
        kept = self._kept.get(_alias(name))
        return kept if kept is not None else self._recomputed.get(_part_of(name))[name]

    def __contains__(self, name) -> bool:  # without reading (Mapping's default would compute)
        return name in self._known

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def names(self) -> list[str]:
        return list(self._names)

    def shape(self, name: str) -> torch.Size:
        """The shape of `trace[name]` without reading it: a tensor the trace holds gives its
        own; one it would recompute has the shape TRACE_NAMES gives it in this model's sizes
        (a test checks the two agree for every name of every model family)."""
        if name not in self._known:
            raise KeyError(f"No tensor named '{name}' in this trace; see trace.names().")
        held = self._kept.get(_alias(name))
        if held is None:
            held = self._recomputed.peek(_part_of(name)).get(name)
        if held is not None:
            return held.shape
        sizes = symbol_sizes(self.config, self.n_text)
        return torch.Size(sizes[s] for s in TRACE_NAMES[name_pattern(name)][0].split(", "))

    @property
    def logits(self) -> torch.Tensor:
        return self["logits"]

    @property
    def n_text(self) -> int:
        return 0 if self.text_ids is None else len(self.text_ids)

    @property
    def n_image(self) -> int:  # image-side tokens, CLS included
        return self.config.num_image_tokens

    def nbytes(self) -> int:
        """Bytes of memory the trace holds now: what the pass kept, plus the blocks recomputed
        and kept since. Names that share memory count once: `resid_pre` of block l is block
        l-1's `resid_post`, and q, k, v are views of one qkv tensor."""
        storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
                    for t in [*self._kept.values(), *self._recomputed.tensors()]}
        return sum(storages.values())

    # ---- block by block

    def block(self, layer: int) -> Mapping[str, torch.Tensor]:
        """Block `layer`'s tensors by their names inside the block ('resid_pre', 'ln1',
        'attn.pattern', ..., 'resid_post'). Recomputed if needed and kept, as reading
        `trace[f"blocks.{layer}.ln1"]` would."""
        return self._block_view(layer, keep=True)

    def blocks(self) -> Iterator[Mapping[str, torch.Tensor]]:
        """Every block's tensors in turn, layer 0 first, as `block(l)` gives them, but not kept:
        an aggregate over all layers holds one block's internals at a time."""
        for layer in range(self.config.depth):
            yield self._block_view(layer, keep=False)

    def patterns(self) -> Iterator[torch.Tensor]:
        """Every layer's attention pattern [H, S, S] in turn, layer 0 first, not kept. Only what
        leads to the pattern is recomputed (LN1, Q, K, the scores: about a quarter of a block).
        `rollout`, distances and entropy can consume it one layer at a time."""
        for layer in range(self.config.depth):
            name = f"blocks.{layer}.attn.pattern"
            if self._rerun is None or layer in self._recomputed:  # kept already
                yield self[name]
            else:
                yield self._rerun.block(layer, self[f"blocks.{layer}.resid_pre"],
                                        part="pattern")[name]

    def sublayer_norms(self) -> dict[str, torch.Tensor]:
        """The norm of what each block's attention and MLP add to every token: {"attn": [L, S],
        "mlp": [L, S]}, the norms of `blocks.l.attn_out` and `blocks.l.mlp_out` along D, layer
        by layer, keeping nothing. A lean trace recomputes only each block's attention half:
        attn_out exactly, and mlp_out as resid_post − (resid_pre + attn_out), the kept output
        minus the recomputed X' (equal to the pass's mlp_out up to float32 rounding of that
        sum, ~1e-7 of the residual's size); the MLP's two matrix products, two thirds of a
        block, are not run again."""
        attn, mlp = [], []
        for layer in range(self.config.depth):
            pre = f"blocks.{layer}."
            if self._rerun is None or layer in self._recomputed or pre + "attn_out" in self._kept:
                block = self._block_view(layer, keep=False)
                a, m = block["attn_out"], block["mlp_out"]
            else:
                x = self[pre + "resid_pre"]
                a = self._rerun.block(layer, x, part="attn_out")[pre + "attn_out"]
                m = self[pre + "resid_post"] - (x + a)
            attn.append(a.norm(dim=-1))
            mlp.append(m.norm(dim=-1))
        return {"attn": torch.stack(attn), "mlp": torch.stack(mlp)}

    def residuals(self) -> Iterator[torch.Tensor]:
        """The residual stream [S, D]: `embed`, then each block's `resid_post` (all kept by the
        pass: nothing is recomputed). The logit lens reads these."""
        yield self["embed"]
        for layer in range(self.config.depth):
            yield self[f"blocks.{layer}.resid_post"]

    # ---- recomputation (vit_core/recompute.py)

    def _recompute(self, part) -> dict:
        """The tensors of `part` this trace did not keep, run again from those it did."""
        if self._rerun is None:  # a trace built from a dict lists only what it holds
            raise KeyError(f"This trace keeps no '{part}' and has no model to recompute it.")
        out = self._rerun.part(part, self.__getitem__)
        return {name: t for name, t in out.items() if _alias(name) not in self._kept}

    def _block_view(self, layer: int, keep: bool) -> Mapping[str, torch.Tensor]:
        if not 0 <= layer < self.config.depth:
            raise IndexError(f"This model has blocks 0 to {self.config.depth - 1}, not {layer}.")
        prefix = f"blocks.{layer}."
        names = [n for n in self._names if n.startswith(prefix)]
        lazy = any(_alias(n) not in self._kept for n in names)
        part = self._recomputed.get(layer, keep) if lazy else {}
        return MappingProxyType({n.removeprefix(prefix): part[n] if n in part else
                                 self._kept[_alias(n)] for n in names})


def _alias(name: str) -> str:
    """`blocks.l.resid_pre` is the tensor stored as `embed` or as block l-1's output."""
    if name.startswith("blocks.") and name.endswith(".resid_pre"):
        layer = int(name.split(".")[1])
        return "embed" if layer == 0 else f"blocks.{layer - 1}.resid_post"
    return name


def _part_of(name: str):
    """What a name is recomputed with: its block's index, or the name itself."""
    return int(name.split(".")[1]) if name.startswith("blocks.") else name


def run_trace(model, pixels: torch.Tensor, text_ids=None, mask=None, head_mask=None,
              positions: bool = True, lean: bool = True, hooks=None) -> Trace:
    """Run one forward pass and return a Trace that gives every intermediate under its name.

    Args:
        model: a ViT.
        pixels: one preprocessed image, [1, C, H, W] or [C, H, W].
        text_ids: token ids [T] or [1, T] for the text model (starting with [SOS]).
        mask: "full" | "causal" | "prefix" | "window:M" | "window:M:shifted", an additive
            [S, S] tensor, a per-block [L, S, S] one, or None = model default. Another mask
            than the model's own is written as hooks on the scores (hooked.mask_hooks).
        head_mask: optional [L, H] multipliers on head outputs (0 switches a head off).
        positions: False leaves out the image position embeddings (an experiment).
        hooks: {name: fn or [fn, ...]}, written as `run_with_hooks` writes them (vit_core/
            hooked.py); a lean trace calls a block's hooks again when it recomputes the block.
        lean: keep only the residual stream (and patches, logits) and recompute the rest on
            first read, from the same modules (the model must not change meanwhile); False keeps
            every tensor the pass made (~170 MB for ViT-B/16).
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
    resolved = resolve(model.config, mask, n_text)  # None means "full": nothing to add
    if resolved is not None:
        resolved = resolved.detach().clone()  # the caller's tensor may change later
    # a changed mask, the head switches and positions left out are written hooks around the
    # caller's; the model itself adds only its own mask (a recomputed block too)
    hooks = experiment_hooks(model, head_mask, positions, hooks,
                             mask="full" if resolved is None else resolved, n_text=n_text)
    L = model.config.depth
    keep = {*KEPT, *(n.replace(".l.", f".{i}.") for n in KEPT if ".l." in n for i in range(L))}
    with torch.inference_mode(), writing(hooks), capture(only=keep if lean else None) as store:
        # capture lives in a context variable: concurrent traces of one model never mix
        model(pixels, text_ids)
    names = store.seen if lean else list(store)  # every name offered, in forward order
    tensors = {name: t[0].detach().cpu() for name, t in store.items()}
    rerun = _Rerun(model, own_mask(model.config, n_text), hooks, pixels.device,
                   weights_version(model))
    S = model.config.num_image_tokens + n_text
    shown = torch.zeros(S, S) if resolved is None else resolved.cpu()
    return Trace(tensors, model.config, shown, kind,
                 None if text_ids is None else text_ids[0].clone(), names=names,
                 rerun=rerun if lean else None)


def names_table() -> str:
    """TRACE_NAMES as the Markdown table docs/library.md shows (a test keeps the two in sync)."""
    rows = ["| name | shape | what it is |", "|---|---|---|"]
    rows += [f"| `{name}` | [{shape}] | {meaning} |" for name, (shape, meaning) in
             TRACE_NAMES.items()]
    return "\n".join(rows)

