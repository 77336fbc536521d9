"""Browser-test helpers: serve the app on a free localhost port, wait for Streamlit to settle.

Used by tests/test_browser.py, tools/screenshots.py and tools/load_test.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-quic",
                 "--no-first-run"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    pid: int
    log_path: Path | None = None  # the server's stdout and stderr

    def log(self) -> str:
        """What the server printed so far (warnings, tracebacks)."""
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def rss_mb(self) -> float:
        """Resident memory of the server process, from /proc."""
        return self._proc_mb("status", "VmRSS:")

    def peak_rss_mb(self) -> float:
        """The most resident memory the server process has had (VmHWM), from /proc."""
        return self._proc_mb("status", "VmHWM:")

    def pss_mb(self) -> float:
        """The server's proportional set size: its resident memory with each page shared with
        other processes (libraries, another replica's) counted as a share, so the PSS of several
        replicas add up to the memory they really use together. From /proc/PID/smaps_rollup."""
        return self._proc_mb("smaps_rollup", "Pss:")

    def _proc_mb(self, file: str, name: str) -> float:
        """The `name` line (in kB) of /proc/PID/`file`, in MB."""
        for line in Path(f"/proc/{self.pid}/{file}").read_text().splitlines():
            if line.startswith(name):
                return int(line.split()[1]) / 1024
        return float("nan")

    def cpu_s(self) -> float:
        """CPU seconds (user + system, all threads) the server process has used, from /proc."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def serve(port: int | None = None, timeout: float = 180, env: dict | None = None):
    """Run `streamlit run app.py` on localhost; yield a Server (url, pid); stop it afterwards.

    `env` adds environment variables for the server (e.g. OMP_NUM_THREADS for a replica).
    """
    port = port or free_port()
    # The output goes to a file, not a pipe: nobody reads a pipe while the browser works, and a
    # full pipe (64 KB of warnings) would freeze the server in the middle of a test.
    log = tempfile.NamedTemporaryFile("wb", prefix="streamlit-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port",
         str(port), "--server.headless", "true", "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, timeout, "the Streamlit server")
        yield Server(url, proc.pid, Path(log.name))
    finally:
        stop(proc)
        log.close()
        Path(log.name).unlink(missing_ok=True)


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float, what: str) -> None:
    """Wait until `url`/_stcore/health answers (at most `timeout` s; an error if `proc` ends)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} stopped (exit code {proc.returncode})")
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{what} did not answer on {url} within {timeout:g} s")


def stop(proc: subprocess.Popen) -> None:
    """Terminate a process this module started; kill it if it has not ended after 10 s."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


IDLE_JS = ("() => document.querySelector('h1') && document.querySelector("
           "'[data-testid=\"stApp\"][data-test-script-state=\"notRunning\"]')")

# Streamlit's script state (stApp's data-test-script-state) changes when a run starts and ends;
# the page keeps the time of the last change and of the last call to wait for a quiet page (a
# new document starts both clocks afresh). Quiet: not running, an <h1> drawn, and neither a
# change nor the call for QUIET_MS: the call's own clock covers a run that starts a moment after
# the click that asked for it, and the quiet after the run's end gives plotly its time to draw.
QUIET_MS = 450
_WATCH = """
  if (!window.__vitRuns) {
    window.__vitRuns = {changed: performance.now(), since: performance.now()};
    new MutationObserver(() => { window.__vitRuns.changed = performance.now(); }).observe(
      document.documentElement,
      {attributes: true, subtree: true, attributeFilter: ['data-test-script-state']});
  }"""
SINCE_JS = "() => {" + _WATCH + "\n  window.__vitRuns.since = performance.now();\n}"
QUIET_JS = ("ms => {" + _WATCH + "\n  const r = window.__vitRuns;\n  return Boolean(("
            + IDLE_JS + ")()) && performance.now() - Math.max(r.changed, r.since) >= ms;\n}")


def wait_idle(page, timeout_ms: int = 120_000) -> None:
    """Wait until Streamlit has finished the script run: stApp says notRunning, and nothing
    changed for QUIET_MS since the last run's end and since this call."""
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout_ms)
    page.evaluate(SINCE_JS)
    page.wait_for_function(QUIET_JS, arg=QUIET_MS, timeout=timeout_ms, polling=50)


def start_class(browser, server: str, stage: str = "attention", step: int | None = None):
    """A teacher in presenter mode on `stage` (1280×720; at `step`, counted from 1, if given)
    who starts a class: (their page, the class's code). The class dialog is closed."""
    teacher = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    teacher.goto(f"{server}/?page={stage}&presenter=1" + (f"&step={step}" if step else ""))
    wait_idle(teacher)
    teacher.get_by_role("button", name=re.compile("Class")).click()
    teacher.get_by_role("button", name="Start a class").click()
    wait_idle(teacher)
    code = re.search(r"[?&]class=([A-Z0-9]{6})", teacher.url).group(1)
    teacher.keyboard.press("Escape")
    return teacher, code
