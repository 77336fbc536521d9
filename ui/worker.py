"""One thread runs the forward passes of every session, fairly, and keeps memory warm for the next.

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

Fair turns. A job is one forward pass, never more. A long job (a caption is up to 10 passes, one
per word) is a loop on its caller's thread that hands the worker one pass at a time (`run_step`,
or `stepwise(model)` for vit_core.generate), so between two of its passes other work gets in:
- `run` (a page's trace, an experiment: one pass) is served first, in arrival order, so a new
  student's first view waits for at most the pass in progress, not for someone's whole caption;
- `run_step` calls queue behind them; each long job has one step queued at a time, so long jobs
  take turns (round robin). After FRESH_IN_A_ROW `run` calls in a row a waiting step gets its
  turn, so a stream of new students delays a caption but never stops it;
- a pass of a model whose passes take under CHEAP_S of the worker's CPU time (a bundled
  captioner's word: ~10 ms, its traced pass ~20 ms; a ViT-B/16 pass ~300 ms) runs on a second
  thread, `vit-light`, at once, even while a big pass is in progress on the first: a caption
  of ten such words would otherwise wait for ten other students' ViT-B/16 passes to finish, one
  per word, and hold its page for seconds. Ten 10 ms passes beside a big one slow it by little.
  Callers say which model a pass is with `cost_key`; a model runs on the big lane until its cost
  is known. Its cost is the least CPU time one of its passes took: on a busy server cache misses
  and other threads only add to a pass's time, and one slow pass would otherwise send the model
  back to the queue of big passes.
Every wait has a limit (LIMIT_S unless `timeout=` says otherwise): past it the caller gets `Busy`,
whose message is one sentence for the page, and the job is dropped if it has not started.

No Streamlit here: `run` is called from ui.state's cached functions. The threads start on the
first `run`, not when this module is imported.
"""

from __future__ import annotations

import atexit
import threading
import time
from collections import deque
from concurrent.futures import Future, wait

import torch

from vit_core import recorded

from .process import MMAP_THRESHOLD, memory_is_kept

IDLE_S = 1.0  # warm memory only after the queue has been quiet this long (the page is drawn)
BLOCK = MMAP_THRESHOLD // 2  # warm in blocks under the mmap threshold, so freeing keeps them
LIMIT_S = 60.0  # the longest any caller waits for one pass (its turn included)
FRESH_IN_A_ROW = 4  # one-pass calls served in a row while a long job's step waits
CHEAP_S = 0.05  # a pass of a model whose cheapest pass took less than this: the light thread


class Busy(TimeoutError):
    """A wait for the worker passed its limit; the message is the sentence to show."""


def _nbytes(result) -> int:
    """Bytes a result keeps: Trace.nbytes() (a method) or a tensor's .nbytes; 0 if unknown."""
    n = getattr(result, "nbytes", 0)
    try:
        return int(n() if callable(n) else n)
    except (TypeError, ValueError):
        return 0


class _Job:
    def __init__(self, fn, args, kwargs, cost_key=None):
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.cost_key = cost_key  # steps: which model's pass this is (its cost is remembered)
        self.done: Future = Future()
        self.dropped = False  # its caller stopped waiting: skip it if it has not started


class Worker:
    """A thread that runs submitted calls (one-pass calls first, long jobs' steps in turn), and a
    second one for the passes of cheap models."""

    def __init__(self, warm: bool):
        self.fresh: deque[_Job] = deque()  # `run`: first views, experiments (one pass each)
        self.steps: deque[_Job] = deque()  # `run_step`: the next pass of a long job
        self.light: deque[_Job] = deque()  # any pass of a model known to cost < CHEAP_S
        self.served_ahead = 0  # `run` calls served since a step started waiting
        self.running = False  # the first thread is in a pass
        self.last_pass = 0.0  # time.monotonic() when the first thread's last pass ended
        self.cost: dict = {}  # a cost_key -> the fewest CPU seconds one of its passes took
        self.lock = threading.Condition()
        self.stopping = False
        self.warm = warm
        self.to_warm = 0  # bytes the last pass kept
        self.warmed = 0  # bytes touched and freed so far (tests read it)
        self.thread = threading.Thread(target=self._loop, name="vit-forward", daemon=True)
        self.light_thread = threading.Thread(target=self._light_loop, name="vit-light",
                                             daemon=True)
        self.thread.start()
        self.light_thread.start()
        # Let the thread leave torch before the interpreter goes: a daemon thread caught inside
        # a torch op at exit aborts the process ("terminate called without an active exception").
        atexit.register(self.stop)

    def run(self, fn, /, *args, timeout: float | None = None, cost_key=None, **kwargs):
        """fn(*args, **kwargs) on the worker thread, before any waiting long job's next step;
        its result, or its exception re-raised. Raises Busy after `timeout` s (LIMIT_S).
        `cost_key` names the model: if its cheapest pass cost under CHEAP_S, the light thread runs
        it at once."""
        return self._submit(self.fresh, fn, args, kwargs, timeout, cost_key)

    def run_step(self, fn, /, *args, timeout: float | None = None, cost_key=None, **kwargs):
        """One pass of a long job (a caption's next word): as `run`, but queued behind the
        one-pass calls and taking turns with the other long jobs, unless the cheapest pass with the
        same `cost_key` (the model) took under CHEAP_S (then on the light thread)."""
        return self._submit(self.steps, fn, args, kwargs, timeout, cost_key)

    def stepwise(self, model) -> Stepwise:
        """`model`, with every call a `run_step` (for loops such as vit_core.generate)."""
        return Stepwise(self, model)

    def wait_idle(self, quiet: float = 0.0, timeout: float | None = None) -> bool:
        """Block until the first thread has had nothing queued and no pass in progress for
        `quiet` seconds (or `timeout` s pass); True if it has. The light thread is not waited
        for."""
        end = None if timeout is None else time.monotonic() + timeout
        with self.lock:
            while True:
                left = None if end is None else end - time.monotonic()
                if not self.lock.wait_for(lambda: self.stopping or not (
                        self.fresh or self.steps or self.running), left):
                    return False
                rest = self.last_pass + quiet - time.monotonic()
                if self.stopping or rest <= 0:
                    return True
                if end is not None and time.monotonic() + rest > end:
                    return False
                self.lock.wait(rest)  # a new job wakes us; wait_for above sees it

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the queued calls, then end the thread (waits at most `timeout` seconds)."""
        with self.lock:
            self.stopping = True
            self.lock.notify_all()
        self.thread.join(timeout)
        self.light_thread.join(timeout)

    def _submit(self, queue: deque, fn, args, kwargs, timeout, cost_key=None):
        job = _Job(fn, args, kwargs, cost_key)
        with self.lock:
            if self.stopping or not self.thread.is_alive():
                raise RuntimeError(
                    "The forward-pass worker has stopped (the server is shutting down).")
            cheap = cost_key is not None and self.cost.get(cost_key, CHEAP_S) < CHEAP_S
            (self.light if cheap else queue).append(job)
            self.lock.notify_all()
        limit = LIMIT_S if timeout is None else timeout
        if not wait([job.done], limit).done:
            job.dropped = True
            raise Busy(f"The model is busy with other students' images: this step waited more "
                       f"than {limit:g} s for its turn, so it was given up; try again in a "
                       f"moment.")
        return job.done.result()

    def _next(self) -> _Job | None:
        """The next job (under the lock): a one-pass call unless a step has waited long enough."""
        if self.fresh and (not self.steps or self.served_ahead < FRESH_IN_A_ROW):
            self.served_ahead += bool(self.steps)
            return self.fresh.popleft()
        self.served_ahead = 0
        return self.steps.popleft() if self.steps else None

    def _loop(self) -> None:
        while True:
            with self.lock:
                quiet = False
                if not (self.fresh or self.steps or self.stopping):
                    quiet = not self.lock.wait(IDLE_S if self.to_warm else None)
                job = self._next()
                if job is None and self.stopping:
                    return
                self.running = job is not None
            if job is not None:
                if not job.dropped:
                    self._run(job, keeps=self.warm)
                with self.lock:
                    self.running = False
                    self.last_pass = time.monotonic()
                    self.lock.notify_all()  # wait_idle
            elif quiet:  # quiet for IDLE_S (not woken for a light job): the page is drawn
                try:
                    self._warm()
                except (MemoryError, RuntimeError):  # warming is only a favour
                    pass

    def _light_loop(self) -> None:
        while True:
            with self.lock:
                while not (self.light or self.stopping):
                    self.lock.wait()
                if not self.light:
                    return
                job = self.light.popleft()
            if not job.dropped:
                self._run(job, keeps=False)

    def _run(self, job: _Job, keeps: bool) -> None:
        # a pass's cost is this thread's CPU time: on a busy server the wall time of even a tiny
        # pass includes waits for the GIL and the cores, which say nothing about the pass
        start = time.thread_time()
        try:
            result = job.fn(*job.args, **job.kwargs)
        except BaseException as e:  # handed to the caller, never kills the worker
            job.done.set_exception(e)
            return
        finally:
            if job.cost_key is not None:  # the least seen: others' work only ever adds to it
                spent = time.thread_time() - start
                self.cost[job.cost_key] = min(self.cost.get(job.cost_key, spent), spent)
        job.done.set_result(result)
        if keeps:
            self.to_warm = _nbytes(result)

    def _warm(self) -> None:
        n, self.to_warm = self.to_warm, 0
        blocks = [torch.ones(BLOCK // 4) for _ in range(-(-n // BLOCK))]
        self.warmed += len(blocks) * BLOCK
        del blocks


def _inference(model, *args, **kwargs):
    with torch.inference_mode():  # the caller's inference mode stays on its own thread
        return recorded.forward(model, *args, **kwargs)  # model(...), replayed (one lock release)


class Stepwise:
    """A model whose every call is one step on the worker; everything else reads the model."""

    def __init__(self, worker: Worker, model):
        self._worker, self._model = worker, model

    def __call__(self, *args, **kwargs):
        return self._worker.run_step(_inference, self._model, *args, cost_key=id(self._model),
                                     **kwargs)

    def __getattr__(self, name):
        return getattr(self._model, name)


_shared: Worker | None = None
_start_lock = threading.Lock()


def shared() -> Worker:
    """The one worker every session uses, started on first use."""
    global _shared
    with _start_lock:
        if _shared is None:
            _shared = Worker(warm=memory_is_kept())
        return _shared


def run(fn, /, *args, **kwargs):
    """fn(*args, **kwargs) on the shared worker (see Worker.run, and its `cost_key`)."""
    return shared().run(fn, *args, **kwargs)


def stepwise(model) -> Stepwise:
    """`model` with every call one step on the shared worker (see Worker.stepwise)."""
    return shared().stepwise(model)
