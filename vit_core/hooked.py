"""Written hooks: run the model with functions that replace named intermediates, and the hooks
the experiments are made of (heads switched off, position embeddings left out).

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
    with writing(combine(model, hooks)):
        return model(pixels, text_ids, mask=mask)


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


def experiment_hooks(model, head_mask=None, positions: bool = True,
                     hooks: dict | None = None) -> dict[str, list[Hook]]:
    """The hooks of run_trace's `head_mask` and `positions` arguments, then the caller's."""
    return combine(model, None if head_mask is None else heads_off(head_mask),
                   None if positions else without_positions(model), hooks)
