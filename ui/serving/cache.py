"""One memory budget, in bytes, for the models and everything the app computes from them.

Models, prepared images, traces, summaries and generations go into one `ByteLRU`, which drops
the least recently used entries when their bytes exceed the budget. Sizes are real
(ui/serving/sizes.py);
a trace grows when a page reads a block it recomputes, so a hit measures it again. Dropping an
entry drops the entries it owns: an evicted model takes what was computed with it, so nothing
keeps it alive uncounted. A value bigger than the budget is not kept.
The budget: `streamlit run app.py -- --cache-mb N`, else $VIT_EXPLAINER_CACHE_MB, else
DEFAULT_MB, read once per server process. Values are read-only and shared between sessions.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import Future

from ui.serving import options
from ui.serving.sizes import size_of

DEFAULT_MB = options.DEFAULT_CACHE_MB  # 2 GB (ui/serving/options.py says why)
ENV = options.CACHE_ENV
FLAG = options.CACHE_FLAG
MB = 2**20

_log = logging.getLogger(__name__)


def budget_mb(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> float:
    """The cache budget in MB as ui/serving/options.py reads it: `--cache-mb N` on the command
    line, else
    $VIT_EXPLAINER_CACHE_MB, else DEFAULT_MB (a value that is not a number >= 0 is ignored with
    a logged warning). `argv`, `environ`: others than this server's."""
    if argv is None and environ is None:
        return options.current().cache_mb
    return options.parse(sys.argv[1:] if argv is None else argv,
                         os.environ if environ is None else environ).cache_mb


@dataclasses.dataclass
class _Entry:
    value: object
    nbytes: int
    owner: Hashable | None  # dropped with this entry's owner


class ByteLRU:
    """A thread-safe least-recently-used cache bounded by the bytes its values hold.
    `get(key, compute, owner)` returns the cached value (the same object every time), or runs
    `compute()` once however many threads ask at once: the others wait for its result (or its
    exception, which is not cached)."""

    def __init__(self, budget_bytes: int, size: Callable[[object], int] = size_of):
        self.budget = int(budget_bytes)
        self._size = size
        self._items: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._pending: dict[Hashable, Future] = {}
        self._lock = threading.Lock()
        self.held = 0  # bytes held now

    def get(self, key: Hashable, compute: Callable[[], object], owner: Hashable | None = None):
        with self._lock:
            entry = self._items.get(key)
            if entry is not None:
                self._items.move_to_end(key)
                if callable(getattr(entry.value, "nbytes", None)):  # a trace grows when read
                    now = self._size(entry.value)
                    self.held += now - entry.nbytes
                    entry.nbytes = now
                    self._fit()
                return entry.value
            waiting = self._pending.get(key)
            if waiting is None:
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
            if n <= self.budget and (owner is None or owner in self._items):
                self._items[key] = _Entry(value, n, owner)
                self.held += n
                self._fit()
        mine.set_result(value)
        return value

    def _fit(self) -> None:
        """Drop the least recently used entries, and what they own, until the bytes fit."""
        while self.held > self.budget and self._items:
            self._drop(next(iter(self._items)))

    def _drop(self, key: Hashable) -> None:
        entry = self._items.pop(key, None)
        if entry is None:
            return
        self.held -= entry.nbytes
        for k in [k for k, e in self._items.items() if e.owner == key]:
            self._drop(k)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def keys(self) -> list:
        """Keys from least to most recently used."""
        with self._lock:
            return list(self._items)

    def clear(self, where: Callable[[Hashable], bool] | None = None) -> None:
        """Drop every entry, or those whose key satisfies `where` (and what they own)."""
        with self._lock:
            for key in [k for k in self._items if where is None or where(k)]:
                self._drop(key)
