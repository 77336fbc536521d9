"""N app replicas behind HAProxy with deploy/haproxy.cfg, all on 127.0.0.1 (tests, load test).

    with balanced(2) as lb:      # lb.url is the balancer, lb.servers the replicas (url, pid)
        ...

The config is the shipped one with two changes: `bind` listens on a free 127.0.0.1 port, and the
first `server` line is repeated once per replica with its address, name and cookie value.
HAProxy runs in the foreground (-db) and is stopped with the replicas.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tools.browser import ROOT, Server, free_port, serve, stop, wait_healthy

CONFIG = ROOT / "deploy" / "haproxy.cfg"
COOKIE = "VITSERVER"  # the cookie the config inserts; its value names the replica


def haproxy_config(port: int, replicas: list[int], text: str | None = None) -> str:
    """deploy/haproxy.cfg bound to 127.0.0.1:port, one `server` line per replica port."""
    lines = (CONFIG.read_text() if text is None else text).splitlines()
    servers = [i for i, line in enumerate(lines) if line.split()[:1] == ["server"]]
    template = lines[servers[0]]
    own = [re.sub(r"server \S+ \S+", f"server app{n} 127.0.0.1:{p}", template)
           .replace("cookie app1", f"cookie app{n}") for n, p in enumerate(replicas, 1)]
    lines[servers[0]:servers[-1] + 1] = own
    return "\n".join(re.sub(r"^(\s*)bind \S+", rf"\1bind 127.0.0.1:{port}", line)
                     for line in lines) + "\n"


@dataclass
class Balanced:
    url: str  # the balancer
    servers: list[Server]  # the replicas, in cookie order: app1, app2, ...


@contextlib.contextmanager
def balanced(replicas: int = 2, env: dict | None = None, timeout: float = 60):
    """Start `replicas` app servers and HAProxy in front of them; stop all of them afterwards."""
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(serve(env=env)) for _ in range(replicas)]
        port = free_port()
        cfg = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "haproxy.cfg"
        cfg.write_text(haproxy_config(port, [int(s.url.rsplit(":", 1)[1]) for s in servers]))
        log = cfg.with_suffix(".log")
        with log.open("wb") as out:
            proc = subprocess.Popen([haproxy, "-db", "-f", str(cfg)], stdout=out, stderr=out)
        stack.callback(stop, proc)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, proc, timeout, "haproxy")
        except RuntimeError as e:
            raise RuntimeError(f"{e}: {log.read_text()[-500:]}") from None
        yield Balanced(url, servers)
