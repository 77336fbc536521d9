"""ui/worker.py: every forward pass of the app runs on one thread, in order, errors handed back."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from ui import worker as w


def test_calls_run_on_one_named_thread_and_return_their_results():
    worker = w.Worker(warm=False)
    names = {worker.run(lambda: threading.current_thread().name) for _ in range(3)}
    assert names == {"vit-forward"}
    assert worker.run(pow, 2, exp=10) == 1024


def test_calls_from_many_threads_never_overlap_and_each_gets_its_own_result():
    worker = w.Worker(warm=False)
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
    worker = w.Worker(warm=False)
    with pytest.raises(ZeroDivisionError):
        worker.run(lambda: 1 / 0)
    assert worker.run(lambda: "still here") == "still here"


def test_after_an_idle_moment_it_warms_as_much_memory_as_the_last_result_kept(monkeypatch):
    monkeypatch.setattr(w, "IDLE_S", 0.05)
    worker = w.Worker(warm=True)
    kept = torch.zeros(w.BLOCK // 4 * 2 + 1)  # a little over two blocks of float32
    worker.run(lambda: type("Like a Trace", (), {"nbytes": lambda self: kept.nbytes})())
    deadline = time.monotonic() + 5
    while worker.warmed == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert worker.warmed == 3 * w.BLOCK
    time.sleep(0.2)  # warmed once per result, not again while idle
    assert worker.warmed == 3 * w.BLOCK


def test_a_result_without_a_size_or_a_tensor_result_never_stops_the_worker():
    worker = w.Worker(warm=True)
    assert worker.run(lambda: type("Odd", (), {"nbytes": "many"})()).nbytes == "many"
    assert worker.run(torch.ones, 4).sum().item() == 4
    assert worker.to_warm == 16 or worker.warmed >= w.BLOCK
    assert worker.run(lambda: 7) == 7


def test_a_real_trace_reports_the_bytes_it_keeps():
    from vit_core import load_model, preprocess, run_trace
    from vit_core.scenes import world as data

    model = load_model("shapes-classifier")
    tr = run_trace(model, preprocess(data.make_scene(3).image, model.config))
    assert w._nbytes(tr) == tr.nbytes() > 1 << 19  # a lean trace: the residual stream, 0.9 MB


def test_stop_finishes_queued_calls_then_ends_the_thread():
    worker = w.Worker(warm=False)
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(worker.run, time.sleep, 0.2)
        time.sleep(0.05)
        worker.stop()
        assert slow.result() is None  # the call already queued still ran
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


def test_a_caption_is_one_pass_per_turn_on_the_worker_and_reads_as_generate():
    from vit_core import generate

    worker, log = w.Worker(warm=False), []
    model = SlowCaptioner(captioner_config(), log, pass_s=0.0)
    gen = generate(worker.stepwise(model), torch.zeros(1, 3, 8, 8), max_new_tokens=10)
    assert gen.ids == [5] * 10 and len(gen.probs) == 10
    # each pass on the worker, no autograd; once its cost is known, on the light thread
    assert log == [("pass", "vit-forward", True)] + [("pass", "vit-light", True)] * 9
    assert generate(model, torch.zeros(1, 3, 8, 8), max_new_tokens=10).ids == gen.ids


def test_a_first_view_sent_during_captions_runs_after_the_pass_in_progress():
    """Four 10-word captions take turns; a first view (one `run`) sent meanwhile waits for the
    pass in progress only, not for the other captions' queued words, and ends long before they
    do."""
    from vit_core import generate

    worker, log = w.Worker(warm=False), []
    model = worker.stepwise(SlowCaptioner(captioner_config(), log, pass_s=1.2 * w.CHEAP_S,
                                          busy=True))  # not cheap
    pixels = torch.zeros(1, 3, 8, 8)
    with ThreadPoolExecutor(4) as pool:
        captions = [pool.submit(generate, model, pixels, max_new_tokens=10) for _ in range(4)]
        deadline = time.monotonic() + 10
        while len(log) < 6 and time.monotonic() < deadline:
            time.sleep(0.005)
        log.append(("sent",))
        worker.run(lambda: log.append(("first view",)))
        first_done = time.monotonic()
        ends = [f.result(timeout=30) and time.monotonic() for f in captions]
    sent, served = log.index(("sent",)), log.index(("first view",))
    passes_between = [e for e in log[sent:served] if e[0] == "pass"]
    assert len(passes_between) <= 1, log  # in FIFO order three queued words would come first
    assert first_done < min(ends)
    assert sum(e[0] == "pass" for e in log) == 40


def test_long_jobs_take_turns_and_a_stream_of_first_views_never_stops_them():
    log = []
    worker = w.Worker(warm=False)
    gate = threading.Event()
    n = w.FRESH_IN_A_ROW
    with ThreadPoolExecutor(n + 5) as pool:
        pool.submit(worker.run, gate.wait, 5)  # hold the worker while the queue fills up
        time.sleep(0.05)
        steps = [pool.submit(worker.run_step, log.append, "step") for _ in range(2)]
        time.sleep(0.05)
        fresh = [pool.submit(worker.run, log.append, "view") for _ in range(n + 2)]
        time.sleep(0.05)
        gate.set()
        for f in steps + fresh:
            f.result(timeout=10)
    assert log == ["view"] * n + ["step"] + ["view"] * 2 + ["step"]


def test_a_cheap_model_s_caption_is_written_while_a_big_pass_holds_the_worker():
    """Once the worker knows a model is cheap, its passes (a trace with `cost_key`, a caption's
    words) run on the light thread: a whole caption is written while a long pass is still in
    progress on the main one, and a costly model's word still waits for it."""
    from vit_core import generate

    worker, log = w.Worker(warm=False), []
    cheap_model = SlowCaptioner(captioner_config(), log, pass_s=0.0)
    cheap = worker.stepwise(cheap_model)
    pixels = torch.zeros(1, 3, 8, 8)
    generate(cheap, pixels, max_new_tokens=1)  # its first pass: on the main thread, measured
    assert log.pop() == ("pass", "vit-forward", True)
    gate = threading.Event()
    with ThreadPoolExecutor(4) as pool:
        held = pool.submit(worker.run, gate.wait, 10)  # a big pass in progress
        time.sleep(0.05)
        costly = pool.submit(worker.run, lambda: "costly done")
        caption = generate(cheap, pixels, max_new_tokens=10)
        traced = worker.run(lambda: threading.current_thread().name, cost_key=id(cheap_model))
        assert not held.done() and not costly.done()  # the main lane is still held
        gate.set()
        assert held.result(timeout=10) and costly.result(timeout=10) == "costly done"
    assert caption.ids == [5] * 10
    assert log == [("pass", "vit-light", True)] * 10
    assert traced == "vit-light"


def test_one_slow_pass_of_a_cheap_model_does_not_send_it_back_to_the_big_lane():
    """On a busy server a small model's pass can take longer than it costs; its cost is the
    cheapest pass seen, so its next pass still runs on the light thread."""
    worker, log = w.Worker(warm=False), []
    model = SlowCaptioner(captioner_config(), log, pass_s=0.0, busy=True)
    ids, pixels = torch.tensor([[1, 4]]), torch.zeros(1, 3, 8, 8)
    for pass_s in (0.0, 0.0, 2 * w.CHEAP_S, 0.0):
        model.pass_s = pass_s
        worker.stepwise(model)(pixels, ids)
    assert [thread for _, thread, _ in log] == ["vit-forward", "vit-light", "vit-light",
                                                "vit-light"]


def test_a_cheap_model_s_words_go_before_queued_passes_of_a_costly_one():
    """A small captioner's words (each pass under CHEAP_S) are served ahead of waiting one-pass
    calls; a costly model's words still wait their turn behind them."""
    from vit_core import generate

    worker, log = w.Worker(warm=False), []

    class Tagged:  # what a SlowCaptioner logs, tagged with which model it is
        def __init__(self, tag):
            self.tag = tag

        def append(self, _entry):
            log.append(self.tag)

    cheap = worker.stepwise(SlowCaptioner(captioner_config(), Tagged("cheap"), pass_s=0.0))
    costly = worker.stepwise(SlowCaptioner(captioner_config(), Tagged("costly"),
                                           pass_s=2.5 * w.CHEAP_S, busy=True))
    pixels = torch.zeros(1, 3, 8, 8)
    generate(cheap, pixels, max_new_tokens=1)  # the worker learns each model's cost
    generate(costly, pixels, max_new_tokens=1)
    log.clear()

    def view():  # a first view's pass: long enough for the next word to be queued meanwhile
        log.append("view")
        time.sleep(0.1)

    gate = threading.Event()
    with ThreadPoolExecutor(8) as pool:
        pool.submit(worker.run, gate.wait, 5)  # hold the worker while the queue fills up
        time.sleep(0.05)
        views = [pool.submit(worker.run, view) for _ in range(3)]
        time.sleep(0.05)
        words = [pool.submit(generate, m, pixels, max_new_tokens=3) for m in (costly, cheap)]
        time.sleep(0.05)
        gate.set()
        for f in views + words:
            f.result(timeout=20)
    last_view = len(log) - 1 - log[::-1].index("view")
    assert log[0] == "cheap", log  # ahead of the three views queued before it
    assert log[:last_view].count("cheap") == 3, log  # all its words before the last view
    assert log.index("costly") > last_view, log  # a costly word waits behind the views
    assert sorted(log) == ["cheap"] * 3 + ["costly"] * 3 + ["view"] * 3


def test_a_wait_past_its_limit_ends_in_one_sentence_and_the_job_is_dropped():
    worker, ran = w.Worker(warm=False), []
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(worker.run, time.sleep, 0.5)
        time.sleep(0.05)
        t0 = time.monotonic()
        with pytest.raises(w.Busy) as e:
            worker.run(ran.append, "too late", timeout=0.1)
        assert time.monotonic() - t0 < 0.4
        slow.result()
    message = str(e.value)
    assert "busy" in message and "0.1 s" in message
    assert message.endswith(".") and ". " not in message and "\n" not in message  # one sentence
    assert worker.run(lambda: "still here") == "still here"
    assert ran == []  # dropped: it never ran after its caller gave up
    with pytest.raises(w.Busy):  # a pass that itself runs past the limit
        worker.run(time.sleep, 0.3, timeout=0.05)


def test_an_exception_that_is_a_timeout_is_handed_back_as_it_is():
    worker = w.Worker(warm=False)

    def network():
        raise TimeoutError("the model's own timeout")

    with pytest.raises(TimeoutError, match="own timeout") as e:
        worker.run(network, timeout=5)
    assert not isinstance(e.value, w.Busy)


def test_a_page_that_waits_too_long_says_so_in_one_sentence_and_the_session_goes_on(monkeypatch):
    """The app with its real worker held busy: the page shows the Busy sentence, no exception;
    once the worker is free, the next run draws the page and its fingerprint."""
    from streamlit.testing.v1 import AppTest

    from tests.test_app import APP, photo_bytes

    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    gate = threading.Event()
    monkeypatch.setattr(w, "LIMIT_S", 0.3)
    monkeypatch.setattr(w, "CHEAP_S", 0.0)  # the classifier's pass too waits for the held lane
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(w.run, gate.wait, 30, timeout=30)
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
    worker = w.Worker(warm=False)
    assert worker.wait_idle(timeout=1)  # nothing ever ran
    gate = threading.Event()
    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(worker.run, gate.wait, 10)
        queued = pool.submit(worker.run, time.sleep, 0)
        time.sleep(0.05)
        assert not worker.wait_idle(timeout=0.2)  # a pass in progress, one queued
        gate.set()
        running.result(5), queued.result(5)
    start = time.monotonic()
    assert worker.wait_idle(quiet=0.3, timeout=5)
    assert time.monotonic() - start >= 0.25  # the last pass ended just now: it waited for quiet
    assert not worker.wait_idle(quiet=10, timeout=0.1)  # quiet not reached within the limit
