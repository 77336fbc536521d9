"""The classroom load test, reduced (tools/load_test.py runs the full one; docs/deployment.md):
sessions that speak Streamlit's protocol against one server, and through HAProxy to two
replicas. Every session must see its own image on every page, with no exception and no error."""

import os
import shutil

import pytest

from tools.balancer import haproxy_config
from tools.load_test import PROBLEMS, STAGES, protocol_run, report

HAPROXY = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy")
                                      else None)


def assert_clean(summary: dict, sessions: int):
    print(report(summary))
    assert {k: v for k, v in summary["problems"].items() if v} == {}
    for view in ["open", "first view"] + STAGES:  # every session reached every page
        assert summary["views"][view]["n"] == sessions, view


@pytest.mark.load
def test_sessions_on_a_real_geometry_model_each_see_their_own_image_on_every_page():
    summary = protocol_run(sessions=3, within=2, model="vit-b16", timeout=180)
    assert_clean(summary, 3)
    assert summary["server_peak_rss_mb"][0] > 300  # ViT-B/16 and its traces were in the server
    assert 300 < summary["server_pss_after_mb"] <= summary["server_peak_rss_mb"][0]


def test_the_shipped_config_gets_a_local_bind_and_one_server_line_per_replica():
    cfg = haproxy_config(9000, [9001, 9002, 9003])
    servers = [line.split() for line in cfg.splitlines() if line.split()[:1] == ["server"]]
    assert [s[1:3] for s in servers] == [["app1", "127.0.0.1:9001"], ["app2", "127.0.0.1:9002"],
                                         ["app3", "127.0.0.1:9003"]]
    assert [s[s.index("cookie") + 1] for s in servers] == ["app1", "app2", "app3"]
    assert [line.split() for line in cfg.splitlines() if "bind" in line.split()[:1]] == [
        ["bind", "127.0.0.1:9000"]]
    assert "cookie VITSERVER insert" in cfg  # the sticky rule itself is the shipped one


@pytest.mark.load
@pytest.mark.skipif(HAPROXY is None and not os.environ.get("CI"), reason="haproxy not installed")
def test_two_replicas_behind_haproxy_keep_every_session_on_its_own_replica():
    """Uploads and media are per process: a request of a session that reached the other replica
    is refused ("Invalid session_id") or shows another image. Both replicas must serve."""
    assert HAPROXY, "CI must install haproxy (.ci/run)"
    summary = protocol_run(sessions=6, within=3, model="shapes-classifier", replicas=2,
                           timeout=120)
    assert_clean(summary, 6)
    per_replica = summary["sessions_per_replica"]
    assert sorted(per_replica) == ["app1", "app2"] and sum(per_replica.values()) == 6
    assert min(per_replica.values()) >= 2  # leastconn spreads the sessions
    assert set(PROBLEMS) == set(summary["problems"])
