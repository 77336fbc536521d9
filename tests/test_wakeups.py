"""ui/wakeups.py: callbacks queued from other threads all run, on fewer wake-up bytes, and a
loop that went back to sleep wakes for the next one."""

from __future__ import annotations

import asyncio
import threading

import pytest

from ui import wakeups


class _CountingSocket:
    """The loop's writing end of its self-pipe, counting the bytes written."""

    def __init__(self, sock):
        self.sock, self.sends = sock, 0

    def send(self, data):
        self.sends += 1
        return self.sock.send(data)

    def __getattr__(self, name):
        return getattr(self.sock, name)


@pytest.fixture
def loop(monkeypatch):
    """A selector loop running in its own thread, with the wake-ups coalesced: from asyncio's
    own methods (an AppTest run of app.py in this process installed them already), and put
    back as they were after."""
    monkeypatch.setattr(wakeups.BASE, "_write_to_self", wakeups.WRITE)
    monkeypatch.setattr(wakeups.UNIX, "_process_self_data", wakeups.PROCESS)
    assert wakeups.install()
    assert not wakeups.install()  # once
    lp = asyncio.new_event_loop()
    lp._csock = _CountingSocket(lp._csock)
    runner = threading.Thread(target=lp.run_forever, daemon=True)
    runner.start()
    yield lp
    lp.call_soon_threadsafe(lp.stop)
    runner.join(5)
    lp.close()


def test_a_burst_from_four_threads_runs_every_callback_on_fewer_bytes(loop):
    ran, done = [], threading.Event()
    total = 4 * 500

    def note(i):
        ran.append(i)
        if len(ran) == total:
            done.set()

    def burst(k):
        for i in range(500):
            loop.call_soon_threadsafe(note, k * 500 + i)

    threads = [threading.Thread(target=burst, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert done.wait(10), f"{len(ran)} of {total} callbacks ran"
    assert sorted(ran) == list(range(total))
    assert loop._csock.sends <= total // 4, loop._csock.sends  # without: one byte per callback


def test_a_sleeping_loop_wakes_for_each_later_callback(loop):
    for _ in range(50):  # each time the loop has read the last byte and sleeps in select()
        woke = threading.Event()
        threading.Timer(0.005, loop.call_soon_threadsafe, args=(woke.set,)).start()
        assert woke.wait(2), "a callback queued after the last wake-up never ran"
