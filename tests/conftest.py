"""Test-wide settings and the fixtures the test modules share.

Read-ahead is off (ui/serving/readahead.py), so a test's passes are its own; AppTest runs and the
servers the browser and load tests start inherit this, and the read-ahead's own tests turn it
on where they need it.

Fixtures here: `open_app` (the one way a test opens the app under AppTest), `browser`
(Debian's Chromium under Playwright, for the tests marked browser), `axe` (axe-core's WCAG
audit of a page in a browser test's walk), `hub_root` and
`hub` (the local Hugging Face Hub stand-in, tests/hub_server.py), and `offline_hub_models`
(every fixture repo fetched once through the stand-in, which is then stopped). Plain helpers
(small model configs, photos, page readers) are in tests/support.py.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

os.environ.setdefault("VIT_EXPLAINER_READ_AHEAD", "0")


def _share_the_cores() -> None:
    """Under pytest-xdist each worker's torch gets its share of the cores, not all of them: two
    workers each running two threads on two cores spin against each other (the quick tier 182 s
    with one thread a worker vs 201-219 s, `benchmarks/suite_threads.py`). The servers the
    browser tests start keep torch's default: with one thread each too, the CI's rest tier took
    660 s against ~570 s before (not separated from that day's other changes)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers and "OMP_NUM_THREADS" not in os.environ:
        share = str(max(1, (os.cpu_count() or 1) // workers))
        # torch.set_num_threads alone held for the thread that called it: a thread started
        # later (a download's, Streamlit's) still ran OpenMP on every core, and its float32 sums
        # came out in another order (a trace's patch_embed 1 ulp off the test's own pass). So
        # OpenMP reads the share as it loads, with torch, for every thread; the variable then
        # goes, so the servers the tests start do not inherit it.
        os.environ["OMP_NUM_THREADS"] = share
        import torch

        torch.set_num_threads(int(share))
        del os.environ["OMP_NUM_THREADS"]


_share_the_cores()


def _scan_installed_components_once() -> None:
    """A real server looks for installed Streamlit components once, when it starts; AppTest
    looks again for every new app (reading the metadata of every installed package: about
    0.45 s of each ~0.8 s run of a page, most of the quick tier). The packages do not change
    while the tests run, so the first scan's answer is kept (`benchmarks/apptest_run.py`)."""
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    if not hasattr(scan, "cache_info"):
        manifest_scanner.scan_component_manifests = functools.cache(scan)


_scan_installed_components_once()

from tests import support  # noqa: E402  (after the environment it reads)


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium under Playwright, one per test module: skipped where it is missing,
    an error in CI (.ci/run installs it)."""
    from tools.browser import CHROMIUM_ARGS

    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        if os.environ.get("CI"):
            raise RuntimeError("CI must install chromium for the browser tests (.ci/run)")
        pytest.skip("chromium is not installed")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def axe():
    """`axe(page, where)`: axe-core's WCAG 2.1 A/AA violations on the page as it is now, outside
    the documented list (tools/axe.py), one line each, for a walk that asserts once at the end.
    Without axe-core (`npm ci --prefix tools`) a walk runs without it (a warning); in CI that is
    an error. The module's axe calls and their seconds are printed after it (`-s` shows them)."""
    import time
    import warnings

    from tools.axe import AXE_JS, problems

    if not AXE_JS.exists():
        if os.environ.get("CI"):
            raise RuntimeError("CI must install axe-core: npm ci --prefix tools (.ci/run)")
        warnings.warn("axe-core is not installed (npm ci --prefix tools): no WCAG audit",
                      stacklevel=2)
        yield lambda page, where: []
        return
    spent: list[float] = []

    def check(page, where: str) -> list[str]:
        t0 = time.perf_counter()
        try:
            return problems(page, where)
        finally:
            spent.append(time.perf_counter() - t0)

    yield check
    print(f"\naxe: {len(spent)} audits, {sum(spent):.1f} s")


@pytest.fixture
def open_app():
    """support.open_app: `open_app(page, model, mask, params=, state=, upload=, no_error=)`
    runs the app and fails when it raised or ran another model than asked for."""
    return support.open_app


@contextmanager
def serving(root: Path, monkeypatch: pytest.MonkeyPatch, hf_home: Path):
    """The Hub stand-in serving `root`, with huggingface_hub (in this process and in its
    subprocesses) pointed at it and its cache under `hf_home`; stopped on leaving, and no
    thread of it may outlive that."""
    from tests.hub_server import HubStandIn, point_hf_at

    with HubStandIn(root) as server:
        point_hf_at(monkeypatch, server.url, hf_home)
        server.root_dir = root
        yield server
    left = [t.name for t in threading.enumerate()
            if t.name == "hub-stand-in" or "process_request" in t.name]
    assert not left, f"threads still running after stop: {left}"


@pytest.fixture
def hub_root(tmp_path) -> Path:
    """The folder the `hub` fixture serves: a copy of tests/fixtures/hub (one folder per
    ORG/NAME), which a test may change. Override it in a module to serve other repos."""
    root = tmp_path / "hub-root"
    shutil.copytree(support.HUB, root)
    return root


@pytest.fixture
def hub(hub_root, tmp_path, monkeypatch):
    """A running HubStandIn serving `hub_root` (also as `hub.root_dir`), with the Hub client's
    endpoint and cache (tmp_path / "hf-home") pointed at it for this test."""
    with serving(hub_root, monkeypatch, tmp_path / "hf-home") as server:
        yield server


@pytest.fixture(scope="module")
def offline_hub_models(tmp_path_factory):
    """Every ViT repo under tests/fixtures/hub and support.TIMM_384, fetched once through the
    stand-in with the library's own fetch (vit_core.io.hub), then the stand-in stopped: the
    module's tests run on a machine that fetched them and is now offline. Yields the repos."""
    from vit_core.io import hub as vhub

    tmp = tmp_path_factory.mktemp("offline-hub")
    root = tmp / "hub-root"
    shutil.copytree(support.HUB, root)
    support.write_timm_repo(root / support.TIMM_384)
    repos = sorted(f"{org.name}/{repo.name}" for org in root.iterdir() for repo in org.iterdir()
                   if "bert" not in repo.name)
    mp = pytest.MonkeyPatch()
    try:
        with serving(root, mp, tmp / "hf-home"):
            for repo in repos:
                vhub.fetch(repo)
        yield repos  # the stand-in is stopped now: everything runs offline
    finally:
        mp.undo()
