"""Classroom load test: many real browser sessions against one `streamlit run` server.

    .venv/bin/python tools/load_test.py --sessions 20 --processes 2 [--json out.json]

Each session is a Playwright context (spread over --processes Chromium processes), uploads its
own image, visits every page through the navigation, and checks that the sidebar's fingerprint
(image id + top prediction) is its own on every page. Meanwhile a probe opens a fresh session
every few seconds to show the server stays responsive. Prints p50/p95 page times and the
server's RSS before and after; exits non-zero if any session saw an exception or a wrong image.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import io
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.browser import CHROMIUM_ARGS, IDLE_JS, serve  # noqa: E402

STAGES = ["patches", "embeddings", "qkv", "attention", "masks", "mlp", "logits", "shapes",
          "segmentation", "experiments"]


def session_image(i: int) -> bytes:
    """A different picture per session: a generated scene (held-out seeds)."""
    from vit_core.scenes import world as data

    buf = io.BytesIO()
    data.make_scene(data.HELDOUT_BASE + 900_000 + i).image.save(buf, format="PNG")
    return buf.getvalue()


async def idle(page, timeout=180_000):
    for _ in range(2):  # as tools.browser.wait_idle: notRunning, and still so 0.5 s later
        await page.wait_for_timeout(500)
        await page.wait_for_function(IDLE_JS, timeout=timeout)


async def one_session(browser, url: str, i: int, tmp: Path, stagger: float = 0.0) -> dict:
    await asyncio.sleep(i * stagger)  # students arrive within seconds, not in the same instant
    raw = session_image(i)
    fid = hashlib.sha256(raw).hexdigest()[:8]
    path = tmp / f"session-{i}.png"
    path.write_bytes(raw)
    ctx = await browser.new_context(viewport={"width": 1280, "height": 800})
    ctx.set_default_timeout(180_000)  # 20 Chromium tabs share the server's 2 cores here
    page = await ctx.new_page()
    times, problems = [], []
    try:
        await page.goto(url)
        await idle(page)
        t0 = time.time()
        await page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(
            str(path))
        await page.get_by_text(f"fingerprint {fid}").wait_for(timeout=180_000)
        await idle(page)
        first = time.time() - t0
        for slug in STAGES:
            t0 = time.time()
            await page.locator(f"[data-testid='stSidebarNav'] a[href$='/{slug}']").first.click()
            await idle(page)
            await page.get_by_text(f"fingerprint {fid}").wait_for(timeout=60_000)
            times.append(time.time() - t0)
            if await page.locator("[data-testid='stException']").count():
                problems.append(f"session {i}: exception on {slug}")
            shown = await page.get_by_text("fingerprint ").all_inner_texts()
            if not all(fid in s for s in shown):
                problems.append(f"session {i}: saw {shown} on {slug}, expected {fid}")
    except Exception as e:  # a timeout is a failure of this session, reported, not fatal
        problems.append(f"session {i}: {type(e).__name__}: {str(e).splitlines()[0]}")
        first = float("nan")
    await ctx.close()
    return {"session": i, "first_view": first, "page_times": times, "problems": problems}


async def run_process(url: str, ids: list[int], tmp: str, stagger: float) -> list[dict]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path="/usr/bin/chromium",
                                           args=CHROMIUM_ARGS)
        out = await asyncio.gather(*(one_session(browser, url, i, Path(tmp), stagger) for i in ids))
        await browser.close()
    return out


def process_main(url, ids, tmp, stagger, queue):
    try:
        queue.put(asyncio.run(run_process(url, ids, tmp, stagger)))
    except Exception as e:  # always report: the parent waits for one answer per process
        queue.put([{"session": i, "first_view": float("nan"), "page_times": [],
                    "problems": [f"session {i}: process failed: {type(e).__name__}: {e}"]}
                   for i in ids])


async def probe(url: str, stop: mp.Event, out: list):
    """Open a fresh session every few seconds and time its first render."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path="/usr/bin/chromium",
                                           args=CHROMIUM_ARGS)
        while not stop.is_set():
            ctx = await browser.new_context()
            ctx.set_default_timeout(180_000)
            page = await ctx.new_page()
            t0 = time.time()
            try:
                await page.goto(url)
                await idle(page)
                out.append(time.time() - t0)
            except Exception:  # noted as a failed probe (nan), the load test carries on
                out.append(float("nan"))
            await ctx.close()
            await asyncio.sleep(3)
        await browser.close()


def probe_main(url, stop, queue):
    out: list[float] = []
    try:
        asyncio.run(probe(url, stop, out))
    finally:
        queue.put(out)


def pct(xs, q):
    xs = sorted(x for x in xs if x == x)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main(argv=None) -> int:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--stagger", type=float, default=1.0,
                    help="seconds between session starts (session i starts at i x this)")
    ap.add_argument("--model", help="open every session on this model (default: the app's)")
    args = ap.parse_args(argv)
    ctx = mp.get_context("spawn")
    with serve() as server, tempfile.TemporaryDirectory() as tmp:
        rss_before, cpu_before = server.rss_mb(), server.cpu_s()
        queue, probe_queue, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
        groups = [list(range(p, args.sessions, args.processes)) for p in range(args.processes)]
        t0 = time.time()
        url = server.url + (f"/?model={args.model}" if args.model else "")
        procs = [ctx.Process(target=process_main, args=(url, g, tmp, args.stagger, queue))
                 for g in groups if g]
        prober = ctx.Process(target=probe_main, args=(url, stop, probe_queue))
        for p in procs + [prober]:
            p.start()
        results = [r for _ in procs for r in queue.get(timeout=1800)]
        stop.set()
        probes = probe_queue.get(timeout=300)
        for p in procs + [prober]:
            p.join()
        wall = time.time() - t0
        rss_after, cpu_used = server.rss_mb(), server.cpu_s() - cpu_before
    pages = [t for r in results for t in r["page_times"]]
    firsts = [r["first_view"] for r in results]
    problems = [p for r in results for p in r["problems"]]
    problems += ["a new session did not open within 180 s" for p in probes if p != p]
    probe_max = max((p for p in probes if p == p), default=float("nan"))
    summary = {
        "sessions": args.sessions, "processes": args.processes, "model": args.model or "default",
        "stagger_s": args.stagger,
        "wall_s": round(wall, 1),
        "page_p50_s": round(pct(pages, 0.5), 2), "page_p95_s": round(pct(pages, 0.95), 2),
        "first_view_p50_s": round(pct(firsts, 0.5), 2),
        "first_view_p95_s": round(pct(firsts, 0.95), 2),
        "new_session_probe_s": [round(p, 2) for p in probes],
        "server_rss_mb_before": round(rss_before), "server_rss_mb_after": round(rss_after),
        "server_cpu_s": round(cpu_used, 1),
        "server_cpu_share": round(cpu_used / (wall * (os.cpu_count() or 1)), 2),
        "pages_checked": len(pages), "problems": problems,
    }
    print("| sessions | processes | page p50 (s) | page p95 (s) | first view p50 / p95 (s) | "
          "new-session probe max (s) | server RSS before → after (MB) | problems |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {args.sessions} | {args.processes} | {summary['page_p50_s']} | "
          f"{summary['page_p95_s']} | {summary['first_view_p50_s']} / "
          f"{summary['first_view_p95_s']} | {probe_max:.2f} | "
          f"{summary['server_rss_mb_before']} → {summary['server_rss_mb_after']} | "
          f"{len(problems)} |")
    print(f"server CPU: {summary['server_cpu_s']} s in {summary['wall_s']} s of wall time "
          f"({summary['server_cpu_share']:.0%} of the machine's cores)")
    for p in problems:
        print("PROBLEM:", p)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return 1 if problems or not pages else 0


if __name__ == "__main__":
    sys.exit(main())
