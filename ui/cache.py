"""One memory budget, in bytes, for everything the app caches that holds traces or copies of them.

Traces, experiment traces, attention summaries (a stacked copy of every pattern), the patch PCA,
generations and prepared images all go into one `ByteLRU`, which drops what it holds (see
below) whenever the bytes would exceed the budget. Sizes are real: a
tensor counts its storage once however many names or views share it (so a Trace counts what
`Trace.nbytes()` counts, plus its mask, and measuring it computes nothing), a numpy array its
buffer, a PIL image its pixels. A lean trace grows when a page reads a block it recomputes (up
to trace.KEEP_BLOCKS blocks), so a hit measures its value again and drops older entries if the
total no longer fits. When the total does not fit, the blocks lean traces recomputed go first
(each is 1/L of a pass to rebuild, and is rebuilt with the same numbers when read again), and
only then whole entries, least recently used first.
A value bigger than the whole budget is returned to its caller but not kept.

The budget is read once per server process (ui/state.py holds the one ByteLRU in
st.cache_resource): `streamlit run app.py -- --cache-mb N`, else the environment variable
VIT_EXPLAINER_CACHE_MB, else DEFAULT_MB. Values are shared between sessions as they are, never
copied: every cached value is read-only.

No Streamlit here, so the class is tested directly.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import Future

import numpy as np
import torch
from PIL import Image

from vit_core.trace import Trace

DEFAULT_MB = 1536  # 1.5 GB: 30 ViT-B/16 students, each a trace with one block read (21 MB), an
# experiment trace (8 MB) and small things, hold ~0.9 GB; room for a second model or image each
ENV = "VIT_EXPLAINER_CACHE_MB"
FLAG = "--cache-mb"
MB = 2**20

_log = logging.getLogger(__name__)
_PIL_BYTES = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I": 4, "F": 4}  # other modes: 4 bytes a pixel


def budget_mb(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> float:
    """The cache budget in MB: `--cache-mb N` on the command line, else $VIT_EXPLAINER_CACHE_MB,
    else DEFAULT_MB. A value that is not a number >= 0 is ignored with a logged warning."""
    argv = sys.argv[1:] if argv is None else argv
    environ = os.environ if environ is None else environ
    ap = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    ap.add_argument(FLAG)
    for where, value in ((FLAG, ap.parse_known_args(argv)[0].cache_mb), (ENV, environ.get(ENV))):
        if value is None or value == "":
            continue
        try:
            mb = float(value)
        except ValueError:
            mb = -1.0
        if mb >= 0 and mb != float("inf"):
            return mb
        _log.warning("%s=%r is not a size in MB; using %s MB", where, value, DEFAULT_MB)
        return DEFAULT_MB
    return DEFAULT_MB


def size_of(value) -> int:
    """Bytes of memory `value` holds: tensors, numpy arrays and PIL images found in it (inside
    dicts, lists, tuples, dataclasses and plain objects such as a Trace), each buffer once."""
    return _size(value, set(), 0)


def _size(obj, seen: set, depth: int) -> int:
    if depth > 8 or obj is None or isinstance(obj, (bool, int, float, complex)):
        return 0
    if isinstance(obj, torch.Tensor):
        storage = obj.untyped_storage()
        ptr = storage.data_ptr()
        if ptr in seen:
            return 0
        seen.add(ptr)
        return storage.nbytes()
    if isinstance(obj, np.ndarray):
        base = obj
        while isinstance(base.base, np.ndarray):
            base = base.base
        ptr = base.__array_interface__["data"][0]
        if ptr in seen:
            return 0
        seen.add(ptr)
        return base.nbytes
    if isinstance(obj, (str, bytes, bytearray)):
        return len(obj)
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, Image.Image):
        return obj.width * obj.height * _PIL_BYTES.get(obj.mode, 4)
    if isinstance(obj, Trace):  # what it holds now; reading its items would recompute blocks
        return sum(_size(v, seen, depth + 1)
                   for v in (*obj.held_tensors(), obj.mask, obj.text_ids))
    if isinstance(obj, Mapping):
        return sum(_size(k, seen, depth + 1) + _size(v, seen, depth + 1) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return sum(_size(v, seen, depth + 1) for v in obj)
    if dataclasses.is_dataclass(obj):
        return sum(_size(getattr(obj, f.name), seen, depth + 1) for f in dataclasses.fields(obj))
    if hasattr(obj, "__dict__"):  # e.g. a Trace: its tensors, mask and text ids
        return sum(_size(v, seen, depth + 1) for v in vars(obj).values())
    return 0


class ByteLRU:
    """A thread-safe least-recently-used cache bounded by the bytes its values hold.

    `get(key, compute)` returns the cached value (the same object every time), or runs
    `compute()` once, even when several threads ask for the same key at once: the others wait
    for the first one's result (or its exception, which is not cached).
    """

    def __init__(self, budget_bytes: int, size: Callable[[object], int] = size_of):
        self.budget = int(budget_bytes)
        self._size = size
        self._items: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._pending: dict[Hashable, Future] = {}
        self._lock = threading.Lock()
        self.held = 0  # bytes held now
        self.hits = self.misses = self.too_big = 0

    def get(self, key: Hashable, compute: Callable[[], object]):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                value, n = self._items[key]
                now = self._size(value)  # a lean trace grows as pages read recomputed blocks
                if now != n:
                    self._items[key] = (value, now)
                    self.held += now - n
                    self._fit()
                return value
            waiting = self._pending.get(key)
            if waiting is None:
                self.misses += 1
                mine = self._pending[key] = Future()
        if waiting is not None:
            return waiting.result()  # computed by another thread (re-raises its exception)
        try:
            value = compute()
            n = self._size(value)
        except BaseException as e:
            with self._lock:
                del self._pending[key]
            mine.set_exception(e)
            raise
        with self._lock:
            del self._pending[key]
            if n <= self.budget:
                self._items[key] = (value, n)
                self.held += n
                self._fit()
            else:
                self.too_big += 1
        mine.set_result(value)
        return value

    def _fit(self) -> None:
        """Make the held bytes fit (under the lock): first the recomputed blocks of lean traces
        go, least recently used first and never the newest entry's (a block is 1/L of a pass to
        rebuild); then, if that is not enough, the least recently used entries."""
        if self.held > self.budget:
            for key in list(self._items)[:-1]:
                value, n = self._items[key]
                if isinstance(value, Trace) and value.forget_recomputed():
                    now = self._size(value)
                    self._items[key] = (value, now)
                    self.held += now - n
                    if self.held <= self.budget:
                        return
        while self.held > self.budget and self._items:
            _, (_, dropped) = self._items.popitem(last=False)
            self.held -= dropped

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def keys(self) -> list:
        """Keys from least to most recently used."""
        with self._lock:
            return list(self._items)

    def clear(self, where: Callable[[Hashable], bool] | None = None) -> None:
        """Drop every entry, or those whose key satisfies `where`."""
        with self._lock:
            for key in [k for k in self._items if where is None or where(k)]:
                self.held -= self._items.pop(key)[1]

    def stats(self) -> dict:
        with self._lock:
            return {"budget_mb": self.budget / MB, "held_mb": self.held / MB,
                    "entries": len(self._items), "hits": self.hits, "misses": self.misses,
                    "too_big": self.too_big}
