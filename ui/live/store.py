"""Where a live class is kept: this process's memory, or Redis shared by every replica.

Storage primitives only (strings, hashes, sorted sets, counters, pub/sub), each with a time to
live so a forgotten class vanishes by itself; the class logic (ui/live/classes.py) is written on
top of them and prefixes its keys. Both stores behave the same, so the logic and its tests do
not care which one they run on:

    MemoryStore()                              one `streamlit run`: a dict behind a lock
    RedisStore("redis://127.0.0.1:6379/0")     replicas behind HAProxy: every one sees the class

`open_store()` picks one for the process from VIT_EXPLAINER_REDIS_URL. Nothing here connects,
starts a thread or reads the environment at import or when a store is made: Redis is dialled on
the first operation, and the thread that delivers messages starts on the first `listen`.

A Redis that does not answer (down, restarting for longer than the retries cover) raises
`StoreDown` with one sentence the app can show. Messages published while a listener was cut off
are lost (Redis pub/sub keeps nothing), so after every reconnection the listener calls its
callbacks with None: "you may have missed messages, re-read the store".
"""

from __future__ import annotations

import os
import threading

from ui.live.memory import MemoryStore
from ui.live.primitives import ENV, Store, StoreDown
from ui.live.redis_store import RedisStore

__all__ = ["ENV", "MemoryStore", "RedisStore", "Store", "StoreDown", "describe", "open_store"]

_store: Store | None = None
_store_lock = threading.Lock()


def open_store() -> Store:
    """The store of this process, made on the first call: Redis at VIT_EXPLAINER_REDIS_URL when
    that is set (every replica must point at the same one), else this process's memory."""
    global _store
    with _store_lock:
        if _store is None:
            url = os.environ.get(ENV, "").strip()
            _store = RedisStore(url) if url else MemoryStore()
        return _store


def describe(store: Store) -> str:
    """Where the classes live, for the app to say: never shows a password."""
    if isinstance(store, RedisStore):
        return f"Redis at {store.address}"
    return "memory of this process"
