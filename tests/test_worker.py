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
