"""One thread runs every session's forward passes in turn: torch already spreads a pass over
both cores, and two passes at once only fight for them.

A job is one pass. A caption is a loop on its caller's thread that hands the worker one word at
a time (`stepwise(model)`); a one-pass call (a page's trace) goes before the waiting words, so a
first view waits at most for the pass in progress, and after FRESH_IN_A_ROW of them a word goes
next. A small model's pass (~10 ms) runs at once on its caller's thread. Past LIMIT_S (or
`timeout=`) a wait raises `Busy` (its message one sentence for the page) and an unstarted job
is dropped. Calls made inside `behind()` (the read-ahead's, the why stage's background jobs)
wait behind every page's call and word, are no pass for `wait_idle`, and, since no page waits
for them, give up only once the worker has made no progress (no call, no batch ended) for their
limit: a queue of long jobs that moves is no reason to drop one. A long job of many batches
(the why stage's maps on a big model) calls `between()` after each batch: the calls waiting
then run before its next batch.
The server's one worker: ui/state.forward_worker().
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import threading
import time
from collections import deque
from concurrent.futures import Future, wait

import torch

LIMIT_S = 60.0  # the longest any caller waits for one pass (its turn included)
FRESH_IN_A_ROW = 4  # one-pass calls served in a row while a caption's next word waits
SMALL_PARAMS = 4_000_000  # models smaller than this run on their caller's thread


class Busy(TimeoutError):
    """A wait for the worker passed its limit; the message is the sentence to show."""


def small(model) -> bool:
    return sum(p.numel() for p in model.parameters()) < SMALL_PARAMS


class Worker:
    """A thread that runs submitted calls: one-pass calls first, captions' words in turn."""

    def __init__(self):
        # (future, call, made behind()): one-pass calls, captions' words, calls made behind()
        self.fresh, self.steps, self.later = deque(), deque(), deque()
        self.served_ahead = 0  # `run` calls served since a step started waiting
        self.running = self.stopping = False
        self.last_pass = 0.0  # time.monotonic() when the last pass a page asked for ended
        self.progressed = time.monotonic()  # when the last call or long job's batch ended
        self._behind = threading.local()
        self.lock = threading.Condition()
        self.thread = threading.Thread(target=self._loop, name="vit-forward", daemon=True)
        self.thread.start()
        atexit.register(self.stop)

    def run(self, fn, /, *args, timeout: float | None = None, model=None, step: bool = False,
            **kwargs):
        """fn(*args, **kwargs) on the worker thread (at once on this one if `model` is small);
        its result, or its exception re-raised. Raises Busy after `timeout` s (LIMIT_S).
        `step`: one word of a caption, behind the one-pass calls, in turn."""
        if model is not None and small(model):
            return fn(*args, **kwargs)
        job, later = Future(), getattr(self._behind, "on", False)
        queue = self.later if later else self.steps if step else self.fresh
        with self.lock:
            if self.stopping:
                raise RuntimeError("The forward-pass worker has stopped (the server is exiting).")
            queue.append((job, functools.partial(fn, *args, **kwargs), later))
            self.lock.notify_all()
        limit = LIMIT_S if timeout is None else timeout
        if not self._waited(job, limit, patient=later):
            job.cancel()  # dropped if it has not started
            if later:
                raise Busy(f"The model computed nothing for {limit:g} s (the server may be "
                           f"overloaded), so this was given up; try again in a moment.")
            raise Busy(f"The model is busy with other students' images: this step waited more "
                       f"than {limit:g} s for its turn, so it was given up; try again in a "
                       f"moment.")
        return job.result()

    def _waited(self, job: Future, limit: float, patient: bool) -> bool:
        """Is `job` done within `limit` s from now, or, `patient`, before the worker has made
        no progress for `limit` s?"""
        end = time.monotonic() + limit
        while not wait([job], max(end - time.monotonic(), 0.0)).done:
            end = self.progressed + limit
            if not patient or time.monotonic() >= end:
                return False
        return True

    def stepwise(self, model) -> Stepwise:
        return Stepwise(self, model)

    @contextlib.contextmanager
    def behind(self):
        """Inside the block, this thread's calls wait until no page's call or caption word is
        queued, and their passes leave `last_pass` alone (for a read-ahead)."""
        self._behind.on = True
        try:
            yield
        finally:
            self._behind.on = False

    def between(self) -> None:
        """Called between two batches of a long job (a `progress` callback): on the worker
        thread, run the pages' calls and captions' words waiting now (not the read-ahead's), so
        a job of many batches keeps nobody waiting longer than one batch (each call with autograd
        on, as on the worker's loop, not in the job's no_grad); elsewhere nothing."""
        if threading.current_thread() is not self.thread:
            return
        self.progressed = time.monotonic()  # a batch of the long job ended
        while True:
            with self.lock:
                if not (self.fresh or self.steps):
                    return
                job, call, later = (self.fresh or self.steps).popleft()
            # as on the worker's own loop: not in the long job's no_grad or inference mode (a
            # gradient map served inside its curves raised "does not require grad")
            with torch.inference_mode(False), torch.enable_grad():
                self._serve(job, call)
            with self.lock:
                self.progressed = time.monotonic()
                if not later:
                    self.last_pass = self.progressed
                self.lock.notify_all()

    def wait_idle(self, quiet: float = 0.0, timeout: float | None = None) -> bool:
        """Wait until nothing is queued or running and no page's pass has run for `quiet` s;
        False if `timeout` s pass first."""
        end = None if timeout is None else time.monotonic() + timeout
        with self.lock:
            while True:
                now = time.monotonic()
                busy = self.fresh or self.steps or self.later or self.running
                if not busy and (self.stopping or now >= self.last_pass + quiet):
                    return True
                if end is not None and now >= end:
                    return False
                wake = end if busy else min(self.last_pass + quiet, end or float("inf"))
                self.lock.wait(None if wake is None else wake - now)

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the queued calls, then end the thread (waits at most `timeout` seconds)."""
        with self.lock:
            self.stopping = True
            self.lock.notify_all()
        self.thread.join(timeout)

    def _next(self) -> tuple | None:
        """The next job (under the lock): a one-pass call unless a step has waited long enough;
        a call made behind() only when no other waits."""
        if self.fresh and (not self.steps or self.served_ahead < FRESH_IN_A_ROW):
            self.served_ahead += bool(self.steps)
            return self.fresh.popleft()
        self.served_ahead = 0
        return next((queue.popleft() for queue in (self.steps, self.later) if queue), None)

    def _loop(self) -> None:
        while True:
            with self.lock:
                while not (self.fresh or self.steps or self.later or self.stopping):
                    self.lock.wait()
                nxt = self._next()
                if nxt is None:  # stopping, and nothing left
                    return
                self.running = True
            job, call, later = nxt
            self._serve(job, call)
            with self.lock:
                self.running = False
                self.progressed = time.monotonic()
                if not later:
                    self.last_pass = self.progressed
                self.lock.notify_all()  # wait_idle


    @staticmethod
    def _serve(job: Future, call) -> None:
        if job.set_running_or_notify_cancel():  # False: its caller gave up waiting
            try:
                job.set_result(call())
            except BaseException as e:  # handed to the caller, never kills the worker
                job.set_exception(e)


class Stepwise:
    """`model` with every call one word's turn on the worker (for loops such as
    vit_core.generate); everything else reads the model."""

    def __init__(self, worker: Worker, model):
        self._worker, self._model = worker, model

    def __call__(self, *args, **kwargs):
        return self._worker.run(self._pass, *args, model=self._model, step=True, **kwargs)

    def _pass(self, *args, **kwargs):
        with torch.inference_mode():  # the caller's inference mode stays on its own thread
            return self._model(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._model, name)

