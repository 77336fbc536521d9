"""What every class store provides (ui/live/store.py picks one): the primitives, the one
error the app shows (StoreDown), and the small checks both stores share."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

_log = logging.getLogger(__name__)

ENV = "VIT_EXPLAINER_REDIS_URL"

Callback = Callable[[str | None], None]


class StoreDown(Exception):
    """The class store (Redis) does not answer; str() is one sentence for the user."""


class Store(Protocol):
    """What the class logic needs. TTLs are seconds (floats; sub-second works) and must be > 0."""

    shared: bool  # True when other processes see the same data (Redis), False in memory

    def create(self, key: str, value: str, ttl: float) -> bool: ...  # False if key exists
    def get(self, key: str) -> str | None: ...
    def put(self, key: str, value: str, ttl: float) -> None: ...  # overwrite
    def delete(self, *keys: str) -> None: ...
    def touch(self, ttl: float, *keys: str) -> None: ...  # new TTL for each key that exists
    def hsetnx(self, key: str, field: str, value: str, ttl: float) -> bool: ...  # True if set
    def hset(self, key: str, field: str, value: str, ttl: float) -> None: ...  # overwrite
    def hget(self, key: str, field: str) -> str | None: ...
    def hgetall(self, key: str) -> dict[str, str]: ...
    def zadd(self, key: str, member: str, score: float, ttl: float) -> None: ...
    def zcount(self, key: str, low: float, high: float) -> int: ...  # low <= score <= high
    def incr(self, key: str, ttl: float) -> int: ...  # the TTL starts when the key is made
    def publish(self, channel: str, message: str) -> None: ...
    def listen(self, channel: str, callback: Callback) -> None: ...
    def close(self) -> None: ...


def _seconds(ttl: float) -> float:
    if not ttl > 0:
        raise ValueError(f"A time to live must be more than 0 seconds, not {ttl!r}.")
    return float(ttl)


def _call_each(callbacks: list[Callback], message: str | None) -> None:
    """Run every callback; one that raises is logged and the others still run (the thread that
    delivers messages must outlive a broken callback)."""
    for callback in callbacks:
        try:
            callback(message)
        except Exception:
            _log.exception("a class store callback raised; delivering the next message anyway")
