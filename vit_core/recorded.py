"""Recorded passes: a forward pass recorded once as a TorchScript graph, then replayed.

Why: every torch op called from Python lets go of the interpreter lock and must win it back.
In the app, the pass runs on one worker thread beside the threads that draw other students'
pages; while one of those is busy in Python, each of the pass's ~250 ops can wait a switch
interval (5 ms) for the lock, and a 63 ms caption took 8–12 s. A recorded graph runs all of its
ops in C++ and gives up the lock once per pass.

Same numbers: the graph calls the same kernels on the same tensors in the same order as the
eager `ViT.forward` (it is a recording of it, with the JIT's optimisations off, so nothing is
fused or reordered); the tests compare every output with the eager pass for equality.

What is recorded is a function whose inputs are the model's parameters and the pass's inputs,
so one recording serves every model of one architecture (class, config, parameter shapes) for
given input shapes and settings (text or not, mask or not, head switches or not, positions, the
names kept): a model loaded again, or weights edited or replaced, use the same recording.
Recordings are never dropped, because torch keeps a recorded function for the life of the
process anyway; keyed by architecture, they are bounded by the models and shapes a server
meets (a bundled captioner: one per caption length, ~2.5 MB each). Recording costs about one
pass, once. Models with buffers are run eagerly (a buffer would be recorded as a constant).

Off by default; `VIT_CORE_RECORDED=1` turns it on. `torch.jit.trace` is deprecated in torch
2.13 but is the one way to run a whole pass in C++ without compiling it. The app leaves this
off: it makes passes beside busy threads 2–7× faster but did not make a classroom faster
(README, "Performance").
"""

from __future__ import annotations

import copy
import inspect
import os
import threading
import warnings
import weakref

import torch

from .hooks import capture
from .model import ViT

ENV = "VIT_CORE_RECORDED"


def enabled() -> bool:
    return os.environ.get(ENV, "0") == "1"


def usable(model) -> bool:
    """Whether passes of `model` may be replayed from a recording: switched on, a `ViT` whose
    forward is `ViT.forward` (a subclass's own forward is not what `_pass` records), in eval mode
    without buffers, and no gradients wanted (a recording is for inference)."""
    return (enabled() and isinstance(model, ViT) and type(model).forward is ViT.forward
            and not model.training
            and not torch.is_grad_enabled() and next(model.buffers(), None) is None)


class _Recording:
    def __init__(self, graph, notes: dict):
        self.graph, self.notes = graph, notes  # notes: what the recording run wrote down

    def __call__(self, params: list, args: list):
        with torch.jit.optimized_execution(False):  # thread-local: the recorded ops, as they are
            return self.graph(*params, *args)


_recordings: dict[tuple, _Recording] = {}
_arch: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> its architecture key
_lock = threading.Lock()


def _architecture(model) -> tuple:
    key = _arch.get(model)
    if key is None:
        key = (type(model).__qualname__, repr(getattr(model, "config", None)),
               tuple((n, tuple(p.shape), p.dtype) for n, p in model.named_parameters()))
        _arch[model] = key
    return key


def replay(model, tag: tuple, run, args: list):
    """`run(model, notes, *args)` replayed from the recording kept for `model`'s architecture
    under (tag, the args' shapes, dtypes and devices), recorded now if there is none. `run` must
    do the same ops for equal shapes and may write names into the dict `notes` while recording.
    Returns (outputs, notes), or None if it may not be replayed (`usable`) or cannot be recorded
    (the caller then runs it eagerly, which raises the model's own error for bad input)."""
    if not usable(model):
        return None
    key = (_architecture(model), tag, tuple((tuple(a.shape), a.dtype, a.device) for a in args))
    params = list(model.parameters())
    rec = _recordings.get(key)
    if rec is None:
        with _lock:  # recording is rare (once per architecture, shapes and settings)
            rec = _recordings.get(key)
            if rec is None:
                rec = _record(model, run, params, args)
                if rec is None:
                    return None
                _recordings[key] = rec
    return rec(params, args), rec.notes


def _record(model, run, params: list, args: list) -> _Recording | None:
    # A private twin of the model shares its parameters; while recording, the twin's parameter
    # slots hold the recording's inputs, so the graph reads its weights from its inputs.
    twin = copy.deepcopy(model, memo={id(p): p for p in params})
    slots = [(twin.get_submodule(name.rpartition(".")[0]), name.rpartition(".")[2])
             for name, _ in twin.named_parameters()]
    notes: dict = {}

    def recorded_run(*inputs):
        for (module, name), t in zip(slots, inputs, strict=False):
            module._parameters[name] = t
        return run(twin, notes, *inputs[len(slots):])

    try:
        with warnings.catch_warnings():  # shape checks become constants: keyed by shape
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            warnings.simplefilter("ignore", DeprecationWarning)  # README, "Performance"
            graph = torch.jit.trace(recorded_run, (*params, *args), check_trace=False)
    except Exception:  # bad input (the eager pass says why) or nothing to record with
        return None
    return _Recording(graph, notes)


def _pass(has: tuple, positions: bool, keep: frozenset | None):
    """`model(...)` with a fixed set of inputs present, as one recordable function: returns the
    logits, or (keep given) the batch-0 tensors of the hook points named in `keep`, in forward
    order, writing their names and every hook point offered into the notes."""
    has_text, has_mask, has_heads = has

    def run(model, notes, pixels, *rest):
        rest = list(rest)
        text_ids = rest.pop(0) if has_text else None
        mask = rest.pop(0) if has_mask else "full"
        heads = rest.pop(0) if has_heads else None
        if keep is None:
            return model(pixels, text_ids, mask=mask, head_mask=heads, positions=positions)
        with capture(only=keep) as store:
            model(pixels, text_ids, mask=mask, head_mask=heads, positions=positions)
        notes["names"], notes["seen"] = list(store), list(store.seen)
        return tuple(t[0] for t in store.values())

    return run


def _inputs(pixels, text_ids, mask, head_mask):
    has = (text_ids is not None, isinstance(mask, torch.Tensor), head_mask is not None)
    args = [pixels] + [a for a, h in zip((text_ids, mask, head_mask), has, strict=True) if h]
    return args, has


def forward(model, *args, **kwargs):
    """`model(*args, **kwargs)`, replayed from a recording when `usable(model)` (then with
    `ViT.forward`'s arguments and result), else called as given (any module)."""
    if not usable(model):
        return model(*args, **kwargs)
    given = inspect.signature(ViT.forward).bind(model, *args, **kwargs)
    given.apply_defaults()
    pixels, text_ids, mask, head_mask, positions = (
        given.arguments[k] for k in ("pixels", "text_ids", "mask", "head_mask", "positions"))
    n_text = 0 if text_ids is None else text_ids.shape[1]
    mask = model.resolve_mask(mask, n_text)  # a tensor, or None for "full"
    args, has = _inputs(pixels, text_ids, mask, head_mask)
    done = replay(model, ("forward", has, positions), _pass(has, positions, None), args)
    if done is None:
        return model(pixels, text_ids, mask="full" if mask is None else mask,
                     head_mask=head_mask, positions=positions)
    return done[0]


def kept(model, pixels, text_ids, mask, head_mask, positions: bool, keep: frozenset):
    """The pass of `run_trace`: (the batch-0 tensors of the hook points in `keep` by name, every
    hook point the pass offered in order), replayed when `usable(model)`, else None.
    `mask` is an additive tensor or None ("full"), already resolved."""
    args, has = _inputs(pixels, text_ids, mask, head_mask)
    done = replay(model, ("kept", has, positions, keep), _pass(has, positions, keep), args)
    if done is None:
        return None
    out, notes = done
    return dict(zip(notes["names"], out, strict=True)), list(notes["seen"])


def count(model) -> int:
    """How many recordings `model`'s architecture has (tests, benchmarks)."""
    arch = _architecture(model)
    return sum(1 for key in list(_recordings) if key[0] == arch)
