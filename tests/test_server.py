"""ui/serving/server.py, the one module that names Streamlit's private internals: each one it
touches is
there in the installed streamlit (1.65.0) and behaves as the push relies on (over a real
`streamlit run`, spoken to as a browser: tools/st_protocol.Tab), each one's absence makes
`mode()` answer "poll" with ONE log line naming it, a polling page follows its class without
the push, and no other module of the app names a private Streamlit name."""

from __future__ import annotations

import asyncio
import logging
import re
import textwrap
import types
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support import served
from tools.st_protocol import Tab
from ui.serving import server

ROOT = Path(__file__).resolve().parents[1]
PRIVATE = re.compile(r"streamlit\.(runtime|web|proto)|_session_mgr|_scriptrunner|"
                     r"_client_state|_event_loop|script_run_ctx|Runtime\.")


# ------------------------------------------------------------------ only here
def test_no_other_module_names_a_private_streamlit_name():
    files = [ROOT / "app.py", *(ROOT / "ui").rglob("*.py")]
    found = [f"{f.relative_to(ROOT)}:{i}: {line.strip()}"
             for f in files if f.name != "server.py" or f.parent.name != "serving"
             for i, line in enumerate(f.read_text().splitlines(), 1) if PRIVATE.search(line)]
    assert not found, "\n".join(found)


# ------------------------------------------------------------------ each internal is there
def test_get_script_run_ctx_is_there_and_none_outside_a_run():
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    assert get_script_run_ctx(suppress_warning=True) is None


def test_the_runtime_and_its_session_manager_are_there():
    from streamlit.runtime import Runtime
    from streamlit.runtime.session_manager import SessionManager

    assert callable(Runtime.exists) and callable(Runtime.instance) and not Runtime.exists()
    assert "_session_mgr" in Runtime.__init__.__code__.co_names  # set when a server starts
    assert callable(SessionManager.get_active_session_info)


@pytest.mark.parametrize("name", ["_event_loop", "_client_state", "_scriptrunner"])
def test_an_app_session_holds_the_attributes_the_push_reads(name):
    from streamlit.runtime.app_session import AppSession

    assert name in AppSession.__init__.__code__.co_names  # (their use: the served test below)
    assert callable(AppSession.request_rerun)


def test_a_script_runner_takes_st_reruns_request():
    from streamlit.runtime.scriptrunner import ScriptRunner
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

    assert callable(ScriptRunner.request_rerun)
    data = RerunData(query_string="a=1", page_script_hash="h", context_info=None)
    assert (data.query_string, data.page_script_hash) == ("a=1", "h")


def test_a_client_state_has_the_fields_a_rerun_clears():
    assert server._state_fields()
    from streamlit.proto.ClientState_pb2 import ClientState

    s = ClientState(fragment_id="f", is_auto_rerun=True)
    s.ClearField("widget_states")
    assert (s.fragment_id, s.is_auto_rerun) == ("f", True)


# ------------------------------------------------------------------ absent: one line, "poll"
def _session():
    """A stand-in of an AppSession with everything the push reads."""
    loop = types.SimpleNamespace(call_soon_threadsafe=print, call_later=print)
    last = types.SimpleNamespace(query_string="", page_script_hash="", context_info=None)
    return types.SimpleNamespace(_event_loop=loop, _client_state=last, _scriptrunner=None,
                                 request_rerun=print)


@pytest.fixture
def running(monkeypatch):
    """A server's runtime as the checks see it (none runs in this process)."""
    runtime = types.SimpleNamespace(
        _session_mgr=types.SimpleNamespace(get_active_session_info=print))
    monkeypatch.setattr(server, "_runtime", lambda: runtime)
    monkeypatch.setattr(server, "_decided", [])
    return runtime


def _hide_module_name(monkeypatch, module: str, name: str):
    import importlib

    monkeypatch.delattr(importlib.import_module(module), name)


ABSENT = {  # internal -> how its absence is simulated
    "get_script_run_ctx": lambda mp, rt, s: _hide_module_name(
        mp, "streamlit.runtime.scriptrunner_utils.script_run_context", "get_script_run_ctx"),
    "Runtime.exists / Runtime.instance": lambda mp, rt, s: _hide_module_name(
        mp, "streamlit.runtime", "Runtime"),
    "Runtime._session_mgr.get_active_session_info": lambda mp, rt, s: mp.delattr(
        rt, "_session_mgr"),
    "AppSession._event_loop.call_soon_threadsafe / call_later": lambda mp, rt, s: mp.delattr(
        s._event_loop, "call_later"),
    "AppSession._client_state (RerunData from it)": lambda mp, rt, s: mp.delattr(
        s, "_client_state"),
    "AppSession._scriptrunner.request_rerun": lambda mp, rt, s: mp.delattr(s, "_scriptrunner"),
    "AppSession.request_rerun": lambda mp, rt, s: mp.setattr(s, "request_rerun", None),
    "ClientState (widget_states, fragment_id, is_auto_rerun)": lambda mp, rt, s: mp.setattr(
        server, "_client_state", lambda: types.SimpleNamespace(
            DESCRIPTOR=types.SimpleNamespace(fields_by_name={"widget_states": 1}))),
}


def test_every_internal_probed_has_its_absence_tested(running):
    assert set(server._probes(_session())) == set(ABSENT)


def test_with_every_internal_there_the_server_pushes(running, monkeypatch, caplog):
    monkeypatch.delenv(server.PUSH_ENV, raising=False)
    assert server.missing(_session()) is None
    with caplog.at_level(logging.INFO, logger=server.__name__):
        assert server._decide(_session()) == server.PUSH
    assert caplog.records == []


@pytest.mark.parametrize("name", list(ABSENT))
def test_a_missing_internal_means_polling_said_in_one_line(name, running, monkeypatch, caplog):
    monkeypatch.delenv(server.PUSH_ENV, raising=False)
    session = _session()
    ABSENT[name](monkeypatch, running, session)
    assert server.missing(session) == name
    with caplog.at_level(logging.INFO, logger=server.__name__):
        assert server._decide(session) == server.POLL
    assert [r.getMessage() for r in caplog.records] == [
        f"Streamlit internals: {name} missing; a live class's pages poll instead "
        "(documented st.fragment(run_every))"]


def test_the_mode_is_decided_once(monkeypatch):
    monkeypatch.setattr(server, "_decided", [server.POLL])
    monkeypatch.setattr(server, "_runtime", lambda: pytest.fail("looked again"))
    assert server.mode() == server.POLL and server.session_id() is None
    assert server.rerun("any") is False and not server.alive("any")


def test_without_a_server_nothing_is_pushed_nor_decided(monkeypatch):
    monkeypatch.setattr(server, "_decided", [])
    assert server.mode() == server.NONE and server._decided == []
    assert server.session_id() is None and server.rerun("a-session-id") is False


@pytest.mark.parametrize("value,on", [(None, True), ("1", True), ("0", False), (" Off ", False),
                                      ("no", False), ("false", False)])
def test_the_push_switch_is_read_from_the_environment(value, on):
    assert server.wanted({} if value is None else {server.PUSH_ENV: value}) is on


# ------------------------------------------------------------------ over a real server
SCRIPT = '''
import threading, time
from pathlib import Path
import streamlit as st
from ui.serving import server
from ui.live import push

ss = st.session_state
ss["n"] = ss.get("n", 0) + 1
me = server.session_id()
st.markdown(f"run {ss['n']} mode {server.mode()} me {me} x {st.query_params.get('x')}")
if me is not None and ss["n"] == 1:  # idle then: a run is started (AppSession.request_rerun)
    threading.Timer(0.5, server.rerun, args=(me,)).start()
    st.markdown(f"unknown {server.rerun('no-such-session')}")
if me is not None and ss["n"] == 2:  # asked again while it runs (ScriptRunner.request_rerun)
    threading.Timer(0.3, server.rerun, args=(me,)).start()
    time.sleep(1.5)
    st.markdown("run 2 ended")


@st.cache_resource
def pages():
    p = push.Pages(reach=lambda sid: False)
    p.latest = lambda code: Class(int(Path(FLAG).read_text()), ())
    return p


class Class:
    def __init__(self, version, revealed):
        self.version, self.revealed = version, revealed


shown = (pages().latest("C").version, ())
st.markdown(f"version {shown[0]}")
pages().note(me, "C", True, shown)  # polls when the server cannot push
'''


@contextmanager
def _served(tmp_path: Path, env: dict):
    flag = tmp_path / "flag"
    flag.write_text("0")
    with served(tmp_path, f"FLAG = {str(flag)!r}\n" + textwrap.dedent(SCRIPT), env) as (url, log):
        yield url, flag, log


def _texts(runs) -> str:
    return " | ".join(" ".join(r.texts) for r in runs)


@pytest.mark.slow
def test_a_rerun_by_id_reaches_that_session_idle_or_running(tmp_path):
    async def walk(url):
        tab = Tab(url, timeout=120)
        first = await tab.open("x=1")
        pushed = await tab.wait(6)  # run 2 (started), run 3 (asked for during run 2)
        await tab.close()
        return tab.session_id, first, pushed

    with _served(tmp_path, {server.PUSH_ENV: "1"}) as (url, _, log):
        sid, first, pushed = asyncio.run(walk(url))
        said = log.read_text()
    assert f"run 1 mode push me {sid} x 1" in first.texts, first.texts  # the page's own id
    assert "unknown False" in first.texts
    lines = [t for r in pushed for t in r.texts if t.startswith("run ")]
    assert lines[-1] == f"run 3 mode push me {sid} x 1", _texts(pushed)  # the address kept
    assert "run 2 ended" not in lines  # asked during a run: it stopped there, as st.rerun does
    assert "Streamlit internals" not in said


@pytest.mark.slow
def test_without_the_push_a_page_polls_and_follows_its_class(tmp_path):
    async def walk(url, flag):
        tab = Tab(url, timeout=120)
        first = await tab.open()
        quiet = await tab.wait(1.5)  # ticks, nothing changed: no full run
        flag.write_text("1")  # the class moves
        moved = await tab.wait(3)
        await tab.close()
        return first, quiet, moved

    with _served(tmp_path, {server.PUSH_ENV: "0"}) as (url, flag, log):
        first, quiet, moved = asyncio.run(walk(url, flag))
        said = log.read_text()
    assert "run 1 mode poll me None x None" in first.texts and "version 0" in first.texts
    assert quiet == [], _texts(quiet)
    assert [r for r in moved if "version 1" in r.texts], _texts(moved)
    assert said.count("Streamlit internals") == 1, said  # one line: the switch is named
