"""The app's one door into Streamlit's server internals (private names), checked once.

Streamlit's documented API lets a page rerun itself (`st.rerun`, `st.fragment(run_every=…)`),
not another session's page. The live class's push (ui/live/push.py) reruns a student's page
from the store's listener thread the moment the class moves; for that it needs, on the pinned
streamlit==1.65.0 (tests/test_server.py checks each one there):

- `get_script_run_ctx` (streamlit.runtime.scriptrunner_utils): the session whose run is on
  this thread, and its id;
- `Runtime.instance()._session_mgr.get_active_session_info(id)`: a connected session by id;
- that `AppSession`'s `_event_loop` (`call_soon_threadsafe`, `call_later`), `_client_state`
  (its last address and page), `_scriptrunner` (`request_rerun(RerunData(…))`, the request
  `st.rerun` makes) and `request_rerun(ClientState)` (a run, as run-on-save starts one).

`mode()` looks, once in a running server (from the first student's page run), that each is
there and callable. If one is missing it logs ONE line naming it and answers "poll": every page
then asks twice a second itself (ui/live/push.py's documented fragment). "none" outside a
server (AppTest, a test): nothing is pushed nor polled. $VIT_EXPLAINER_PUSH=0 chooses "poll"
too (the A/B in docs/performance.md, "A live class"). No other module names a private
Streamlit name (tests/test_server.py greps for them).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping

PUSH_ENV = "VIT_EXPLAINER_PUSH"  # "0": the documented polling even where the push works
FINISHING_WAIT = 0.05  # s between looks at a session whose last run is still being sent
FINISHING_TRIES = 40  # (2 s) then a run starts anyway
PUSH, POLL, NONE = "push", "poll", "none"

_log = logging.getLogger(__name__)
_decided: list[str] = []  # the mode, once decided in a running server


def _ctx_getter():
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    return get_script_run_ctx


def _ctx():
    return _ctx_getter()(suppress_warning=True)


def _runtime_class():
    from streamlit.runtime import Runtime

    return Runtime


def _runner_class():
    from streamlit.runtime.scriptrunner import ScriptRunner

    return ScriptRunner


def _runtime():
    """Streamlit's Runtime if a server runs in this process, else None."""
    runtime = _runtime_class()
    found = runtime.instance() if runtime.exists() else None
    return found if type(found) is runtime else None  # (AppTest's stand-in is a MagicMock)


def _find(runtime, session_id: str):
    info = runtime._session_mgr.get_active_session_info(session_id)
    return None if info is None else info.session


def _rerun_data(last):
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

    return RerunData(query_string=last.query_string, page_script_hash=last.page_script_hash,
                     context_info=last.context_info)


def _client_state():
    from streamlit.proto.ClientState_pb2 import ClientState

    return ClientState()


def _probes(session) -> dict[str, Callable[[], bool]]:
    """Each internal the push uses -> a look that is True when it is there as relied on (an
    error or False: missing)."""
    loop = lambda: session._event_loop  # noqa: E731
    return {
        "get_script_run_ctx": lambda: callable(_ctx_getter()),
        "Runtime.exists / Runtime.instance": lambda: callable(_runtime_class().exists)
            and callable(_runtime_class().instance),
        "Runtime._session_mgr.get_active_session_info":
            lambda: callable(_runtime()._session_mgr.get_active_session_info),
        "AppSession._event_loop.call_soon_threadsafe / call_later":
            lambda: callable(loop().call_soon_threadsafe) and callable(loop().call_later),
        "AppSession._client_state (RerunData from it)":
            lambda: _rerun_data(session._client_state) is not None,
        "AppSession._scriptrunner.request_rerun": lambda: hasattr(session, "_scriptrunner")
            and callable(_runner_class().request_rerun),
        "AppSession.request_rerun": lambda: callable(session.request_rerun),
        "ClientState (widget_states, fragment_id, is_auto_rerun)": _state_fields,
    }


def _state_fields() -> bool:
    fields = _client_state().DESCRIPTOR.fields_by_name
    return all(f in fields for f in ("widget_states", "fragment_id", "is_auto_rerun"))


def missing(session) -> str | None:
    """The first internal the push needs that `session`'s server lacks (None: all there)."""
    for name, look in _probes(session).items():
        try:
            there = look()
        except Exception:  # ImportError, AttributeError, …: the same answer
            there = False
        if not there:
            return name
    return None


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the push may be used: yes, unless $VIT_EXPLAINER_PUSH is 0, off, false or no."""
    value = (os.environ if environ is None else environ).get(PUSH_ENV, "1")
    return value.strip().lower() not in ("0", "off", "false", "no")


def mode() -> str:
    """"push", "poll" or "none" (see the module's text); decided once in a running server, from
    a page run (the check reads that run's session)."""
    if _decided:
        return _decided[0]
    try:
        runtime, ctx = _runtime(), _ctx()
    except Exception:
        runtime = ctx = None
        _log.warning("Streamlit internals: Runtime or get_script_run_ctx missing; "
                     "a live class's pages poll instead (documented st.fragment(run_every))")
        _decided.append(POLL)
        return POLL
    if runtime is None or ctx is None:
        return NONE  # AppTest, a test or a thread: decided by the first page run in a server
    _decided.append(_decide(_find(runtime, ctx.session_id)))
    return _decided[0]


def _decide(session) -> str:
    if not wanted():
        _log.warning("Streamlit internals: not used (%s=0); a live class's pages poll",
                     PUSH_ENV)
        return POLL
    gone = "the page's own session" if session is None else missing(session)
    if gone is None:
        return PUSH
    _log.warning("Streamlit internals: %s missing; a live class's pages poll instead "
                 "(documented st.fragment(run_every))", gone)
    return POLL


def session_id() -> str | None:
    """The id of the session whose script runs on this thread (None outside a script run, or
    when the pages poll: nothing will reach them)."""
    if mode() == POLL:
        return None
    ctx = _ctx()
    return None if ctx is None else ctx.session_id


def _session(session_id: str):
    """This server's AppSession with that id, if its browser is connected (else None)."""
    runtime = _runtime() if _decided == [PUSH] else None
    return None if runtime is None else _find(runtime, session_id)


def alive(session_id: str) -> bool:
    return _session(session_id) is not None


def rerun(session_id: str) -> bool:
    """Ask the server to run that session's page again (from any thread); False when there is
    no such session on this server (closed, or no server, or no push)."""
    session = _session(session_id)
    if session is None:
        return False
    session._event_loop.call_soon_threadsafe(_rerun_now, session, FINISHING_TRIES)
    return True


def _rerun_now(session, tries: int) -> None:
    """On the server's event loop: a full run with the session's last address and page and no
    widget value (each keeps the value the session holds), as `st.rerun` asks for one. A run in
    progress takes it as st.rerun's request (it stops at its next element and runs again; a
    widget change the browser sent meanwhile is kept); a session whose last run ended but is
    still being sent is asked again shortly (starting a run now would drop that run's last
    messages); an idle session starts a run."""
    last = session._client_state
    runner = session._scriptrunner
    if runner is not None:
        if runner.request_rerun(_rerun_data(last)):
            return
        if tries > 0:  # it has finished: its SHUTDOWN, once handled, clears _scriptrunner
            session._event_loop.call_later(FINISHING_WAIT, _rerun_now, session, tries - 1)
            return
    state = _client_state()
    state.CopyFrom(last)
    state.ClearField("widget_states")
    state.fragment_id, state.is_auto_rerun = "", False
    session.request_rerun(state)
