"""The app's one cache budget (ui/serving/cache.py, ui/serving/state.py): bounded by real bytes,
least recently
used dropped first, hits are the same object, thread-safe, and read once from --cache-mb or
VIT_EXPLAINER_CACHE_MB."""

import threading
import time

import numpy as np
import pytest
import torch

from ui.selection import inputs
from ui.serving import cache, state
from vit_core import load_image, load_model, preprocess, run_trace

MODEL = "shapes-classifier"


@pytest.fixture(scope="module")
def traces():
    """Six real traces of the bundled classifier, on six sample scenes."""
    model = load_model(MODEL)
    seeds = inputs.sample_seeds()[:6]
    return [run_trace(model, preprocess(load_image(inputs.sample_bytes(s)), model.config))
            for s in seeds]


def test_a_trace_counts_its_shared_storage_once():
    model = load_model(MODEL)  # its own trace: reading every name below makes it hold more
    tr = run_trace(model, preprocess(load_image(inputs.sample_bytes(inputs.sample_seeds()[0])),
                                     model.config))
    assert tr["blocks.1.resid_pre"].data_ptr() == tr["blocks.0.resid_post"].data_ptr()
    tensors = sum(t.untyped_storage().nbytes() for t in tr.values())  # shared ones twice
    n = cache.size_of(tr)
    assert tr.nbytes() <= n <= tr.nbytes() + tr.mask.untyped_storage().nbytes() + 10_000
    assert n < tensors
    t = torch.zeros(1000)
    assert cache.size_of({"a": t, "b": t[10:], "c": [t.view(10, 100)]}) == 4000 + 3  # + keys
    a = np.zeros((100, 10), np.float32)
    assert cache.size_of((a, a[3:], a.T)) == 4000
    assert cache.size_of({"pca": np.zeros((7, 7, 3))}) == 7 * 7 * 3 * 8 + len("pca")


def test_measuring_a_lean_trace_computes_nothing_and_a_hit_measures_it_again():
    """A fresh lean trace is measured as what it holds (not by reading every name, which would
    recompute every block); after a page reads blocks it holds more, and the next hit counts
    that and drops older entries until the total fits again."""
    model = load_model(MODEL)
    seeds = inputs.sample_seeds()[:3]
    fresh = [run_trace(model, preprocess(load_image(inputs.sample_bytes(s)), model.config))
             for s in seeds]
    kept = fresh[0].nbytes()
    n = cache.size_of(fresh[0])
    assert fresh[0].nbytes() == kept  # nothing recomputed by measuring
    mask = fresh[0].mask.untyped_storage().nbytes()
    assert n == kept + mask
    full = run_trace(model, preprocess(load_image(inputs.sample_bytes(seeds[0])), model.config),
                     lean=False)
    assert n < full.nbytes() / 3

    fresh[2]["blocks.0.mlp.pre"]
    block = fresh[2].nbytes() - kept  # what one recomputed block holds
    lru = cache.ByteLRU(2 * n + block + block // 2)  # two traces and one block, not two
    for i in (0, 1):
        lru.get(i, lambda i=i: fresh[i])
    assert lru.held == 2 * n and lru.keys() == [0, 1]
    fresh[0]["blocks.0.mlp.pre"]  # a page reads block 0 of image 0: the trace grows
    grown = fresh[0].nbytes() + mask
    assert grown == n + block
    assert lru.get(0, lambda: None) is fresh[0]
    assert lru.held == grown + n  # measured again on the hit
    before = fresh[0]["blocks.0.mlp.pre"]
    fresh[1]["blocks.1.attn.pattern"]
    lru.get(1, lambda: None)  # both have grown past the budget: the older entry goes
    assert lru.keys() == [1] and lru.held == cache.size_of(fresh[1]) <= lru.budget
    assert torch.equal(fresh[0]["blocks.0.mlp.pre"], before)  # read again: recomputed, the same


def test_dropping_a_model_drops_what_was_computed_with_it_and_releases_it(traces):
    """A model is counted (its parameters) and owns the entries computed with it: when the
    budget drops the model, its traces go too, so nothing keeps the model alive uncounted."""
    import gc
    import weakref

    model = load_model(MODEL)
    weights = sum(p.untyped_storage().nbytes() for p in model.parameters())
    assert cache.size_of(model) == weights
    alive = weakref.ref(model)
    lru = cache.ByteLRU(weights + 2 * cache.size_of(traces[0]))
    lru.get("model", lambda m=model: m)
    pixels = preprocess(load_image(inputs.sample_bytes(inputs.sample_seeds()[0])), model.config)
    tr = lru.get("trace", lambda m=model: run_trace(m, pixels), owner="model")
    assert lru.keys() == ["model", "trace"] and lru.held == weights + cache.size_of(tr)
    assert lru.get("orphan", lambda: torch.ones(3), owner="not cached") is not None
    assert "orphan" not in lru  # its owner is not kept: neither is it
    del model, tr
    lru.get("other", lambda: torch.zeros(weights // 4 + 1))  # no room for the model any more
    assert lru.keys() == ["other"]
    gc.collect()
    assert alive() is None  # released: the dropped trace held the last reference


def test_more_traces_than_fit_keep_the_most_recent_under_the_budget(traces):
    size = cache.size_of(traces[0])
    lru = cache.ByteLRU(int(3.5 * size))
    calls = []

    def compute(i):
        calls.append(i)
        return traces[i]

    for i in range(6):
        assert lru.get(("trace", i), lambda i=i: compute(i)) is traces[i]
        assert lru.held <= lru.budget
    assert lru.held == sum(cache.size_of(traces[i]) for i in (3, 4, 5)) <= lru.budget
    assert lru.keys() == [("trace", 3), ("trace", 4), ("trace", 5)]
    assert lru.get(("trace", 3), lambda: compute(-1)) is traces[3]  # a hit: the same object
    assert calls == [0, 1, 2, 3, 4, 5]
    lru.get(("trace", 0), lambda: compute(0))  # 3 was just used, so 4 goes
    assert lru.keys() == [("trace", 5), ("trace", 3), ("trace", 0)]
    assert lru.held <= lru.budget


def test_a_value_bigger_than_the_budget_is_returned_but_not_kept(traces):
    lru = cache.ByteLRU(cache.size_of(traces[0]) // 2)
    assert lru.get("big", lambda: traces[0]) is traces[0]
    assert lru.keys() == [] and lru.held == 0


def test_an_exception_is_not_cached():
    lru = cache.ByteLRU(10_000)
    with pytest.raises(ValueError):
        lru.get("k", lambda: (_ for _ in ()).throw(ValueError("bad image")))
    assert "k" not in lru and lru.get("k", lambda: torch.ones(3)).tolist() == [1, 1, 1]


class Asked:
    """A key as one thread asks for it: equal to the others for the same key, and noting that
    the cache has looked it up (hashed it: the thread is inside `get`)."""

    def __init__(self, key: int, looked: dict, cond: threading.Condition):
        self.key, self._looked, self._cond = key, looked, cond

    def __hash__(self):
        with self._cond:
            self._looked.setdefault(self.key, set()).add(id(self))
            self._cond.notify_all()
        return hash(self.key)

    def __eq__(self, other):
        return isinstance(other, Asked) and other.key == self.key


def test_many_threads_compute_a_key_once_and_share_the_same_object():
    """16 threads ask for 4 keys at once. Each key's computation goes on until all 4 threads
    asking for it are inside `get`, so a cache that lets a second thread compute a key already
    being computed runs it again (red); the budget holds every value, so nothing is evicted and
    a thread that comes late gets the same object."""
    lru = cache.ByteLRU(100 * 4000)
    calls, looked = [], {}
    cond = threading.Condition()

    def slow(key):
        with cond:
            calls.append(key)
            asked = cond.wait_for(lambda: len(looked.get(key, ())) == 4, timeout=120)
        assert asked, f"the threads asking for {key} never all reached the cache"
        return torch.full((1000,), float(key))

    results = {}

    def ask(t):
        key = t % 4
        results[t] = (key, lru.get(Asked(key, looked, cond), lambda: slow(key)))
        for j in range(20):  # and other keys meanwhile (60 values of 4000 bytes all fit)
            lru.get(100 + (t * 7 + j) % 60, lambda: torch.zeros(1000))

    threads = [threading.Thread(target=ask, args=(t,)) for t in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(calls) == [0, 1, 2, 3]  # each key computed once although 4 threads asked
    for key in range(4):
        same = [v for k, v in results.values() if k == key]
        assert len(same) == 4 and all(v is same[0] for v in same)
    assert lru.held == 4000 * len(lru.keys()) <= lru.budget


def test_many_threads_reading_past_the_budget_never_compute_one_key_twice_at_once():
    """Under eviction a key may be computed again after it was dropped, but never while its
    computation is still running, and the bytes held always match what is kept."""
    lru = cache.ByteLRU(40 * 4000)
    running, overlaps, wrong, lock = set(), [], [], threading.Lock()

    def compute(key):
        with lock:
            if key in running:
                overlaps.append(key)
            running.add(key)
        time.sleep(0.001)  # let another thread in while this one computes
        with lock:
            running.discard(key)
        return torch.full((1000,), float(key))

    def ask(t):
        for j in range(200):
            key = (t * 7 + j) % 60
            if lru.get(key, lambda key=key: compute(key))[0] != key:
                wrong.append(key)

    threads = [threading.Thread(target=ask, args=(t,)) for t in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert overlaps == [] and wrong == []
    assert len(lru.keys()) <= 40 and lru.held == 4000 * len(lru.keys()) <= lru.budget


@pytest.mark.parametrize("argv,env,mb", [
    ([], {}, cache.DEFAULT_MB),
    ([], {"VIT_EXPLAINER_CACHE_MB": "300"}, 300),
    (["--cache-mb", "120"], {"VIT_EXPLAINER_CACHE_MB": "300"}, 120),  # the flag wins
    (["--weights", "x.pth", "--cache-mb=0"], {}, 0),  # 0: nothing is kept
    (["--cache-mb", "lots"], {}, cache.DEFAULT_MB),
    ([], {"VIT_EXPLAINER_CACHE_MB": "-5"}, cache.DEFAULT_MB),
])
def test_the_budget_comes_from_the_flag_or_the_environment(argv, env, mb):
    assert cache.budget_mb(argv, env) == mb


def test_the_default_budget_holds_a_vit_b16_and_a_class_of_30():
    """The README's classroom: ViT-B/16 and 30 students' lean traces with one block read."""
    model = load_model("vit-b16")
    tr = run_trace(model, torch.zeros(1, 3, 224, 224))
    tr["blocks.0.ln1"]
    class_of_30 = cache.size_of(model) + 30 * 2 * cache.size_of(tr)  # + an experiment each
    assert class_of_30 <= cache.DEFAULT_MB * cache.MB <= 2 * class_of_30


@pytest.fixture
def small_app_cache(monkeypatch, traces):
    """The app's shared cache, made again with room for the classifier and about 4 of its lean
    traces (one image's trace, experiment trace and prepared image take about 3)."""
    mb = (cache.size_of(load_model(MODEL)) + 4 * cache.size_of(traces[0])) / cache.MB
    monkeypatch.setenv(cache.ENV, str(mb))
    state.shared_cache.clear()
    yield state.shared_cache()
    state.shared_cache.clear()


def test_the_app_s_traces_experiments_and_images_share_one_budget(small_app_cache, traces):
    lru = small_app_cache
    assert lru.budget == int(cache.size_of(load_model(MODEL)) + 4 * cache.size_of(traces[0]))
    images = [inputs.make_input(f"sample {s}", inputs.sample_bytes(s))
              for s in inputs.sample_seeds()[:6]]
    seen = []
    for inp in images:
        tr = state.trace(inp, MODEL)
        ex = state.experiment(inp, MODEL, "positions")
        seen.append((tr, ex))
        assert lru.held <= lru.budget
    # the most recent stay: the last image's experiment, trace and prepared image
    last = images[-1].key
    assert ("_experiment", last, MODEL, "positions", (), None, None) in lru  # text, mask
    assert ("_trace", last, MODEL, None, None) in lru
    assert ("_prepare", last, MODEL) in lru
    assert ("_trace", images[0].key, MODEL, None, None) not in lru  # the oldest went
    assert state.trace(images[-1], MODEL) is seen[-1][0]  # a hit is the same object
    assert state.experiment(images[-1], MODEL, "positions") is seen[-1][1]
    # what was dropped is computed again, equal but new
    again = state.trace(images[0], MODEL)
    assert again is not seen[0][0] and torch.equal(again.logits, seen[0][0].logits)
    assert lru.held <= lru.budget


def test_a_trace_bigger_than_the_app_s_budget_is_still_shown(monkeypatch):
    monkeypatch.setenv(cache.ENV, "1")  # 1 MB: a vit-ti16 trace is ~45 MB
    state.shared_cache.clear()
    try:
        inp = inputs.make_input("sample", inputs.sample_bytes(inputs.sample_seeds()[0]))
        tr = state.trace(inp, "vit-ti16")
        assert tr["blocks.11.attn.pattern"].shape == (3, 197, 197)
        assert ("_trace", inp.key, "vit-ti16", None, None) not in state.shared_cache()
        assert state.shared_cache().held <= 2**20
    finally:
        state.shared_cache.clear()


def test_summaries_pca_and_generations_count_against_the_same_budget(monkeypatch):
    monkeypatch.setenv(cache.ENV, "200")
    state.shared_cache.clear()
    try:
        lru = state.shared_cache()
        name = "shapes-captioner-causal"
        inp = inputs.make_input("sample", inputs.sample_bytes(inputs.sample_seeds()[1]))
        values = [state.prepare(inp, name), state.trace(inp, name)]
        values.append(state._attention_summary(inp.key, name, None, values[1]))
        values.append(state._patch_pca(inp.key, name, None, values[1]))
        values.append(state.generation(inp, name))
        assert sorted(k[0] for k in lru.keys()) == ["_attention_summary", "_generation",
                                                    "_patch_pca", "_prepare", "_trace",
                                                    "get_model"]
        assert state.trace(inp, name) is values[1]  # a hit measures the grown trace again
        values.append(state.get_model(name))
        assert lru.held == sum(cache.size_of(v) for v in values)
        roll = values[2]["rollout"]  # [S, S]: counted
        assert cache.size_of(values[2]) >= roll.numel() * roll.element_size()
    finally:
        state.shared_cache.clear()


def test_one_function_s_entries_can_be_dropped(monkeypatch):
    monkeypatch.setenv(cache.ENV, "100")
    state.shared_cache.clear()
    try:
        inp = inputs.make_input("sample", inputs.sample_bytes(inputs.sample_seeds()[0]))
        state.trace(inp, MODEL)
        state._trace.clear()  # what benchmarks/ does between first views
        lru = state.shared_cache()
        assert sorted(k[0] for k in lru.keys()) == ["_prepare", "get_model"]
        assert lru.held == cache.size_of(state.prepare(inp, MODEL)) + cache.size_of(
            state.get_model(MODEL))
    finally:
        state.shared_cache.clear()


def test_asking_for_the_trained_mask_by_name_reuses_the_same_pass(monkeypatch):
    """The Masks page asks the classifier for mask="full" and the captioners for their own mask
    by name; the first view asked with None. Same mask, same pass: one cache entry, one object.
    Another mask is another pass."""
    monkeypatch.setenv(cache.ENV, "200")
    state.shared_cache.clear()
    try:
        inp = inputs.make_input("sample", inputs.sample_bytes(inputs.sample_seeds()[2]))
        first = state.trace(inp, MODEL)
        assert state.trace(inp, MODEL, mask="full") is first
        causal = state.trace(inp, MODEL, mask="causal")
        assert causal is not first and causal.mask_kind == "causal"
        cap = "shapes-captioner-prefix"
        assert state.greedy_caption(inp, cap, "prefix") is state.greedy_caption(inp, cap)
        assert state.experiment(inp, MODEL, "positions", mask="full") is \
            state.experiment(inp, MODEL, "positions")
        assert sorted(k[0] for k in state.shared_cache().keys()) == [
            "_experiment", "_generation", "_prepare", "_prepare", "_trace", "_trace",
            "get_model", "get_model"]
    finally:
        state.shared_cache.clear()


@pytest.mark.parametrize("model", ["shapes-classifier", "shapes-captioner-prefix"])
def test_the_first_view_keeps_only_what_the_pass_kept(model):
    """The overview draws the model map and the stage table from shapes (Trace.shape): a new
    image's first view recomputes no block, so its trace stays as small as the pass left it."""
    from streamlit.testing.v1 import AppTest

    from tests.support import APP
    from vit_core.trace import Trace

    state.shared_cache.clear()
    try:
        at = AppTest.from_file(APP, default_timeout=120)
        at.session_state["model"] = model
        at.run()
        assert not at.exception and at.session_state["model"] == model
        traces = [e.value for e in state.shared_cache()._items.values()
                  if isinstance(e.value, Trace)]
        assert traces and all(not t._recomputed.tensors() for t in traces)
    finally:
        state.shared_cache.clear()
