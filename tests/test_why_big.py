"""The why stage on the ViT-B/16-size preset (slow: its maps take minutes cold): the page does not
wait for them (a progress bar, no exception), and once they are there the page draws them."""

from __future__ import annotations

import time

import pytest

from tests.support import charts, open_app
from ui import keys
from ui.stages.why import compute

pytestmark = pytest.mark.slow

B16 = "vit-b16"
WAIT_S = 3600  # the most this test waits for the maps on a loaded machine (not a speed claim)


def test_vit_b16_shows_progress_then_its_maps_and_keeps_the_worker_serving():
    started = time.perf_counter()
    at = open_app("why", B16, no_error=True)
    first_view = time.perf_counter() - started
    assert not at.exception
    assert at.get("progress"), "the page shows a progress bar while the maps are computed"
    inp = at.session_state[keys.INPUT]
    target = compute.target(inp, B16)
    maps_key = compute.held_key("maps", inp, B16, None, target)
    # the other sessions' passes run between the long job's batches: tests/test_worker.py
    # (`between`, deterministic); timing it here raced the maps on a fast machine
    end = time.monotonic() + WAIT_S
    while not compute.computed(maps_key) and time.monotonic() < end:
        time.sleep(2)
    maps_wait = time.perf_counter() - started
    assert compute.computed(maps_key), "the maps were not computed in time"
    at.run()
    assert not at.exception
    assert any(t.startswith("What made") for t in charts(at))
    print(f"\nvit-b16 why page: first view {first_view:.1f} s (progress bar), "
          f"the maps ready after {maps_wait:.0f} s")
