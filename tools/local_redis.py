"""A redis-server of its own for a load run or a test: deploy/redis.conf on a free port, its
append-only file in a folder the caller gives (tools/class_load.py, tests/test_live_replicas.py)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from pathlib import Path

from tools.browser import ROOT, free_port


@contextlib.contextmanager
def redis_server(folder: Path, timeout: float = 60):
    """redis-server with deploy/redis.conf on a free port, its AOF in `folder`; yields its
    URL. Stopped (SIGTERM) afterwards."""
    exe = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    proc = subprocess.Popen([exe, str(ROOT / "deploy" / "redis.conf"), "--port", str(port),
                             "--dir", str(folder)], cwd=folder, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        while not _pong(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not answer on port {port}")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


def _pong(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False
