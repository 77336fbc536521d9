"""Starting on the network or not is the teacher's visible choice: the default start listens on
this computer only, `--server.address 0.0.0.0` on the network, and the sidebar says which, in the
same words as what the picker then offers (fetching from the browser, or not)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from streamlit import config
from streamlit.runtime.context import ContextProxy, StreamlitHeaders
from streamlit.testing.v1 import AppTest

from ui import keys
from ui.selection import models

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
HERE = "Listening on this computer only"
LAN = "Listening on the network (anyone on the LAN can open this app)"
PROXY = "Reached through a proxy (anyone it serves can open this app)"
ON = ": fetching models from the browser is on"
TEACHERS = ": fetching models is the teacher's, with `.venv/bin/python -m vit_core.fetch ORG/NAME`."


def expected(address: str, proxied: bool, flag: bool) -> str:
    """The sentence for a start, from this test's own rule: only a loopback address reached
    without a proxy is this computer alone; fetching from the browser is on there, or anywhere
    with the flag."""
    alone = address in ("localhost", "127.0.0.1", "::1") and not proxied
    where = HERE if alone else PROXY if proxied else LAN
    if alone:
        return where + ON + "."
    return where + (ON + " (started with --allow-fetch)." if flag else TEACHERS)


@pytest.fixture
def start(monkeypatch):
    """Start the 'server' listening on `address` (the option the app reads, as
    `--server.address` sets it), optionally behind a proxy and with `-- --allow-fetch`."""
    before = config.get_option("server.address")

    def use(address: str | None, proxied: bool = False, flag: bool = False) -> AppTest:
        if address is not None:
            config.set_option("server.address", address)
        monkeypatch.setattr("sys.argv", ["app.py", *(["--allow-fetch"] if flag else [])])
        models.server_args.clear()
        if proxied:  # what HAProxy with `option forwardfor` adds to every request
            monkeypatch.setattr(ContextProxy, "headers", property(
                lambda self: StreamlitHeaders([("X-Forwarded-For", "192.168.1.23")])))
        at = AppTest.from_file(APP, default_timeout=240)
        at.query_params["page"] = "overview"
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    yield use
    config.set_option("server.address", before)
    models.server_args.clear()


def reach(at: AppTest) -> str:
    said = [c.value for c in at.sidebar.caption if c.value.startswith(("Listening", "Reached"))]
    assert len(said) == 1, [c.value for c in at.sidebar.caption]
    return said[0]


def fetch_offered(at: AppTest) -> bool:
    return models.FETCH_OTHER in at.sidebar.selectbox(key=keys.MODEL).options


def test_the_default_start_listens_on_this_computer_only():
    shipped = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert shipped["server"]["address"] == "localhost"


def test_the_default_start_says_so_and_offers_fetching(start):
    at = start(None)  # .streamlit/config.toml as shipped (AppTest reads it, as the server does)
    assert config.get_option("server.address") == "localhost"
    assert reach(at) == expected("localhost", False, False) == HERE + ON + "."
    assert fetch_offered(at)


@pytest.mark.parametrize("address, proxied, flag", [
    ("0.0.0.0", False, False), ("", False, False), ("127.0.0.1", False, False),
    ("localhost", True, False), ("0.0.0.0", False, True)])
def test_the_sidebar_says_who_can_open_the_app_and_whether_fetching_is_on(start, address,
                                                                          proxied, flag):
    at = start(address, proxied, flag)
    want = expected(address, proxied, flag)
    assert reach(at) == want
    assert fetch_offered(at) == ("browser is on" in want)  # the line is what the picker does


def test_behind_a_proxy_the_share_link_is_not_said_to_open_on_this_machine_only(start, monkeypatch):
    """Replicas listen on localhost behind HAProxy, but the class reaches them: the share caption
    must not tell the teacher that only this machine can open the link."""
    from streamlit.runtime.context import ContextProxy

    monkeypatch.setattr(ContextProxy, "url", property(
        lambda self: "http://192.168.1.5:8501/?page=overview"))
    for proxied, only_here in ((False, True), (True, False)):
        at = start("localhost", proxied=proxied)
        at.session_state[keys.SHARE_OPEN] = True
        at.run()
        captions = [c.value for c in at.sidebar.caption]
        said_only_here = any("only this machine can open the link" in c for c in captions)
        assert said_only_here == only_here, captions
        if proxied:
            assert any(c.startswith("Built from the address your browser uses (192.168.1.5)")
                       for c in captions), captions
