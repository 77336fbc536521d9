"""ui/serving/ticking.py over a real `streamlit run`, spoken to as a browser
(tools/st_protocol.Tab): each run of the page draws its timed fragment under a new id, a timer's
rerun of an earlier run's fragment is dropped by the server (it is what, arriving just as a run
ended, cost that run its last messages), and the current one's ticks run it."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg

from tests.support import served
from tools.st_protocol import Tab

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = '''
import streamlit as st
from ui.serving.ticking import ticking

ss = st.session_state
ss["n"] = ss.get("n", 0) + 1
st.markdown(f"run {ss['n']}")


@ticking(600)
def clock(n):
    ss["ticks"] = ss.get("ticks", 0) + 1
    st.markdown(f"tick {ss['ticks']} of run {n}")


clock(ss["n"])
'''


async def _tick(tab: Tab, fragment: str) -> None:
    """Send a timer's rerun of `fragment`, as the browser's timer does, without waiting."""
    msg = BackMsg()
    msg.rerun_script.query_string, msg.rerun_script.page_script_hash = tab.query, tab.page_hash
    msg.rerun_script.widget_states.widgets.extend(tab.widgets.current())
    msg.rerun_script.fragment_id, msg.rerun_script.is_auto_rerun = fragment, True
    await tab.send(msg)


@pytest.mark.slow
def test_each_run_draws_its_timed_fragment_under_a_new_id_and_a_late_tick_is_dropped(tmp_path):
    async def walk(url):
        tab = Tab(url, timeout=60)
        first = await tab.open()
        one = set(tab.timers)
        second = await tab.rerun()
        two = set(tab.timers)
        await _tick(tab, *one)  # the first run's timer, late
        late = await tab.pushed(3.0)
        await _tick(tab, *two)
        now = await tab.pushed(10.0)
        await tab.close()
        return first, second, one, two, late, now

    with served(tmp_path, SCRIPT) as (url, _):
        first, second, one, two, late, now = asyncio.run(walk(url))
    assert "tick 1 of run 1" in first.texts and "tick 2 of run 2" in second.texts
    assert len(one) == len(two) == 1 and one != two  # a new id at each run
    assert late is None  # no run for a fragment the last full run did not draw
    assert now is not None and not now.full and now.texts == ["tick 3 of run 2"]


def test_no_page_module_draws_a_timed_fragment_but_through_ticking():
    found = [f"{f.relative_to(ROOT)}:{node.lineno}"
             for f in [ROOT / "app.py", *(ROOT / "ui").rglob("*.py")] if f.name != "ticking.py"
             for node in ast.walk(ast.parse(f.read_text())) if isinstance(node, ast.Call)
             and any(k.arg == "run_every" for k in node.keywords)]
    assert not found, found
