"""ui/serving/worker.py: every forward pass of the app runs on one thread, in order, errors handed
back.

A test that needs a pass held in progress holds it on an Event, and waits until the worker has
taken it (or queued the next calls) before going on: no sleep stands for "the other thread has
got there by now", which a busy machine breaks."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from ui.serving import state
from ui.serving import worker as w


def until(done, timeout: float = 60.0) -> None:
    """Wait until done() holds (a busy machine starts threads late); fail if it never does."""
    end = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < end, "the worker never got there"
        time.sleep(0.002)


def queued(worker: w.Worker) -> int:
    """Calls waiting for the worker (not the one in progress)."""
    with worker.lock:
        return len(worker.fresh) + len(worker.steps) + len(worker.later)


def test_calls_run_on_one_named_thread_and_return_their_results():
    worker = w.Worker()
    names = {worker.run(lambda: threading.current_thread().name) for _ in range(3)}
    assert names == {"vit-forward"}
    assert worker.run(pow, 2, exp=10) == 1024


def test_calls_from_many_threads_never_overlap_and_each_gets_its_own_result():
    worker = w.Worker()
    busy, overlaps = threading.Lock(), []

    def job(i):
        if not busy.acquire(blocking=False):
            overlaps.append(i)
            return -1
        time.sleep(0.01)
        busy.release()
        return i * i

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: worker.run(job, i), range(24)))
    assert overlaps == []
    assert results == [i * i for i in range(24)]


def test_an_exception_reaches_the_caller_and_the_worker_keeps_going():
    worker = w.Worker()
    with pytest.raises(ZeroDivisionError):
        worker.run(lambda: 1 / 0)
    assert worker.run(lambda: "still here") == "still here"


def test_stop_finishes_queued_calls_then_ends_the_thread():
    worker, gate = w.Worker(), threading.Event()
    with ThreadPoolExecutor(3) as pool:
        held = pool.submit(worker.run, gate.wait, 60)
        until(lambda: worker.running)
        waiting = pool.submit(worker.run, lambda: "queued")
        until(lambda: queued(worker) == 1)
        stopped = pool.submit(worker.stop)
        until(lambda: worker.stopping)
        gate.set()
        stopped.result(60)
        assert held.result() is True and waiting.result() == "queued"  # both still ran
    assert not worker.thread.is_alive()
    with pytest.raises(RuntimeError, match="stopped"):
        worker.run(lambda: 1)


class SlowCaptioner(torch.nn.Module):
    """A text model's stand-in: each pass sleeps, logs itself and names the same word, never
    [EOS], so a caption is always max_new_tokens passes long."""

    def __init__(self, config, log: list, pass_s: float = 0.03, word: int = 5,
                 busy: bool = False):
        super().__init__()
        self.config, self.log, self.pass_s, self.word = config, log, pass_s, word
        self.busy = busy  # spend pass_s of CPU time (as a real pass does) instead of sleeping

    def forward(self, pixels, ids, mask=None):
        thread = threading.current_thread().name
        self.log.append(("pass", thread, torch.is_inference_mode_enabled()))
        if self.busy:
            end = time.thread_time() + self.pass_s
            while time.thread_time() < end:
                pass
        else:
            time.sleep(self.pass_s)
        logits = torch.zeros(ids.shape[0], ids.shape[1], self.config.vocab_size)
        logits[..., self.word] = 1.0
        return logits


def captioner_config():
    from vit_core import load_model

    return load_model("shapes-captioner-prefix").config


@pytest.fixture
def every_model_big(monkeypatch):
    """The stand-in models have no parameters: count them as big, so they use the worker."""
    monkeypatch.setattr(w, "SMALL_PARAMS", 0)


def test_a_caption_is_one_pass_per_turn_on_the_worker_and_reads_as_generate(every_model_big):
    from vit_core import generate

    worker, log = w.Worker(), []
    model = SlowCaptioner(captioner_config(), log, pass_s=0.0)
    gen = generate(worker.stepwise(model), torch.zeros(1, 3, 8, 8), max_new_tokens=10)
    assert gen.ids == [5] * 10 and len(gen.probs) == 10
    assert log == [("pass", "vit-forward", True)] * 10  # each pass on the worker, no autograd
    assert generate(model, torch.zeros(1, 3, 8, 8), max_new_tokens=10).ids == gen.ids


def test_a_first_view_sent_during_captions_runs_after_the_pass_in_progress(every_model_big):
    """Four 10-word captions take turns; a first view (one `run`) sent meanwhile waits for the
    pass in progress only, not for the other captions' queued words, and ends long before they
    do."""
    from vit_core import generate

    worker, log = w.Worker(), []
    model = worker.stepwise(SlowCaptioner(captioner_config(), log, pass_s=0.06, busy=True))
    pixels = torch.zeros(1, 3, 8, 8)
    with ThreadPoolExecutor(4) as pool:
        captions = [pool.submit(generate, model, pixels, max_new_tokens=10) for _ in range(4)]
        until(lambda: len(log) >= 6)
        log.append(("sent",))
        worker.run(lambda: log.append(("first view",)))
        first_done = time.monotonic()
        ends = [f.result(timeout=120) and time.monotonic() for f in captions]
    sent, served = log.index(("sent",)), log.index(("first view",))
    passes_between = [e for e in log[sent:served] if e[0] == "pass"]
    assert len(passes_between) <= 1, log  # in FIFO order three queued words would come first
    assert first_done < min(ends)
    assert sum(e[0] == "pass" for e in log) == 40


def test_long_jobs_take_turns_and_a_stream_of_first_views_never_stops_them():
    log = []
    worker = w.Worker()
    gate = threading.Event()
    n = w.FRESH_IN_A_ROW
    with ThreadPoolExecutor(n + 5) as pool:
        pool.submit(worker.run, gate.wait, 60)  # hold the worker while the queue fills up
        until(lambda: worker.running)
        steps = [pool.submit(worker.run, log.append, "step", step=True) for _ in range(2)]
        until(lambda: queued(worker) == 2)
        fresh = [pool.submit(worker.run, log.append, "view") for _ in range(n + 2)]
        until(lambda: queued(worker) == n + 4)
        gate.set()
        for f in steps + fresh:
            f.result(timeout=60)
    assert log == ["view"] * n + ["step"] + ["view"] * 2 + ["step"]


def test_a_small_model_s_passes_run_at_once_on_the_caller_s_thread_while_the_worker_is_held():
    """The bundled models (under SMALL_PARAMS parameters) never queue: a whole caption is
    written while a big pass holds the worker, on the caller's thread, with no autograd; a
    model with more parameters waits for the worker."""
    from vit_core import generate, load_model

    small, big = load_model("shapes-captioner-prefix"), load_model("vit-ti16")
    assert sum(p.numel() for p in small.parameters()) < w.SMALL_PARAMS <= sum(
        p.numel() for p in big.parameters())
    worker, log = w.Worker(), []
    gate = threading.Event()
    pixels = torch.zeros(1, 3, small.config.img_size, small.config.img_size)

    def logged(*args, **kwargs):
        log.append((threading.current_thread().name, torch.is_inference_mode_enabled()))
        return small(*args, **kwargs)

    logged.parameters, logged.config = small.parameters, small.config
    with ThreadPoolExecutor(2) as pool:
        held = pool.submit(worker.run, gate.wait, 60)  # a big pass in progress
        until(lambda: worker.running)
        costly = pool.submit(worker.run, lambda: "big done", model=big)
        until(lambda: queued(worker) == 1)
        caption = generate(worker.stepwise(logged), pixels, max_new_tokens=5)
        assert not held.done() and not costly.done()  # the worker is still held
        gate.set()
        assert held.result(timeout=60) and costly.result(timeout=60) == "big done"
    assert log == [(threading.current_thread().name, True)] * len(caption.ids)
    assert caption.ids == generate(small, pixels, max_new_tokens=5).ids


def test_a_wait_past_its_limit_ends_in_one_sentence_and_the_job_is_dropped():
    worker, ran, gate = w.Worker(), [], threading.Event()
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(worker.run, gate.wait, 60)
        until(lambda: worker.running)
        with pytest.raises(w.Busy) as e:
            worker.run(ran.append, "too late", timeout=0.1)
        assert not slow.done()  # given up while the pass ahead of it was still running
        gate.set()
        slow.result()
    message = str(e.value)
    assert "busy" in message and "0.1 s" in message
    assert message.endswith(".") and ". " not in message and "\n" not in message  # one sentence
    assert worker.run(lambda: "still here") == "still here"
    assert ran == []  # dropped: it never ran after its caller gave up
    long = threading.Event()
    with pytest.raises(w.Busy):  # a pass that itself runs past the limit
        worker.run(long.wait, 60, timeout=0.05)
    long.set()


def test_a_call_made_behind_waits_while_the_worker_moves_and_gives_up_when_it_stops():
    """A background job (made behind()) queued behind a long job of many batches outlasts its
    limit while batches end (nobody's page waits for it); once the worker is held on one pass
    that makes no progress, the background call too gives up after its limit, in one
    sentence."""
    worker, stop, gate = w.Worker(), threading.Event(), threading.Event()

    def long_job():  # ~1.5 s of batches, a tenth of the limit apart
        for _ in range(30):
            if stop.is_set():
                return "stopped"
            time.sleep(0.05)
            worker.between()
        return "long done"

    def behind(fn, limit):
        with worker.behind():
            return worker.run(fn, timeout=limit)

    try:
        with ThreadPoolExecutor(2) as pool:
            with worker.behind():
                long = pool.submit(worker.run, long_job)
            until(lambda: worker.running)
            later = pool.submit(behind, lambda: "waited", 0.5)
            assert long.result(60) == "long done" and later.result(60) == "waited"
            held = pool.submit(worker.run, gate.wait, 30)  # one pass, no batches
            until(lambda: worker.running)
            started = time.monotonic()
            with pytest.raises(w.Busy) as e:
                behind(lambda: "never", 0.5)
            assert 0.4 <= time.monotonic() - started < 10
            gate.set()
            held.result(60)
        message = str(e.value)
        assert message == ("The model computed nothing for 0.5 s (the server may be "
                           "overloaded), so this was given up; try again in a moment.")
    finally:
        stop.set(), gate.set()
        worker.stop()


def test_an_exception_that_is_a_timeout_is_handed_back_as_it_is():
    worker = w.Worker()

    def network():
        raise TimeoutError("the model's own timeout")

    with pytest.raises(TimeoutError, match="own timeout") as e:
        worker.run(network, timeout=5)
    assert not isinstance(e.value, w.Busy)


def test_a_page_that_waits_too_long_says_so_in_one_sentence_and_the_session_goes_on(monkeypatch):
    """The app with its real worker held busy: the page shows the Busy sentence, no exception;
    once the worker is free, the next run draws the page and its fingerprint."""
    from streamlit.testing.v1 import AppTest

    from tests.support import APP, photo_bytes

    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    gate = threading.Event()
    monkeypatch.setattr(w, "LIMIT_S", 0.3)
    monkeypatch.setattr(w, "SMALL_PARAMS", 0)  # the classifier's pass too waits for the worker
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(state.forward_worker().run, gate.wait, 30, timeout=30)
        at.sidebar.file_uploader[0].upload("busy.png", photo_bytes(w=613), "image/png").run()
        gate.set()
        held.result()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "The model is busy with other students' images: this step waited more than 0.3 s for "
        "its turn, so it was given up; try again in a moment."]
    at.run()
    assert not at.exception and not at.error
    assert any(c.value.startswith("fingerprint ") for c in at.sidebar.caption)


def test_wait_idle_waits_for_queued_passes_and_then_for_a_quiet_moment():
    worker = w.Worker()
    assert worker.wait_idle(timeout=1)  # nothing ever ran
    gate = threading.Event()
    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(worker.run, gate.wait, 60)
        until(lambda: worker.running)
        waiting = pool.submit(worker.run, time.sleep, 0)
        until(lambda: queued(worker) == 1)
        assert not worker.wait_idle(timeout=0.2)  # a pass in progress, one queued
        gate.set()
        running.result(60), waiting.result(60)
    assert worker.wait_idle(quiet=0.3, timeout=60)
    assert time.monotonic() >= worker.last_pass + 0.3  # it returned only after a quiet moment
    assert not worker.wait_idle(quiet=10, timeout=0.1)  # quiet not reached within the limit


def test_calls_made_behind_wait_for_every_page_call_and_leave_the_quiet_clock_alone():
    worker = w.Worker()
    gate, order = threading.Event(), []

    def behind(tag):
        with worker.behind():
            return worker.run(order.append, tag)

    with ThreadPoolExecutor(3) as pool:
        running = pool.submit(worker.run, gate.wait, 60)  # a page's pass in progress
        until(lambda: worker.running)
        ahead = pool.submit(behind, "read-ahead")  # queued first ...
        until(lambda: queued(worker) == 1)
        page = pool.submit(worker.run, order.append, "page")  # ... served second
        until(lambda: queued(worker) == 2)
        gate.set()
        running.result(60), ahead.result(60), page.result(60)
    assert order == ["page", "read-ahead"]
    page_ended = worker.last_pass
    behind("again")  # the read-ahead's own pass ...
    assert worker.last_pass == page_ended  # ... is not a page's: the quiet clock runs on
    assert worker.run(threading.current_thread) is not threading.current_thread()
    assert worker.last_pass > page_ended


def test_a_long_job_lets_waiting_calls_run_between_its_batches():
    """A job of many batches that calls between() after each (the why stage's maps): a page's
    call made while it runs is served before it ends, on the worker thread; between() off the
    worker thread does nothing."""
    worker = w.Worker()
    started, log = threading.Event(), []

    def long_job():
        started.set()
        for batch in range(2000):
            log.append(("batch", batch))
            worker.between()
            if ("page", True) in log:
                return batch  # the page's call ran between two of its batches
            time.sleep(0.005)
        return None

    try:
        with ThreadPoolExecutor(1) as pool:
            done = pool.submit(worker.run, long_job)
            started.wait(10)
            assert worker.run(lambda: log.append(
                ("page", threading.current_thread() is worker.thread)) or "served") == "served"
            assert done.result(60) is not None  # the job saw the call served, then ended
        worker.between()  # on this thread: nothing to do, returns at once
    finally:
        worker.stop()


def test_a_call_served_between_a_long_jobs_batches_runs_with_autograd_as_on_its_own():
    """A long job's batches run under no_grad or inference mode (the curves, occlusion); a page's
    call served between two of them (a class's guess sent: another student's maps, whose
    gradient maps need autograd) must not inherit it: it ran under the outer job's no_grad and
    raised 'element 0 of tensors does not require grad'."""
    worker = w.Worker()
    started, seen = threading.Event(), []

    def long_job():
        started.set()
        with torch.inference_mode(), torch.no_grad():
            for _ in range(2000):
                worker.between()
                if seen:
                    return torch.is_grad_enabled()  # the job's own mode is back afterwards
                time.sleep(0.005)
        return None

    def page_call():
        x = torch.ones(2, requires_grad=True)
        seen.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
        return torch.autograd.grad((x * x).sum(), [x])[0].tolist()

    try:
        with ThreadPoolExecutor(1) as pool:
            done = pool.submit(worker.run, long_job)
            started.wait(10)
            assert worker.run(page_call) == [2.0, 2.0]
            assert done.result(60) is False
        assert seen == [(True, False)]
    finally:
        worker.stop()
