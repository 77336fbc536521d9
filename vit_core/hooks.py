"""Hook points: named places in the forward pass where an intermediate tensor can be read, or
written.

A HookPoint is an identity module. Its name is its module path with the `hook_` prefix of the last
part dropped (`blocks.3.attn.hook_pattern` -> `blocks.3.attn.pattern`). It holds no parameters, so
state dicts keep timm's keys.

Capturing does not register torch hooks on the (shared) model: `capture()` opens a store in a
context variable, and every HookPoint writes into the store of the context that runs it. Two
threads tracing one cached model at the same time therefore each get exactly their own tensors.

Writing works the same way: `writing({name: [fn, ...]})` opens a second context variable, and
the HookPoint named `name` passes its tensor through each `fn(tensor, name)` and carries on with
what fn returns (None: the tensor unchanged), before the store keeps it. A trace therefore holds the
tensors the model computed with. `vit_core.hooked.run_with_hooks` is the public way in.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager

import torch
from torch import nn

_STORE: contextvars.ContextVar[dict | None] = contextvars.ContextVar("vit_trace", default=None)
_WRITES: contextvars.ContextVar[dict | None] = contextvars.ContextVar("vit_writes", default=None)


class HookPoint(nn.Module):
    name: str = ""  # set by name_hook_points() once the model is built

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hooks = _WRITES.get()
        if hooks is not None and self.name in hooks:
            for fn in hooks[self.name]:
                x = _written(fn, x, self.name)
        store = _STORE.get()
        if store is not None:
            store[self.name] = x
        return x


def wanted(*points: HookPoint) -> bool:
    """Whether the running pass keeps any of these hook points' tensors. A pass with no store
    (a plain forward) or one that keeps other names only can skip computing them (the fused
    attention kernel never forms the pattern); the skipped names are still listed as offered."""
    store = _STORE.get()
    if store is None:
        return False
    if isinstance(store, _Only):
        if store.names.isdisjoint(p.name for p in points):
            store.seen.extend(p.name for p in points)
            return False
    return True


def writes(*points: HookPoint) -> bool:
    """Whether the running pass writes any of these hook points (attention then computes z from
    the written tensors, not by the fused kernel)."""
    hooks = _WRITES.get()
    return hooks is not None and any(p.name in hooks for p in points)


def current_writes() -> dict:
    """The hooks written in the running context, {name: [fn, ...]} ({} for none)."""
    return _WRITES.get() or {}


def _written(fn, x: torch.Tensor, name: str) -> torch.Tensor:
    """fn's tensor in place of x, checked: the same shape, or one sentence naming the hook."""
    new = fn(x, name)
    if new is None:
        return x
    if not isinstance(new, torch.Tensor):
        raise TypeError(f"The hook on '{name}' returned a {type(new).__name__}; a hook returns "
                        f"a tensor (or None to keep the one it was given).")
    if new.shape != x.shape:
        raise ValueError(f"The hook on '{name}' returned a tensor of shape {tuple(new.shape)}, "
                         f"but '{name}' has shape {tuple(x.shape)} here.")
    return new


def name_hook_points(model: nn.Module) -> list[str]:
    """Give every HookPoint in `model` its trace name; return the names in forward order."""
    names = []
    for path, module in model.named_modules():
        if isinstance(module, HookPoint):
            head, _, last = path.rpartition(".")
            module.name = (head + "." if head else "") + last.removeprefix("hook_")
            names.append(module.name)
    return names


class _Only(dict):
    """A store that keeps only the given names, and lists every name it was offered in order.
    The other tensors are not held, so the pass reuses their memory at once."""

    def __init__(self, names):
        super().__init__()
        self.names, self.seen = frozenset(names), []

    def __setitem__(self, name: str, x: torch.Tensor) -> None:
        self.seen.append(name)
        if name in self.names:
            super().__setitem__(name, x)


@contextmanager
def capture(only=None):
    """Collect every hook point's tensor computed inside the `with` block into a dict.

    Args:
        only: if given, the names to keep; the others are only listed, in order, in `.seen`.
    """
    store: dict[str, torch.Tensor] = {} if only is None else _Only(only)
    token = _STORE.set(store)
    try:
        yield store
    finally:
        _STORE.reset(token)


@contextmanager
def writing(hooks: dict):
    """Run the passes inside the `with` block with these hooks written: {name: [fn, ...]}, each
    fn(tensor, name) -> tensor or None, applied in order. Per context, as `capture`."""
    token = _WRITES.set(hooks or None)
    try:
        yield
    finally:
        _WRITES.reset(token)
