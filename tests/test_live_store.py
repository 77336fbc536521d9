"""The class store (ui/live/store.py): one contract, run on MemoryStore and on RedisStore
against a real `redis-server` this module starts, checked against expectations written by hand.

Then what only Redis has: two stores on one server are two replicas; a Redis killed with -9 and
started again on the same folder still holds every acknowledged answer (AOF), and the listener
dials again and says None; a Redis that is not there raises StoreDown in seconds, not a hang.
CI installs redis-server (.ci/run); elsewhere the Redis half is skipped when it is missing.
"""

import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from ui.live import memory as memory_module
from ui.live import store as store_module
from ui.live.store import MemoryStore, RedisStore, StoreDown, describe, open_store

ROOT = Path(__file__).resolve().parents[1]
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ping(port: int) -> bool:
    """Redis's PING spoken on a raw socket (not through the client under test)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")  # "-LOADING" while it reads its AOF
    except OSError:
        return False


class RedisServer:
    """One redis-server subprocess with the AOF settings of deploy/redis.conf; it can be killed
    with -9 and started again on the same port and folder."""

    def __init__(self, folder: Path, config: Path | None = None):
        if not Path(REDIS_SERVER).exists():
            if os.environ.get("CI"):
                pytest.fail("CI must install redis-server for the class store tests (.ci/run)")
            pytest.skip("redis-server is not installed")
        self.folder, self.config, self.port = folder, config, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> "RedisServer":
        command = [REDIS_SERVER] + ([str(self.config)] if self.config else []) + [
            "--port", str(self.port), "--dir", str(self.folder)]
        if not self.config:
            command += ["--bind", "127.0.0.1", "--appendonly", "yes", "--appendfsync", "always",
                        "--save", ""]
        self.process = subprocess.Popen(command, cwd=self.folder, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not ping(self.port):
            assert self.process.poll() is None, f"redis-server exited: {command}"
            assert time.monotonic() < deadline, "redis-server did not answer PING in 60 s"
            time.sleep(0.02)
        return self

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()  # SIGKILL: no shutdown, no final save
            self.process.wait()


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.kill()


@pytest.fixture
def own_redis(tmp_path):
    server = RedisServer(tmp_path).start()
    yield server
    server.kill()


@pytest.fixture(params=["memory", "redis"])
def store(request):
    if request.param == "memory":
        s = MemoryStore()
    else:
        server = request.getfixturevalue("redis_server")
        s = RedisStore(server.url)
        s._client.flushdb()  # one server for the module: every test starts empty
    yield s
    s.close()


TTL = 1.0  # s: the lifetime the expiry tests give their keys


def wait_until(condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# ---- the contract, on both stores ----

def test_create_is_first_come(store):
    assert store.create("class:AB12", "first", 60) is True
    assert store.create("class:AB12", "second", 60) is False
    assert store.get("class:AB12") == "first"
    assert store.get("class:none") is None
    store.put("class:AB12", "moved", 60)
    assert store.get("class:AB12") == "moved"


def test_a_class_carries_the_teachers_settings(store):
    """A position's settings (the experiment, the training step, the input size, …: lists,
    numbers and text) come back from the store as they went in, and a changed one is a move."""
    from ui.live import classes

    there = classes.Position("experiments", "change", 5, 0, 24, {
        "experiment": "Grey out patches", "greyed": [16, 17, 23], "train_step": 3300,
        "size": 288, "class_temperature": 2.5, "query_is_cls": True})
    c, secret = classes.start(store, there)
    assert classes.get(store, c.code).position == there
    moved = dict(there.settings, greyed=[16, 17])
    after = classes.move(store, c.code, secret, classes.Position(
        "experiments", "change", 5, 0, 24, moved))
    assert after.version == c.version + 1
    assert classes.get(store, c.code).position.settings == moved
    import json  # a class written before positions had settings still loads

    before = json.loads(store.get(f"vitx:class:{c.code}"))
    del before["position"]["settings"]
    store.put(f"vitx:class:{c.code}", json.dumps(before), 60)
    assert classes.get(store, c.code).position == classes.Position("experiments", "change", 5,
                                                                   0, 24)


def test_everything_expires_and_touch_extends(store):
    """Lifetimes of TTL s, with TTL/2 or more of slack either side of each look (a thread on a
    busy machine may sleep longer than asked)."""
    store.create("c", "x", TTL)
    store.put("p", "x", TTL)
    store.put("kept", "x", TTL)
    store.hsetnx("h", "f", "x", TTL)
    store.zadd("z", "m", 1.0, TTL)
    assert store.incr("n", TTL) == 1
    time.sleep(0.1)
    store.touch(60, "kept", "never-made")
    time.sleep(TTL)  # TTL + 0.1 s after they were made
    assert store.get("c") is None and store.get("p") is None
    assert store.hgetall("h") == {} and store.zcount("z", 0, 2) == 0
    assert store.incr("n", TTL) == 1  # a new window
    assert store.get("kept") == "x"
    assert store.get("never-made") is None  # touch makes nothing
    assert store.create("c", "again", TTL) is True  # an expired key is free again


def test_hsetnx_keeps_the_first_answer_and_refreshes_the_ttl(store):
    assert store.hsetnx("answers", "s1|patches/2", "7", TTL) is True
    time.sleep(0.6 * TTL)
    assert store.hsetnx("answers", "s1|patches/2", "9", TTL) is False
    assert store.hsetnx("answers", "s2|patches/2", "3", TTL) is True
    time.sleep(0.6 * TTL)  # 1.2 TTL after the first, 0.6 TTL after the refresh
    assert store.hgetall("answers") == {"s1|patches/2": "7", "s2|patches/2": "3"}
    assert store.hget("answers", "s2|patches/2") == "3"
    assert store.hget("answers", "s3|patches/2") is None and store.hget("nothing", "x") is None


def test_hset_overwrites_a_field_and_refreshes_the_ttl(store):
    store.hsetnx("answers", "s1|why/guess", "pending", TTL)
    time.sleep(0.6 * TTL)
    store.hset("answers", "s1|why/guess", "scored", TTL)  # a guess scored after it was sent
    store.hset("answers", "s2|why/guess", "new", TTL)
    time.sleep(0.6 * TTL)  # 1.2 TTL after the first write, 0.6 TTL after the overwrite
    assert store.hgetall("answers") == {"s1|why/guess": "scored", "s2|why/guess": "new"}


def test_zcount_counts_inclusive_windows(store):
    for member, score in [("a", 1.0), ("b", 2.0), ("c", 3.0), ("a", 5.0)]:  # a moves to 5
        store.zadd("seen", member, score, 60)
    assert store.zcount("seen", 0, 2) == 1
    assert store.zcount("seen", 2, 3) == 2
    assert store.zcount("seen", 4, float("inf")) == 1
    assert store.zcount("seen", float("-inf"), float("inf")) == 3
    assert store.zcount("seen", 3.5, 4.5) == 0
    assert store.zcount("nobody", 0, 10) == 0


def test_incr_counts_in_a_fixed_window(store):
    assert [store.incr("tries", TTL) for _ in range(3)] == [1, 2, 3]
    assert store.get("tries") == "3"
    time.sleep(0.6 * TTL)
    assert store.incr("tries", TTL) == 4  # a later INCR does not push the window on
    time.sleep(0.6 * TTL)
    assert store.get("tries") is None


def test_delete_removes_only_those_keys(store):
    store.put("a", "1", 60)
    store.put("b", "2", 60)
    store.hsetnx("h", "f", "v", 60)
    store.delete("a", "h", "missing")
    store.delete()
    assert store.get("a") is None and store.hgetall("h") == {}
    assert store.get("b") == "2"


def test_wrong_kind_and_bad_ttl_are_refused(store):
    store.put("k", "v", 60)
    with pytest.raises(TypeError):
        store.hsetnx("k", "f", "v", 60)
    with pytest.raises(ValueError):
        store.put("k", "v", 0)


def test_concurrent_hsetnx_has_one_winner(store):
    barrier, results, errors = threading.Barrier(8), {}, []

    def answer(i):
        try:
            barrier.wait()
            results[i] = store.hsetnx("answers", "s1|qkv/1", f"from {i}", 60)
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=answer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 8
    winners = [i for i, won in results.items() if won]
    assert len(winners) == 1
    assert store.hgetall("answers") == {"s1|qkv/1": f"from {winners[0]}"}


def test_listeners_hear_every_message_in_order(store):
    heard, other = [], []

    def broken(message):
        raise RuntimeError("a callback that fails must not stop the others")

    store.listen("moves", broken)
    store.listen("moves", heard.append)
    store.listen("ends", other.append)
    for message in ["AB12 patches/1", "AB12 patches/2", "AB12 qkv/0"]:
        store.publish("moves", message)
    store.publish("nobody-listens", "lost")
    assert wait_until(lambda: len(heard) == 3)
    assert heard == ["AB12 patches/1", "AB12 patches/2", "AB12 qkv/0"]
    assert other == []


def test_making_a_store_starts_nothing(redis_server):
    before = threading.active_count()
    stores = [MemoryStore(), RedisStore(redis_server.url)]
    assert threading.active_count() == before
    stores[1].listen("moves", lambda message: None)
    assert threading.active_count() == before + 1  # the listener, lazily
    for s in stores:
        s.close()


def test_memory_sweep_drops_keys_nobody_reads(monkeypatch):
    monkeypatch.setattr(memory_module, "SWEEP_EVERY", 4)
    s = MemoryStore()
    for i in range(3):
        s.put(f"old{i}", "x", 0.05)
    time.sleep(0.1)
    s.put("new", "x", 60)  # the 4th write sweeps
    assert list(s._data) == ["new"]


# ---- Redis: replicas, restarts, outages ----

def test_two_replicas_share_data_and_messages(redis_server):
    one, two = RedisStore(redis_server.url), RedisStore(redis_server.url)
    heard = []
    two.listen("moves", heard.append)
    clock = time.pthread_getcpuclockid(two._thread.ident)  # the listener's own CPU time
    start = time.clock_gettime(clock)
    time.sleep(0.5)
    assert time.clock_gettime(clock) - start < 0.1  # the idle listener blocks, it does not spin
    one.publish("moves", "AB12 mlp/0")
    assert wait_until(lambda: heard == ["AB12 mlp/0"])
    one.put("class:AB12", "state", 60)
    assert two.get("class:AB12") == "state"
    assert two.shared and not MemoryStore().shared
    one.close()
    two.close()


def test_redis_restart_loses_no_answer_and_the_listener_comes_back(own_redis):
    s = RedisStore(own_redis.url)
    heard = []
    s.listen("moves", heard.append)
    for i in range(50):
        assert s.hsetnx("answers", f"s{i}|patches/2", str(i), 600)
    own_redis.kill()
    own_redis.start()  # same port, same folder: it reads its AOF back
    assert s.hgetall("answers") == {f"s{i}|patches/2": str(i) for i in range(50)}
    assert wait_until(lambda: None in heard)  # after 0.2 + 0.4 + ... s of backoff
    s.publish("moves", "after the restart")
    assert wait_until(lambda: "after the restart" in heard)
    s.close()


def test_a_missing_redis_raises_store_down_after_three_short_retries(monkeypatch):
    """The waits between tries (redis-py's Retry sleeps them) are recorded, not slept: 0.2 + 0.4
    + 0.8 s, then StoreDown; a refused connection itself returns at once."""
    import redis.retry

    port = free_port()  # nothing listens there
    s = RedisStore(f"redis://:hunter2@127.0.0.1:{port}/0")
    waits = []
    monkeypatch.setattr(redis.retry, "sleep", waits.append)
    with pytest.raises(StoreDown) as caught:
        s.hsetnx("answers", "s1|qkv/1", "3", 60)
    assert waits == pytest.approx([0.2, 0.4, 0.8])
    assert str(caught.value) == f"The class store at redis://127.0.0.1:{port}/0 is not answering."
    s.close()


# ---- choosing and naming the store ----

def test_open_store_follows_the_environment(monkeypatch):
    monkeypatch.setattr(store_module, "_store", None)
    monkeypatch.delenv(store_module.ENV, raising=False)
    made = open_store()
    assert isinstance(made, MemoryStore) and open_store() is made
    assert describe(made) == "memory of this process"

    monkeypatch.setattr(store_module, "_store", None)
    monkeypatch.setenv(store_module.ENV, "redis://:secret@127.0.0.1:6390/2")
    made = open_store()  # connects to nothing until used
    assert isinstance(made, RedisStore) and open_store() is made
    assert describe(made) == "Redis at 127.0.0.1:6390/2"
    made.close()

    monkeypatch.setattr(store_module, "_store", None)
    monkeypatch.setenv(store_module.ENV, "  ")
    assert isinstance(open_store(), MemoryStore)


def test_a_bad_url_is_one_sentence():
    with pytest.raises(ValueError, match=r"^VIT_EXPLAINER_REDIS_URL must be a Redis URL"):
        RedisStore("http://127.0.0.1:6379")


def test_deploy_config_keeps_answers(tmp_path):
    """deploy/redis.conf as the docs start it: AOF fsynced on every write, nothing evicted."""
    server = RedisServer(tmp_path, config=ROOT / "deploy" / "redis.conf").start()
    try:
        client = RedisStore(server.url)._client
        settings = {name: client.config_get(name)[name] for name in
                    ["appendonly", "appendfsync", "maxmemory-policy", "bind", "save"]}
        assert settings == {"appendonly": "yes", "appendfsync": "always",
                            "maxmemory-policy": "noeviction", "bind": "127.0.0.1", "save": ""}
        assert int(client.config_get("maxmemory")["maxmemory"]) > 0
        client.close()
    finally:
        server.kill()
