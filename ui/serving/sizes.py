"""How many bytes of memory a value holds, for the cache's budget (ui/serving/cache.py).

Sizes are real: a tensor counts its storage once however many views share it (a numpy array its
base's buffer), a model its parameters and buffers, a trace what its `nbytes()` says it holds
now (reading a block it recomputes grows it), a PIL image its pixels; dicts, lists, tuples, sets
and dataclasses are walked. Anything else counts nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np
import torch
from PIL import Image

_PIL_BYTES = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I": 4, "F": 4}  # other modes: 4 bytes a pixel


def size_of(value) -> int:
    """Bytes of memory `value` holds: tensors, numpy arrays, PIL images, models and traces found
    in it (inside dicts, lists, tuples and dataclasses), each buffer once."""
    return _size(value, set())


def _storage(ptr: int, nbytes: int, seen: set) -> int:
    if ptr in seen:
        return 0
    seen.add(ptr)
    return nbytes


def _size(obj, seen: set) -> int:
    if isinstance(obj, torch.Tensor):
        storage = obj.untyped_storage()
        return _storage(storage.data_ptr(), storage.nbytes(), seen)
    if isinstance(obj, np.ndarray):
        while isinstance(obj.base, np.ndarray):
            obj = obj.base
        return _storage(obj.__array_interface__["data"][0], obj.nbytes, seen)
    if isinstance(obj, (str, bytes, bytearray)):
        return len(obj)
    if isinstance(obj, Image.Image):
        return obj.width * obj.height * _PIL_BYTES.get(obj.mode, 4)
    if isinstance(obj, torch.nn.Module):
        return sum(_size(t, seen) for t in (*obj.parameters(), *obj.buffers()))
    if callable(getattr(obj, "nbytes", None)):  # a Trace: what it holds now (reading computes)
        return obj.nbytes() + _size(obj.mask, seen)
    if isinstance(obj, Mapping):
        parts = [*obj.keys(), *obj.values()]
    elif isinstance(obj, (list, tuple, set, frozenset)):
        parts = obj
    elif dataclasses.is_dataclass(obj):
        parts = [getattr(obj, f.name) for f in dataclasses.fields(obj)]
    else:
        return 0  # None, numbers, anything else: nothing worth counting
    return sum(_size(v, seen) for v in parts)
