"""A new photo's pass starts in the uploader's callback, before the sidebar and the page are drawn
(ui/state.start_trace), and is the one pass the page then shows."""

import threading

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.test_app import APP, photo_bytes
from ui import state
from vit_core import load_image, load_model, preprocess, run_trace


@pytest.mark.parametrize("mask", ["trained", "causal"])
def test_a_new_photo_is_traced_once_and_from_the_uploaders_callback(monkeypatch, mask):
    calls = []  # (the thread that asked for a pass, the pixels it was for)
    original = state.worker.run

    def run(fn, *args, **kwargs):
        if fn is run_trace:
            calls.append((threading.current_thread().name, args[1]))
        return original(fn, *args, **kwargs)

    monkeypatch.setattr(state.worker, "run", run)
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["model"] = "shapes-classifier"
    at.session_state["mask"] = mask
    at.run()
    raw = photo_bytes(w={"trained": 581, "causal": 583}[mask])  # no other test uses these sizes
    at.sidebar.file_uploader[0].upload("new.jpg", raw, "image/jpeg")
    calls.clear()
    at.run()
    assert not at.exception
    assert at.session_state["model"] == "shapes-classifier"
    assert at.session_state["_input"].label == "upload: new.jpg"
    model = load_model("shapes-classifier")
    pixels = preprocess(load_image(raw), model.config)
    mine = [name for name, p in calls if torch.equal(p, pixels)]
    assert len(mine) == 1 and mine[0].startswith("vit-head-start"), calls  # once, ahead
    # the pass the page shows is that one, for this image and mask
    want = run_trace(model, pixels, mask=None if mask == "trained" else mask).logits
    shown = state.trace(at.session_state["_input"], "shapes-classifier",
                        mask=None if mask == "trained" else mask).logits
    torch.testing.assert_close(shown, want, rtol=0, atol=1e-5)
    assert len(calls) == 1  # the page asked for nothing else
