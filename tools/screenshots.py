"""Start the app, open every stage in headless Chromium, and save a screenshot of each.

    .venv/bin/python tools/screenshots.py [--out screenshots] [--model shapes-classifier]

Needs Debian's chromium (/usr/bin/chromium) and the playwright package (requirements-dev.txt).
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-quic",
                 "--no-first-run"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(port: int | None = None, timeout: float = 90):
    """Run `streamlit run app.py` on localhost; yield its base URL; stop it afterwards."""
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port",
         str(port), "--server.headless", "true", "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("the Streamlit server did not start")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def wait_idle(page, timeout_ms: int = 120_000) -> None:
    """Wait until Streamlit has finished running the script (no 'running' status widget)."""
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout_ms)
    page.wait_for_timeout(300)  # the script run starts a moment after the page loads
    page.wait_for_function(
        "() => document.querySelector('h1') && ![...document.querySelectorAll('button')]"
        ".some(b => b.innerText.trim() === 'Stop')", timeout=timeout_ms)
    page.wait_for_timeout(800)  # let plotly finish drawing


def main(argv=None):
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="screenshots")
    ap.add_argument("--stages", nargs="*", default=None)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=800)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    stages = args.stages or ["overview", "patches", "embeddings", "qkv", "attention"]
    out = ROOT / args.out
    out.mkdir(exist_ok=True)
    with serve() as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        for slug in stages:
            t0 = time.time()
            page.goto(f"{url}/?page={slug}")
            wait_idle(page)
            path = out / f"{slug}.png"
            page.screenshot(path=str(path), full_page=True)
            print(f"{slug}: {time.time() - t0:.1f} s -> {path}")
        browser.close()


if __name__ == "__main__":
    main()
