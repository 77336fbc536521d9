"""Written hooks: run the model with functions that replace named intermediates, and the hooks
the experiments are made of (heads switched off, position embeddings left out, another attention
mask than the model's own, local windows).

    def no_head_2(z, name):                        # z: [B, H, S, d_k], the batch first
        z = z.clone()
        z[:, 2] = 0
        return z                                   # used instead of z (None: keep it)

    logits = run_with_hooks(model, pixels, {"blocks.3.attn.z": no_head_2})

A hook is fn(tensor, name) -> tensor or None, as in TransformerLens's `run_with_hooks`; the
names are the trace's (`vit_core.TRACE_NAMES`), and a returned tensor must have the shape it
replaces. Writing q, k, v, the scores or the pattern makes that block's attention compute
A = softmax(scores) and z = A V from the written tensors, not by torch's fused kernel (which
never forms A); a pass that writes none of them runs exactly as a plain forward. Gradients flow
through hooks (call it outside torch.no_grad). Hooks are given per call through a context
variable, as `capture` is: threads running one shared model with different hooks never see
each other's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch

from .hooks import HookPoint, writing
from .masks import is_own, resolve, window_name

Hook = Callable[[torch.Tensor, str], "torch.Tensor | None"]


def hook_names(model) -> list[str]:
    """Every hook point of `model`, in the order its modules were built."""
    return [m.name for m in model.modules() if isinstance(m, HookPoint)]


def combine(model, *hook_sets) -> dict[str, list[Hook]]:
    """One {name: [fn, ...]} from several {name: fn or [fn, ...]} (None skipped), in order: the
    hooks on one name run one after the other, each given what the one before returned. A name
    the model has no hook point for raises ValueError."""
    known = set(hook_names(model))
    out: dict[str, list[Hook]] = {}
    for hooks in hook_sets:
        for name, fns in (hooks or {}).items():
            if name not in known:
                raise ValueError(f"This model has no hook point named '{name}'; "
                                 f"run_trace(model, pixels).names() lists them.")
            fns = list(fns) if isinstance(fns, (list, tuple)) else [fns]
            if not all(callable(fn) for fn in fns):
                raise TypeError(f"A hook on '{name}' is not callable; a hook is "
                                f"fn(tensor, name) -> tensor or None.")
            out.setdefault(name, []).extend(fns)
    return out


def run_with_hooks(model, pixels: torch.Tensor, hooks: dict, text_ids=None, mask=None):
    """The model's output for `pixels` with `hooks` written: {name: fn or [fn, ...]}.

    Args:
        model: a ViT.
        pixels: preprocessed images [B, C, H, W] (or one, [C, H, W]).
        hooks: trace name -> fn(tensor, name) returning the tensor to use instead, or None.
        text_ids: token ids [B, T] for the text model; mask: as `ViT.forward` takes it.
    Returns:
        what `model(pixels, text_ids, mask=mask)` returns: logits [B, K] or [B, T, V].
    """
    if pixels.dim() == 3:
        pixels = pixels.unsqueeze(0)
    n_text = 0 if text_ids is None else text_ids.shape[1]
    with writing(experiment_hooks(model, hooks=hooks, mask=mask, n_text=n_text)):
        return model(pixels, text_ids)


# ---------------------------------------------------------------- the experiments' hooks
def heads_off(head_mask) -> dict[str, Hook]:
    """Hooks that multiply each head's output z by head_mask [L, H] (1 keeps a head, 0
    switches it off) before the heads are concatenated and W_O applied."""
    keep = torch.as_tensor(head_mask).detach().clone()  # the caller's tensor may change later

    def scale(z: torch.Tensor, name: str) -> torch.Tensor:
        layer = int(name.split(".")[1])
        return z * keep[layer].to(z.device, z.dtype).view(1, -1, 1, 1)  # (B, H, S, d_k)

    return {f"blocks.{layer}.attn.z": scale for layer in range(keep.shape[0])
            if not bool((keep[layer] == 1).all())}


def without_positions(model) -> dict[str, Hook]:
    """Hooks that leave out the image position embeddings: `embed` becomes [prefix tokens;
    patch_embed] (then the text tokens as they were), the very tensor the model adds E_pos to.
    The patch embeddings are held from `patch_embed` to `embed` per thread."""
    held = threading.local()
    n_image = model.config.num_image_tokens

    def hold(x: torch.Tensor, name: str) -> None:
        held.patches = x

    def drop(x: torch.Tensor, name: str) -> torch.Tensor:
        patches, held.patches = held.patches, None
        B = x.shape[0]
        prefix = [t.expand(B, -1, -1) for t in (model.cls_token, model.dist_token)
                  if t is not None]
        return torch.cat([*prefix, patches, x[:, n_image:]], dim=1)  # (B, S, D)

    return {"patch_embed": hold, "embed": drop}


def mask_hooks(model, mask, n_text: int = 0) -> tuple[dict[str, Hook], dict[str, Hook]]:
    """Hooks that run the model under `mask` (a name as `ViT.forward` takes it, an additive
    [S, S] or per-block [L, S, S] tensor) instead of its own mask, for S = N (+1) + n_text
    tokens: ({} , {}) when `mask` is the model's own.

    Returns (first, last): `last` holds each block's Q and K (after every other hook on them);
    `first` replaces the block's scores, which the model masked with its own mask, by
    Q K^T / sqrt(d_k) + M[l] (before any other hook on the scores reads them). Install them as
    `combine(model, first, ..., last)`; `experiment_hooks` and `with_mask` do."""
    if mask is None or is_own(model.config, mask, n_text):
        return {}, {}
    new = resolve(model.config, mask, n_text)  # (S, S) or (L, S, S); None: full
    if new is None:
        new = torch.zeros(2 * (model.config.num_image_tokens + n_text,))
    new = new.detach().clone()  # the caller's tensor may change later
    held = threading.local()  # per thread: threads running one model never mix their Q, K

    def hold(t: torch.Tensor, name: str) -> None:
        setattr(held, name.rpartition(".")[2], t)

    def rescore(scores: torch.Tensor, name: str) -> torch.Tensor:
        layer = int(name.split(".")[1])
        q, k = held.q, held.k
        held.q = held.k = None
        m = (new[layer] if new.dim() == 3 else new).to(scores.device, scores.dtype)  # (S, S)
        return (q @ k.transpose(-2, -1)) * model.blocks[layer].attn.scale + m  # Q K^T/sqrt(d_k)+M

    L = model.config.depth
    return ({f"blocks.{i}.attn.scores": rescore for i in range(L)},
            {f"blocks.{i}.attn.{p}": hold for i in range(L) for p in "qk"})


def window_hooks(model, size: int, shifted: bool = False, n_text: int = 0):
    """mask_hooks for local windows of size x size patches (vit_core/masks.py), shifted by
    size // 2 on odd blocks if `shifted`."""
    return mask_hooks(model, window_name(size, shifted), n_text)


def with_mask(model, mask, n_text: int = 0, hooks: dict | None = None) -> dict[str, list[Hook]]:
    """`hooks` ({name: fn or [fn, ...]}) with the hooks of `mask` around them (mask_hooks)."""
    first, last = mask_hooks(model, mask, n_text)
    return combine(model, first, hooks, last)


def experiment_hooks(model, head_mask=None, positions: bool = True, hooks: dict | None = None,
                     mask=None, n_text: int = 0) -> dict[str, list[Hook]]:
    """The hooks of run_trace's `mask`, `head_mask` and `positions` arguments around the
    caller's `hooks` (for n_text text tokens)."""
    first, last = mask_hooks(model, mask, n_text)
    return combine(model, first, None if head_mask is None else heads_off(head_mask),
                   None if positions else without_positions(model), hooks, last)
