"""One thread runs the forward passes of every session, and keeps memory warm for the next one.

Why one thread (measured on this project's 2-core VM, README "Performance"):
- torch already spreads one pass over both cores; two passes at once only fight for them, so
  passes from several sessions wait in a queue here and each finishes sooner.
- A cached ViT-B/16 trace keeps ~170 MB. Memory this process has never touched is slow to get on
  this machine: filling 170 MB of new memory spends 0.3-0.6 s in the kernel, more than the pass
  itself (0.27 s). Memory freed and reused costs nothing, but glibc gives every thread its own
  arena and Streamlit runs each script run on a new thread, so the next trace rarely found the
  memory the last one freed. On one thread it always does.
- When app.py has asked glibc to keep freed memory (ui/process.py), and the queue has been idle
  for a moment, the worker touches and frees as much memory as the last pass kept: the next new
  image gets warm memory. Chromium first view of a new photo on ViT-B/16, medians of 5
  interleaved runs: 1.47 / 1.21 / 1.30 s without the worker, 0.99 / 0.89 / 0.91 s with it.

No Streamlit here: `run` is called from ui.state's cached functions. The thread starts on the
first `run`, not when this module is imported.
"""

from __future__ import annotations

import atexit
import queue
import threading
from concurrent.futures import Future

import torch

from .process import MMAP_THRESHOLD, memory_is_kept

IDLE_S = 1.0  # warm memory only after the queue has been quiet this long (the page is drawn)
BLOCK = MMAP_THRESHOLD // 2  # warm in blocks under the mmap threshold, so freeing keeps them
_STOP = object()


def _nbytes(result) -> int:
    """Bytes a result keeps: Trace.nbytes() (a method) or a tensor's .nbytes; 0 if unknown."""
    n = getattr(result, "nbytes", 0)
    try:
        return int(n() if callable(n) else n)
    except (TypeError, ValueError):
        return 0


class Worker:
    """A single thread that runs submitted calls in order."""

    def __init__(self, warm: bool):
        self.jobs: queue.Queue = queue.Queue()
        self.warm = warm
        self.to_warm = 0  # bytes the last pass kept
        self.warmed = 0  # bytes touched and freed so far (tests read it)
        self.thread = threading.Thread(target=self._loop, name="vit-forward", daemon=True)
        self.thread.start()
        # Let the thread leave torch before the interpreter goes: a daemon thread caught inside
        # a torch op at exit aborts the process ("terminate called without an active exception").
        atexit.register(self.stop)

    def run(self, fn, *args, **kwargs):
        """fn(*args, **kwargs) on the worker thread; its result, or its exception re-raised."""
        if not self.thread.is_alive():
            raise RuntimeError("The forward-pass worker has stopped (the server is shutting down).")
        done: Future = Future()
        self.jobs.put((done, fn, args, kwargs))
        return done.result()

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the queued calls, then end the thread (waits at most `timeout` seconds)."""
        self.jobs.put(_STOP)
        self.thread.join(timeout)

    def _loop(self) -> None:
        while True:
            try:
                job = self.jobs.get(timeout=IDLE_S if self.to_warm else None)
            except queue.Empty:
                try:
                    self._warm()
                except (MemoryError, RuntimeError):  # warming is only a favour
                    pass
                continue
            if job is _STOP:
                return
            done, fn, args, kwargs = job
            try:
                result = fn(*args, **kwargs)
            except BaseException as e:  # handed to the caller, never kills the worker
                done.set_exception(e)
                continue
            done.set_result(result)
            if self.warm:
                self.to_warm = _nbytes(result)

    def _warm(self) -> None:
        n, self.to_warm = self.to_warm, 0
        blocks = [torch.ones(BLOCK // 4) for _ in range(-(-n // BLOCK))]
        self.warmed += len(blocks) * BLOCK
        del blocks


_shared: Worker | None = None
_start_lock = threading.Lock()


def shared() -> Worker:
    """The one worker every session uses, started on first use."""
    global _shared
    with _start_lock:
        if _shared is None:
            _shared = Worker(warm=memory_is_kept())
        return _shared


def run(fn, *args, **kwargs):
    """fn(*args, **kwargs) on the shared worker thread (see Worker.run)."""
    return shared().run(fn, *args, **kwargs)
