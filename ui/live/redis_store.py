"""The class store shared by replicas: one Redis (deploy/redis.conf), reached through redis-py."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from ui.live.primitives import ENV, Callback, StoreDown, _call_each, _log, _seconds

CONNECT_TIMEOUT = 2.0  # s to open a connection to Redis
SOCKET_TIMEOUT = 2.0  # s to wait for one reply
RETRIES = 3  # after a failed try, then StoreDown; sleeps 0.2, 0.4, 0.8 s between them
RETRY_BASE, RETRY_CAP = 0.1, 1.0  # s: redis-py's ExponentialBackoff sleeps base * 2**failure
RECONNECT_FIRST, RECONNECT_MAX = 0.2, 5.0  # s: the listener's wait after a broken connection
LISTEN_WAIT = 3.0  # s a `listen` call waits for Redis to confirm the subscription
POLL = 1.0  # s the listener blocks on its socket before looking at close()


class RedisStore:
    """The store shared by every replica: one Redis (deploy/redis.conf), reached through
    redis-py. Keys are used as given. Each operation is retried RETRIES times with a short
    exponential backoff, so a dropped connection or a Redis that restarts in about a second does
    not reach the user; after that it raises StoreDown. (A retried write may have been applied
    once already: an answer then reads as given, a counter counts one more.)

    `listen` uses one pub/sub connection per store, read by one daemon thread. The thread
    blocks on the socket (never polls the data), subscribes to a channel when `listen` asks for
    it, and after a broken connection dials again, waiting 0.2 s doubling to 5 s; once
    subscribed again it calls every callback with None, since messages may have been missed."""

    shared = True

    def __init__(self, url: str):
        import redis  # only when Redis is asked for: a lone app process never imports it
        from redis.backoff import ExponentialBackoff, NoBackoff
        from redis.retry import Retry

        self._redis = redis
        options = dict(decode_responses=True, socket_connect_timeout=CONNECT_TIMEOUT,
                       socket_timeout=SOCKET_TIMEOUT)
        try:
            self._client = redis.Redis.from_url(
                url, retry=Retry(ExponentialBackoff(cap=RETRY_CAP, base=RETRY_BASE), RETRIES),
                **options)
            # the listener's own client retries nothing: a broken connection must reach our loop
            # so that it knows to call back with None
            self._subscriber = redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **options)
        except ValueError as error:
            raise ValueError(f"{ENV} must be a Redis URL such as redis://127.0.0.1:6379/0 "
                             f"({error}).") from None
        where = self._client.connection_pool.connection_kwargs  # the URL's parts, parsed
        db = where.get("db", 0)
        if "path" in where:  # unix:///run/redis.sock?db=0
            self.address, shown = f"{where['path']}?db={db}", f"unix://{where['path']}?db={db}"
        else:  # never the password
            self.address = f"{where.get('host', 'localhost')}:{where.get('port', 6379)}/{db}"
            shown = f"redis://{self.address}"
        self._down = f"The class store at {shown} is not answering."
        self._lock = threading.Lock()
        self._confirmed = threading.Condition(self._lock)
        self._callbacks: dict[str, list[Callback]] = {}
        self._subscribed: set[str] = set()  # confirmed by Redis on the current connection
        self._wake = f"vit-explainer-store-wake:{uuid.uuid4().hex}"  # this store's own channel
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()

    @contextmanager
    def _answering(self) -> Iterator[None]:
        """Turn "Redis is unreachable" (or full, or refusing us) into StoreDown with one
        sentence, and a key of the wrong kind into TypeError as MemoryStore does."""
        r = self._redis
        try:
            yield
        except (r.AuthenticationError, r.exceptions.AuthorizationError) as error:
            refused = self._down.replace("is not answering", f"refused the password in {ENV}")
            raise StoreDown(refused) from error
        except (r.ConnectionError, r.TimeoutError) as error:
            raise StoreDown(self._down) from error
        except r.ResponseError as error:
            if "OOM" in str(error):  # deploy/redis.conf's maxmemory, reached: noeviction
                full = self._down.replace("is not answering", "is full (its maxmemory)")
                raise StoreDown(full) from error
            if "WRONGTYPE" in str(error):
                raise TypeError(f"A key holds another kind of value ({error}).") from None
            raise

    def create(self, key: str, value: str, ttl: float) -> bool:
        with self._answering():
            return bool(self._client.set(key, value, nx=True, px=_ms(ttl)))

    def get(self, key: str) -> str | None:
        with self._answering():
            return self._client.get(key)

    def put(self, key: str, value: str, ttl: float) -> None:
        with self._answering():
            self._client.set(key, value, px=_ms(ttl))

    def delete(self, *keys: str) -> None:
        if keys:
            with self._answering():
                self._client.delete(*keys)

    def touch(self, ttl: float, *keys: str) -> None:
        ms = _ms(ttl)
        with self._answering(), self._client.pipeline(transaction=True) as pipe:
            for key in keys:
                pipe.pexpire(key, ms)  # a key that does not exist stays absent
            pipe.execute()

    def hsetnx(self, key: str, field: str, value: str, ttl: float) -> bool:
        with self._answering(), self._client.pipeline(transaction=True) as pipe:
            was_set, _ = pipe.hsetnx(key, field, value).pexpire(key, _ms(ttl)).execute()
        return bool(was_set)

    def hset(self, key: str, field: str, value: str, ttl: float) -> None:
        with self._answering(), self._client.pipeline(transaction=True) as pipe:
            pipe.hset(key, field, value).pexpire(key, _ms(ttl)).execute()

    def hget(self, key: str, field: str) -> str | None:
        with self._answering():
            return self._client.hget(key, field)

    def hgetall(self, key: str) -> dict[str, str]:
        with self._answering():
            return self._client.hgetall(key)

    def zadd(self, key: str, member: str, score: float, ttl: float) -> None:
        with self._answering(), self._client.pipeline(transaction=True) as pipe:
            pipe.zadd(key, {member: score}).pexpire(key, _ms(ttl)).execute()

    def zcount(self, key: str, low: float, high: float) -> int:
        with self._answering():
            return self._client.zcount(key, _bound(low), _bound(high))

    def incr(self, key: str, ttl: float) -> int:
        # SET NX gives a new key its TTL, INCR keeps it: a fixed window that opens on the first
        with self._answering(), self._client.pipeline(transaction=True) as pipe:
            _, count = pipe.set(key, 0, nx=True, px=_ms(ttl)).incr(key).execute()
        return int(count)

    def publish(self, channel: str, message: str) -> None:
        with self._answering():
            self._client.publish(channel, message)

    def listen(self, channel: str, callback: Callback) -> None:
        """Call `callback(message)` for each message on `channel` from any replica, and
        `callback(None)` after a reconnection. Returns once Redis confirmed the subscription,
        so a message published afterwards arrives; raises StoreDown when Redis does not confirm
        within LISTEN_WAIT (the callback stays registered and hears None once Redis is back)."""
        with self._lock:
            self._callbacks.setdefault(channel, []).append(callback)
            if self._thread is None:
                self._thread = threading.Thread(target=self._listen_forever, daemon=True,
                                                name="redis-store-listener")
                self._thread.start()
            if channel in self._subscribed or threading.current_thread() is self._thread:
                return  # (called from a callback: the loop subscribes once it returns)
        self.publish(self._wake, channel)  # the thread wakes up and subscribes
        with self._confirmed:
            if not self._confirmed.wait_for(lambda: channel in self._subscribed, LISTEN_WAIT):
                raise StoreDown(self._down)

    def _listen_forever(self) -> None:
        delay, missed = RECONNECT_FIRST, set()  # missed: channels whose messages may be lost
        while not self._closing.is_set():
            pubsub = self._subscriber.pubsub()
            try:
                pubsub.subscribe(self._wake)
                asked = {self._wake}
                while not self._closing.is_set():
                    with self._lock:
                        wanted = set(self._callbacks) - asked
                    if wanted:
                        pubsub.subscribe(*wanted)
                        asked |= wanted
                    message = pubsub.get_message(timeout=POLL)  # blocks on the socket
                    if message is None:
                        continue
                    channel = message["channel"]
                    if message["type"] == "subscribe":
                        delay = RECONNECT_FIRST
                        with self._confirmed:
                            self._subscribed.add(channel)
                            self._confirmed.notify_all()
                        if channel in missed:
                            missed.discard(channel)
                            self._deliver(channel, None)
                    elif message["type"] == "message" and channel != self._wake:
                        self._deliver(channel, message["data"])
            except Exception as error:  # a broken connection, mostly: dial again
                if self._closing.is_set():
                    break
                _log.warning("class store listener lost Redis at %s (%s); again in %.1f s",
                             self.address, error, delay)
                with self._lock:
                    self._subscribed.clear()
                    missed = set(self._callbacks)
                self._closing.wait(delay)
                delay = min(2 * delay, RECONNECT_MAX)
            finally:
                pubsub.close()

    def _deliver(self, channel: str, message: str | None) -> None:
        with self._lock:
            callbacks = list(self._callbacks.get(channel, ()))
        _call_each(callbacks, message)

    def close(self) -> None:
        self._closing.set()
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            try:  # wake the thread now rather than at its next POLL
                self._subscriber.publish(self._wake, "")
            except self._redis.RedisError:
                pass  # Redis is gone: the thread is waiting on _closing or fails at once
            thread.join(timeout=POLL + 2 * SOCKET_TIMEOUT)
        self._client.close()
        self._subscriber.close()


def _ms(ttl: float) -> int:
    return max(1, round(_seconds(ttl) * 1000))


def _bound(score: float) -> str | float:
    """A zcount bound as Redis spells infinity."""
    return {float("inf"): "+inf", float("-inf"): "-inf"}.get(score, score)
