"""Read-ahead: while a student reads one page, the worker computes what the later pages of the tour
will ask for, in time it would otherwise spend idle.

Why: the Overview, Patches, Embeddings and Q/K/V pages read only the image's trace, so the worker
idles while a student reads them; then Attention (a quarter of a pass for the attention summary),
Masks (a pass under the causal mask, two captions), MLP (the attention half of every block) and
Experiments (a pass with a head switched off) each make the student wait for the worker. On
ViT-B/16 that is ~1 s of passes a student meets page by page; computed ahead, those pages open
at once. The Embeddings page's pictures of the weights are computed once per model (an SVD of
W_E, ~0.5 s on ViT-B/16), so the first item is those: otherwise the first students of a class to
reach that page all wait for them.

What: after each script run app.py calls `schedule()`. The first time a session shows an image on a
model with a mask, it queues, for that image, model and mask, what the later pages compute first
with their default settings (`plan`, in the tour's order). One thread works through the queue, one
item at a time, every session's next item before anyone's later ones (a class moves through the
tour together: the student who came last needs the Attention page's summary before the first one
needs the MLP page's norms), and starts an item only after the worker has had nothing queued and no
pass running for QUIET_S (Worker.wait_idle): a student's own request then waits at most for the one
pass in progress, as behind any other student's, and on a busy server (a class of 30 on ViT-B/16)
the read-ahead mostly waits. Items of a session that has since moved to another image, model or
mask are dropped, and so are items queued more than STALE_S ago. Results go into the same cache the
pages read, so a page finds them, or waits for the one in progress (never a second pass); an item
that fails is left for the page, which computes it and shows any error itself.

Off with VIT_EXPLAINER_READ_AHEAD=0 (the test suite's default: its AppTest runs count passes;
tests/conftest.py).
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable

import streamlit as st

from vit_core import bundled_models

from . import keys, state, worker

ENV = "VIT_EXPLAINER_READ_AHEAD"
CAPTIONERS = ("shapes-captioner-prefix", "shapes-captioner-causal")  # the Masks page's pair
QUIET_S = 1.0  # an item starts only after the worker has had nothing to do for this long
STALE_S = 120.0  # items queued longer ago are dropped: that student has read those pages by now
MASK_CAPTION = "a red ball on the grass"  # the Masks page's caption until the student types one


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def masks_page_models(name: str, model) -> tuple[list[str], list[tuple[str, str]], str]:
    """What the Masks page runs for the chosen model: (its captioners, the (captioner, mask) pairs
    it shows live, the classifier it puts under a causal mask)."""
    trained = [m for m in CAPTIONERS if m in bundled_models()]
    if trained:
        captioners = trained
    elif model.config.has_text:
        captioners = [name]
    else:
        captioners = ["vit-b16-text"]
    if len(captioners) > 1:
        runs = [(m, state.get_model(m).config.default_mask) for m in captioners]
    else:
        runs = [(captioners[0], "prefix"), (captioners[0], "causal")]
    fallback = "shapes-classifier" if "shapes-classifier" in bundled_models() else "vit-b16"
    return captioners, runs, name if model.config.num_classes else fallback


def other_sample(inp: state.Input) -> tuple[int, state.Input]:
    """The sample scene the Masks page compares the classifier's causal logits on: the first
    that is not this image. (seed, input)."""
    seed = next(sd for sd in state.sample_seeds() if state.sample_bytes(sd) != inp.data)
    return seed, state.make_input(f"sample: {state.sample_caption(seed)}", state.sample_bytes(seed))


def plan(inp: state.Input, name: str, mask: str | None, layer: int | None,
         caption: str = MASK_CAPTION) -> list[Callable]:
    """The later pages' first requests for this image, model and mask, in the tour's order (each
    a call into ui.state's caches, runnable off a script run). `layer`: the session's layer;
    `caption`: the Masks page's caption."""
    from vit_core.explain.generation import tokenizer_for

    model = state.get_model(name)
    captioners, runs, clf = masks_page_models(name, model)
    cap = state.get_model(captioners[0])
    ids = tokenizer_for(cap).encode(caption, max_len=cap.config.max_text_len).ids
    items = [lambda: state.weight_views(name),  # once per model (an SVD of W_E: ~0.5 s)
             lambda: state.attention_summary(inp, name, mask),
             lambda: state.logits(inp, clf, "causal"),
             lambda: state.logits(other_sample(inp)[1], clf, "causal")]
    for m, k in runs:
        items += [lambda m=m, k=k: state.trace(inp, m, mask=k, text_ids=ids),
                  lambda m=m, k=k: state.greedy_caption(inp, m, k)]
    items.append(lambda: state.sublayer_norms(inp, name, mask))
    c = model.config
    if c.num_classes and not c.has_text and layer is not None:  # the page's default: head 0 off
        items.append(lambda: state.experiment(inp, name, "heads", ((min(layer, c.depth - 1), 0),),
                                              None, mask))
    return items


class _Interest:
    """One session's image, model and mask; cancelled when the session moves on, stale
    STALE_S after it was queued (a session that has closed never says so)."""

    def __init__(self, what: tuple, stale_s: float = STALE_S):
        self.what = what
        self.cancelled = False
        self.until = time.monotonic() + stale_s

    def wanted(self) -> bool:
        return not self.cancelled and time.monotonic() < self.until


class ReadAhead:
    """A queue of (interest, item) and the one thread that runs items while `idle()` allows.

    Items run by their place in their session's plan, then by arrival: every session's next
    page before anyone's later pages (a class moves through the tour together, so the session
    that came last needs its Attention page's summary sooner than the first one needs its MLP
    page), and one session's items in their plan's order."""

    def __init__(self, idle: Callable[[], object]):
        self._idle = idle
        self._items: list = []  # a heap of (place in the plan, arrival, interest, item)
        self._arrivals = itertools.count()
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self.done = self.skipped = self.failed = 0  # counts (tests read them)

    def add(self, interest: _Interest, items: list[Callable]) -> None:
        with self._lock:
            for place, item in enumerate(items):
                heapq.heappush(self._items, (place, next(self._arrivals), interest, item))
            if self._thread is None:  # started on first use, not on import
                self._thread = threading.Thread(target=self._loop, name="vit-read-ahead",
                                                daemon=True)
                self._thread.start()
            self._lock.notify()

    def pending(self) -> int:
        with self._lock:
            return len(self._items)

    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._items:
                    self._lock.wait()
                _, _, interest, item = heapq.heappop(self._items)
            if interest.wanted():
                self._idle()
            if not interest.wanted():
                self.skipped += 1
                continue
            try:
                item()
                self.done += 1
            except Exception:  # a favour only: the page computes it and shows any error itself
                self.failed += 1


_shared: ReadAhead | None = None
_start_lock = threading.Lock()


def shared() -> ReadAhead:
    """The one read-ahead queue of the server (its thread starts with the first item)."""
    global _shared
    with _start_lock:
        if _shared is None:
            _shared = ReadAhead(lambda: worker.shared().wait_idle(QUIET_S))
        return _shared


def schedule() -> None:
    """Queue the later pages' work for the session's image, model and mask, once per
    combination; cancel what was queued for the previous one. Call at the end of a script run."""
    if not enabled():
        return
    inp, name = state.current()
    mask = state.same_mask(name, state.chosen_mask())
    what = (inp.key, name, mask)
    old = st.session_state.get(keys.READ_AHEAD)
    if old is not None and old.what == what:
        return
    if old is not None:
        old.cancelled = True
    if st.session_state.get(keys.INPUT_ERROR):  # the page shows a sample instead: nothing to do
        return
    interest = _Interest(what)
    st.session_state[keys.READ_AHEAD] = interest
    shared().add(interest, plan(inp, name, mask, st.session_state.get(keys.LAYER),
                                st.session_state.get(keys.MASK_CAPTION, MASK_CAPTION)))
