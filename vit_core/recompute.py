"""What a lean trace needs to recompute the tensors it did not keep (vit_core/trace.py).

`Rerun` holds the pass's model and settings and runs one block (or patch_embed, ln_final) again
on the kept input, with the same hooks: same code, same input, so the same numbers. It refuses
once the model's weights changed (torch's in-place write counters, `weights_version`).
`Recomputed` keeps what was recomputed, for the `keep` blocks read most recently, and lets many
threads read one trace: each part is recomputed once, by one thread, the others wait for it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import torch

from .hooks import capture, writing


def weights_version(model) -> tuple[int, ...]:
    """Torch's in-place write counters of the model's parameters: they change when any weight
    is modified (an optimiser step, load_state_dict), so a trace can tell it can't recompute."""
    return tuple(p._version for p in model.parameters())


@dataclass(frozen=True)
class Rerun:
    """What recomputing a block needs besides its input: the model and the pass's settings."""

    model: object
    attn_mask: torch.Tensor | None  # the additive mask the pass added (None: "full", nothing);
    #                                 [S, S], or [L, S, S] for a per-block (window) mask
    hooks: dict  # {name: [fn, ...]} the pass wrote (head switches, positions, the caller's)
    device: torch.device
    version: tuple[int, ...]  # weights_version(model) at the pass

    def check(self):
        if weights_version(self.model) != self.version:
            raise RuntimeError("The model's weights changed after this trace was taken, so its "
                               "internals cannot be recomputed; run run_trace again.")

    def block(self, layer: int, x: torch.Tensor, part: str = "all") -> dict:
        """Block `layer` run again on its input x [S, D]; every hook point's tensor by name.
        part="pattern": only up to the attention pattern; "attn_out": only the attention half,
        MSA(LN(X)) by the fused kernel as in a lean pass, and only that tensor."""
        self.check()
        block = self.model.blocks[layer]
        mask = self.attn_mask
        if mask is not None:
            mask = (mask[layer] if mask.dim() == 3 else mask).to(self.device, x.dtype)  # (S, S)
        x = x[None].to(self.device)  # (1, S, D), as in the pass
        if part == "attn_out":
            with torch.inference_mode(), writing(self.hooks), capture(only=()):  # Q, K unkept
                return {f"blocks.{layer}.attn_out": block.attn(block.norm1(x), mask)[0].cpu()}
        with torch.inference_mode(), writing(self.hooks), capture() as store:
            if part == "pattern":  # LN(X) up to the pattern, the start of Block.forward
                block.attn(block.norm1(x), mask, pattern_only=True)
            else:
                block(x, mask)
        return {name: t[0].cpu() for name, t in store.items()}

    def part(self, part, read: Callable[[str], torch.Tensor]) -> dict:
        """Block `part` (an index), "patch_embed" or "ln_final" recomputed from the tensors
        `read(name)` gives (the trace's); patch_embed and ln_final through their hook points,
        so a hook writes them as it did in the pass."""
        if part not in ("patch_embed", "ln_final"):
            return self.block(part, read(f"blocks.{part}.resid_pre"))
        self.check()
        model = self.model
        with torch.inference_mode(), writing(self.hooks):
            if part == "patch_embed":
                embedded = model.patch_embed(read("patches")[None])  # (1, N, D)
                return {part: model.hook_patch_embed(embedded)[0]}
            last = read(f"blocks.{len(model.blocks) - 1}.resid_post")
            return {part: model.hook_ln_final(model.norm(last[None]))[0]}


class Recomputed:
    """The recomputed parts of one trace (block index / "patch_embed" / "ln_final" -> {name:
    tensor}), blocks kept for the `keep` read most recently; thread-safe."""

    def __init__(self, compute: Callable[[Hashable], dict], keep: int):
        self._compute, self._keep = compute, keep
        self._parts: OrderedDict = OrderedDict()  # blocks in order of use
        self._order = threading.Lock()  # guards the order of _parts, its evictions, _locks
        self._locks: dict = {}  # part -> the lock its one computing thread holds

    def get(self, part, keep: bool = True) -> dict:
        """The tensors of `part`, recomputed now unless kept; kept afterwards if `keep`."""
        done = self._used(part)
        if done is not None:
            return done
        if not keep:
            return self._compute(part)
        with self._order:
            lock = self._locks.setdefault(part, threading.Lock())
        with lock:  # one thread computes, the others wait for its result
            done = self._used(part)
            if done is None:
                done = self._compute(part)
                with self._order:
                    self._parts[part] = done
                    blocks = [p for p in self._parts if isinstance(p, int)]
                    for old in blocks[:-self._keep]:  # the least recently read blocks go
                        del self._parts[old]
        return done

    def peek(self, part) -> dict:
        """What is kept of `part` ({} if nothing), computing nothing and moving nothing."""
        with self._order:
            return dict(self._parts.get(part, {}))

    def __contains__(self, part) -> bool:
        with self._order:
            return part in self._parts

    def tensors(self) -> list[torch.Tensor]:
        """Every tensor kept now."""
        with self._order:
            parts = list(self._parts.values())
        return [t for part in parts for t in part.values()]

    def _used(self, part) -> dict | None:
        """The kept tensors of `part` (now the most recently read), or None."""
        with self._order:
            done = self._parts.get(part)
            if done is not None:
                self._parts.move_to_end(part)
            return done
