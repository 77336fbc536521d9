"""The class store of a single app process: a dict of keys with deadlines behind one lock."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass

from ui.live.primitives import Callback, _call_each, _seconds

SWEEP_EVERY = 256  # MemoryStore: drop every expired key once per this many create/put calls


@dataclass(slots=True)
class _Entry:
    kind: str  # "string" | "hash" | "zset", as Redis's TYPE names them
    value: object  # str | dict[str, str] (hash) | dict[str, float] (zset: member -> score)
    deadline: float  # time.monotonic() at which the key vanishes


class MemoryStore:
    """The store of a single app process: a dict of keys with deadlines behind one lock
    (Streamlit runs each session on its own thread). An expired key vanishes when it is next
    read, and a sweep every SWEEP_EVERY writes drops the ones nobody reads again. Published
    messages reach this process's listeners on one daemon thread, as with Redis: `publish`
    returns at once and a slow callback delays only the later messages."""

    shared = False

    def __init__(self):
        self._lock = threading.Lock()
        self._data: dict[str, _Entry] = {}
        self._writes = 0
        self._callbacks: dict[str, list[Callback]] = {}
        self._outbox: queue.SimpleQueue[tuple[str, str] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    # under self._lock from here to _sweep
    def _entry(self, key: str, kind: str) -> _Entry | None:
        entry = self._data.get(key)
        if entry is not None and entry.deadline <= time.monotonic():
            del self._data[key]
            return None
        if entry is not None and entry.kind != kind:
            raise TypeError(f"The key {key!r} holds a {entry.kind}, not a {kind}.")
        return entry

    def _new(self, key: str, kind: str, value: object, ttl: float) -> _Entry:
        entry = self._data[key] = _Entry(kind, value, time.monotonic() + _seconds(ttl))
        return entry

    def _sweep(self) -> None:
        self._writes += 1
        if self._writes % SWEEP_EVERY == 0:
            now = time.monotonic()
            for key in [k for k, e in self._data.items() if e.deadline <= now]:
                del self._data[key]

    def create(self, key: str, value: str, ttl: float) -> bool:
        with self._lock:
            self._sweep()
            if self._data.get(key) is not None and self._data[key].deadline > time.monotonic():
                return False
            self._new(key, "string", value, ttl)
            return True

    def get(self, key: str) -> str | None:
        with self._lock:
            entry = self._entry(key, "string")
            return None if entry is None else entry.value

    def put(self, key: str, value: str, ttl: float) -> None:
        with self._lock:
            self._sweep()
            self._new(key, "string", value, ttl)

    def delete(self, *keys: str) -> None:
        with self._lock:
            for key in keys:
                self._data.pop(key, None)

    def touch(self, ttl: float, *keys: str) -> None:
        deadline = time.monotonic() + _seconds(ttl)
        with self._lock:
            for key in keys:
                entry = self._data.get(key)
                if entry is not None and entry.deadline > time.monotonic():
                    entry.deadline = deadline

    def hsetnx(self, key: str, field: str, value: str, ttl: float) -> bool:
        with self._lock:
            entry = self._entry(key, "hash") or self._new(key, "hash", {}, ttl)
            entry.deadline = time.monotonic() + _seconds(ttl)
            if field in entry.value:
                return False
            entry.value[field] = value
            return True

    def hset(self, key: str, field: str, value: str, ttl: float) -> None:
        with self._lock:
            entry = self._entry(key, "hash") or self._new(key, "hash", {}, ttl)
            entry.deadline = time.monotonic() + _seconds(ttl)
            entry.value[field] = value

    def hget(self, key: str, field: str) -> str | None:
        with self._lock:
            entry = self._entry(key, "hash")
            return None if entry is None else entry.value.get(field)

    def hgetall(self, key: str) -> dict[str, str]:
        with self._lock:
            entry = self._entry(key, "hash")
            return {} if entry is None else dict(entry.value)

    def zadd(self, key: str, member: str, score: float, ttl: float) -> None:
        with self._lock:
            entry = self._entry(key, "zset") or self._new(key, "zset", {}, ttl)
            entry.deadline = time.monotonic() + _seconds(ttl)
            entry.value[member] = float(score)

    def zcount(self, key: str, low: float, high: float) -> int:
        with self._lock:
            entry = self._entry(key, "zset")
            return 0 if entry is None else sum(low <= s <= high for s in entry.value.values())

    def incr(self, key: str, ttl: float) -> int:
        with self._lock:
            entry = self._entry(key, "string") or self._new(key, "string", "0", ttl)
            entry.value = str(int(entry.value) + 1)
            return int(entry.value)

    def publish(self, channel: str, message: str) -> None:
        with self._lock:
            if channel in self._callbacks:
                self._outbox.put((channel, message))

    def listen(self, channel: str, callback: Callback) -> None:
        with self._lock:
            self._callbacks.setdefault(channel, []).append(callback)
            if self._thread is None:
                self._thread = threading.Thread(target=self._deliver, name="memory-store-listener",
                                                daemon=True)
                self._thread.start()

    def _deliver(self) -> None:
        while (item := self._outbox.get()) is not None:
            channel, message = item
            with self._lock:
                callbacks = list(self._callbacks.get(channel, ()))
            _call_each(callbacks, message)  # never under the lock: a callback may use the store

    def close(self) -> None:
        with self._lock:
            self._callbacks.clear()
            thread, self._thread = self._thread, None
        if thread is not None:
            self._outbox.put(None)
            thread.join(timeout=5)
