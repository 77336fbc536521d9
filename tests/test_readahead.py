"""ui/serving/readahead.py: the later pages' work, computed while the worker idles, for the right
image."""

import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.support import photo_bytes
from ui.serving import ahead, readahead, state
from ui.serving import worker as w

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def settle(timeout: float = 120) -> None:
    """Until the read-ahead queue is empty and the worker has been quiet for a moment. (It looks
    every 0.1 s: a small model's passes run on the caller, so the worker is idle at once, and a
    loop without a pause held the GIL from the read-ahead's thread: 91 s for this file's first
    test, 6 s with it.)"""
    end = time.monotonic() + timeout
    worker = state.forward_worker()
    while time.monotonic() < end:
        idle = worker.wait_idle(quiet=1.5, timeout=5)
        if not readahead.shared().pending() and idle:
            if not readahead.shared().pending():
                return
        time.sleep(0.1)
    raise AssertionError("the read-ahead never finished")


# ---------------------------------------------------------------- the queue alone
def test_items_run_in_order_on_their_thread_only_when_idle_says_so():
    gate, ran = threading.Event(), []
    ra = readahead.ReadAhead(idle=gate.wait)
    interest = readahead._Interest(("img", "model", None))
    ra.add(interest, [lambda i=i: ran.append((i, threading.current_thread().name))
                      for i in range(3)])
    time.sleep(0.2)
    assert ran == []  # the worker is not idle yet
    gate.set()
    deadline = time.monotonic() + 60
    while len(ran) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ran == [(i, "vit-read-ahead") for i in range(3)]
    assert ra.done == 3 and ra.pending() == 0


def test_every_sessions_next_page_comes_before_anyones_later_pages():
    gate, ran = threading.Event(), []
    ra = readahead.ReadAhead(idle=gate.wait)
    for who in "abc":  # three students, arriving in this order, each with a three-page plan
        ra.add(readahead._Interest((who, "model", None)),
               [lambda who=who, page=page: ran.append(f"{who}{page}") for page in range(3)])
    gate.set()
    deadline = time.monotonic() + 60
    while len(ran) < 9 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ran == ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2"]


def test_a_session_that_moved_on_or_went_stale_has_its_items_dropped_and_a_failure_is_no_stop():
    gate, ran = threading.Event(), []
    ra = readahead.ReadAhead(idle=gate.wait)
    old = readahead._Interest(("a", "m", None))
    stale = readahead._Interest(("b", "m", None), stale_s=0.0)
    new = readahead._Interest(("c", "m", None))
    ra.add(old, [lambda: ran.append("old")])
    ra.add(stale, [lambda: ran.append("stale")])
    ra.add(new, [lambda: 1 / 0, lambda: ran.append("new")])
    old.cancelled = True  # the session chose another image before the worker went quiet
    gate.set()
    deadline = time.monotonic() + 60  # until all four items were run, skipped or failed
    while ra.skipped + ra.failed + ra.done < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ran == ["new"]
    assert (ra.skipped, ra.failed, ra.done) == (2, 1, 1)


# ---------------------------------------------------------------- in the app
@pytest.fixture
def read_ahead_on(monkeypatch):
    monkeypatch.setenv(readahead.ENV, "1")
    runs: list[str] = []  # every pass asked of the worker (a small model's runs on the caller)
    original = w.Worker.run

    def counted(self, fn, /, *args, **kwargs):
        runs.append(getattr(fn, "__name__", "?"))
        return original(self, fn, *args, **kwargs)

    monkeypatch.setattr(w.Worker, "run", counted)
    return runs


@pytest.mark.slow  # a child process or a whole app session: the full suite runs it
def test_after_a_new_photo_the_later_pages_need_no_pass_of_their_own(read_ahead_on,
                                                                      monkeypatch):
    from vit_core.explain import embeddings

    svd_threads = []  # the Embeddings page's pictures of W_E, once per model, on which thread
    original = embeddings.embedding_filters
    monkeypatch.setattr(embeddings, "embedding_filters", lambda *a, **k: (
        svd_threads.append(threading.current_thread().name), original(*a, **k))[1])
    state.weight_views.clear()
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["model"] = "shapes-classifier"
    at.run()
    at.sidebar.file_uploader[0].upload("photo.jpg", photo_bytes(w=610), "image/jpeg")
    at.run()
    assert not at.exception
    assert at.session_state["model"] == "shapes-classifier"
    inp = at.session_state["_input"]
    assert inp.label == "upload: photo.jpg"
    settle()
    held = state.shared_cache().keys()
    for name in ("_attention_summary", "_logits", "_sublayer_norms", "_experiment"):
        assert any(k[0] == name and k[1] == inp.key for k in held), name
    assert svd_threads == ["vit-read-ahead"]  # computed ahead, once
    read_ahead_on.clear()
    for page in ("embeddings", "attention", "masks", "mlp", "experiments"):
        at.query_params["page"] = page
        at.run()
        assert not at.exception, page
        assert read_ahead_on == [], (page, read_ahead_on)  # everything was computed ahead
    assert at.session_state["model"] == "shapes-classifier"
    assert svd_threads == ["vit-read-ahead"]  # the Embeddings page found them computed


@pytest.mark.slow  # a child process or a whole app session: the full suite runs it
def test_a_photo_replaced_at_once_has_its_read_ahead_dropped(read_ahead_on, monkeypatch):
    settle()  # nothing of an earlier test left in the queue
    quiet = threading.Event()  # the worker "goes quiet" only when the test says so
    monkeypatch.setattr(readahead.shared(), "_idle", lambda: quiet.wait(60))
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["model"] = "shapes-classifier"
    at.run()
    skipped = readahead.shared().skipped
    at.sidebar.file_uploader[0].upload("a.jpg", photo_bytes(w=620), "image/jpeg")
    at.run()
    first = at.session_state["_input"]
    at.sidebar.file_uploader[0].upload("b.jpg", photo_bytes(w=630), "image/jpeg")
    at.run()  # before the worker was ever quiet: a.jpg's items must not run
    second = at.session_state["_input"]
    assert not at.exception and first.key != second.key
    quiet.set()
    settle()
    held = state.shared_cache().keys()
    assert not any(k[0] == "_attention_summary" and k[1] == first.key for k in held)
    assert any(k[0] == "_attention_summary" and k[1] == second.key for k in held)
    assert readahead.shared().skipped - skipped >= len(
        ahead.plan(first, "shapes-classifier", None, 0))


# ---------------------------------------------------------------- a class on the Why stage
def test_a_class_gets_every_students_maps_before_anyones_table(monkeypatch):
    """Three students of a class whose lesson is the Why stage: the read-ahead's long jobs (the six
    maps ~18 s, the whole table ~80 s more on ViT-B/16) in the order it starts them: every
    student's maps first, then the tables (the table's first part is the maps: a table started
    first would make the last student wait for everyone's tables before its maps)."""
    from ui.selection import inputs
    from ui.stages.why import compute, patch_compute

    started: list[tuple[str, str]] = []  # (what, whose image), as the read-ahead starts it
    done: set[tuple[str, str]] = set()

    def maps(inp, name, mask, target):
        if ("maps", inp.key) not in done:  # computed once (the shared cache), as the app does
            started.append(("maps", inp.label))
            done.add(("maps", inp.key))

    def table(inp, name, mask, target):
        maps(inp, name, mask, target)  # compute._table reads the cached maps first
        if ("table", inp.key) not in done:
            started.append(("table", inp.label))
            done.add(("table", inp.key))

    monkeypatch.setattr(compute, "maps", maps)
    monkeypatch.setattr(compute, "table", table)
    monkeypatch.setattr(compute, "target", lambda inp, name, mask=None: "circle")
    for name in ("sanity", "patched", "kinds"):  # the later steps' reads: not what is tested
        monkeypatch.setattr(patch_compute, name, lambda *a, **k: ("x",))
    gate = threading.Event()
    ra = readahead.ReadAhead(idle=gate.wait)
    plans = []
    for who in "abc":
        inp = inputs.make_input(who, photo_bytes(w=600 + ord(who)))
        plans.append(ahead.plan(inp, "shapes-classifier", None, None, start="why",
                                lesson=("why",)))
        ra.add(readahead._Interest((who, "shapes-classifier", None, "why")), plans[-1])
    gate.set()
    deadline = time.monotonic() + 60
    while ra.done + ra.failed + ra.skipped < sum(map(len, plans)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ra.failed == 0
    assert started == [("maps", "a"), ("maps", "b"), ("maps", "c"),
                       ("table", "a"), ("table", "b"), ("table", "c")]
