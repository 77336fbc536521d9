"""Classroom load test: many sessions against the app, each with its own photo, on every page.

    python tools/load_test.py [--sessions 30] [--within 30] [--model vit-b16] [--replicas 1]
                              [--threads N] [--cache-mb MB] [--think 0] [--json out.json]
    python tools/load_test.py --browser --sessions 20 --processes 2 [--stagger 1] [--model M]
                              [--pages patches,attention,logits]

Protocol mode (the default) measures the server, not the browsers. Each session is a
tools.st_protocol.Tab: no browser, Streamlit's own websocket protocol, so 30 sessions cost the
machine almost nothing besides the server. Sessions arrive evenly within --within seconds; each
opens the app on --model, uploads its own picture through the uploader's real HTTP route, then
visits every page in the sidebar's order (--think seconds apart). Times are from the message to
the server's `script_finished`. A teacher's tab opens the app on each replica first (the model
loaded, as in a lesson), and is not counted. With --replicas N the sessions go through HAProxy
(deploy/haproxy.cfg, tools/balancer.py) to N replicas, pinned by its cookie.

Every page of every session must show that session's own fingerprint (the sidebar's
"fingerprint <image id>"), no exception and no error sentence. Prints per-page p50 / p95, the
server's CPU time and peak RSS (from /proc), the client's own CPU time, and the problems; exits
non-zero if there was any.

Browser mode (--browser) drives real Chromium tabs through Playwright (spread over --processes
browser processes) and probes that a new session still opens meanwhile; on one small machine the
browsers share the server's cores, so it measures correctness more than the server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import io
import json
import multiprocessing as mp
import os
import platform
import sys
import time
from datetime import date
from math import nan
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.browser import CHROMIUM_ARGS, QUIET_JS, QUIET_MS, SINCE_JS, serve  # noqa: E402

STAGES = ["patches", "embeddings", "qkv", "attention", "masks", "mlp", "logits", "shapes",
          "segmentation", "experiments"]


def session_image(i: int) -> bytes:
    """A different picture per session: a generated scene (held-out seeds)."""
    from vit_core.scenes import world as data

    buf = io.BytesIO()
    data.make_scene(data.HELDOUT_BASE + 900_000 + i).image.save(buf, format="PNG")
    return buf.getvalue()


async def idle(page, timeout=180_000):
    """As tools.browser.wait_idle: not running, and no change for QUIET_MS since the run's
    end and since this call."""
    await page.wait_for_selector("[data-testid='stApp']", timeout=timeout)
    await page.evaluate(SINCE_JS)
    await page.wait_for_function(QUIET_JS, arg=QUIET_MS, timeout=timeout, polling=50)


STOPS = "[data-testid='stException'], [data-testid='stAlertContentError']"


async def own_image(page, fid: str, timeout: int) -> None:
    """Wait for the sidebar's "fingerprint <fid>", or an error or exception drawn instead (a
    page that gave up on the model, worker.Busy, never draws the fingerprint); either way not
    shown, say what the page shows instead of a bare timeout."""
    mine = page.get_by_text(f"fingerprint {fid}")
    try:
        await mine.or_(page.locator(STOPS)).first.wait_for(timeout=timeout)
    except Exception:
        pass
    if await mine.first.is_visible():
        return
    shown = await page.get_by_text("fingerprint ").all_inner_texts()
    stops = [t.splitlines()[0] if t else "" for t in await page.locator(STOPS).all_inner_texts()]
    raise RuntimeError(f"no 'fingerprint {fid}' within {timeout / 1000:g} s: the page shows "
                       f"{shown or 'no fingerprint'}, errors {stops or 'none'}")


async def one_session(browser, url: str, i: int, tmp: Path, stagger: float = 0.0,
                      pages: list[str] = STAGES) -> dict:
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
        await own_image(page, fid, 180_000)
        await idle(page)
        first = time.time() - t0
        for slug in pages:
            t0 = time.time()
            await page.locator(f"[data-testid='stSidebarNav'] a[href$='/{slug}']").first.click()
            await idle(page)
            await own_image(page, fid, 60_000)
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


async def run_process(url: str, ids: list[int], tmp: str, stagger: float,
                      pages: list[str]) -> list[dict]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path="/usr/bin/chromium",
                                           args=CHROMIUM_ARGS)
        out = await asyncio.gather(*(one_session(browser, url, i, Path(tmp), stagger, pages)
                                     for i in ids))
        await browser.close()
    return out


def process_main(url, ids, tmp, stagger, pages, queue):
    try:
        queue.put(asyncio.run(run_process(url, ids, tmp, stagger, pages)))
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


def browser_main(args) -> int:
    import tempfile

    slugs = args.pages.split(",") if args.pages else STAGES
    if set(slugs) - set(STAGES):
        print(f"--pages: {', '.join(sorted(set(slugs) - set(STAGES)))} is not one of "
              f"{', '.join(STAGES)}", file=sys.stderr)
        return 2
    ctx = mp.get_context("spawn")
    with serve() as server, tempfile.TemporaryDirectory() as tmp:
        rss_before, cpu_before = server.rss_mb(), server.cpu_s()
        queue, probe_queue, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
        groups = [list(range(p, args.sessions, args.processes)) for p in range(args.processes)]
        t0 = time.time()
        url = server.url + (f"/?model={args.model}" if args.model else "")
        procs = [ctx.Process(target=process_main, args=(url, g, tmp, args.stagger, slugs, queue))
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
        log = server.log()
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
    if problems and "Traceback" in log:  # the server's own words for an exception a page showed
        print("the server's last traceback:\n" + log[log.rindex("Traceback"):][-3000:])
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return 1 if problems or not pages else 0


# Protocol mode: the server measured, no browsers.

FIRST, OPEN = "first view", "open"


def check(run, session: int, where: str, fid: str | None, problems: dict) -> None:
    """Sort what a run showed into the problem kinds: every fingerprint it shows must be the
    session's, and a run that ended without an error must show one."""
    for e in run.exceptions:
        problems["exceptions"].append(f"session {session}, {where}: {e}")
    for e in run.errors:
        problems["error sentences"].append(f"session {session}, {where}: {e}")
    shown = [t for t in run.texts if t.startswith("fingerprint ")]
    unexplained = not shown and not run.errors and not run.exceptions
    if fid is not None and (unexplained or any(not t.startswith(f"fingerprint {fid}")
                                               for t in shown)):
        problems["wrong images"].append(f"session {session}, {where}: saw {shown}, "
                                        f"expected {fid}")


async def student(url: str, i: int, start_at: float, model: str, think: float,
                  timeout: float) -> dict:
    """One session: open, upload its own picture, visit every page; times and problems."""
    from tools.balancer import COOKIE
    from tools.st_protocol import Tab

    await asyncio.sleep(start_at)
    raw = session_image(i)
    fid = hashlib.sha256(raw).hexdigest()[:8]
    tab = Tab(url, timeout=timeout)
    times: dict[str, float] = {}
    problems: dict[str, list[str]] = {k: [] for k in PROBLEMS}
    try:
        run = await tab.open(f"model={model}")
        times[OPEN] = run.seconds
        check(run, i, OPEN, None, problems)
        run = await tab.upload(run.uploaders[0], f"session-{i}.png", raw, "image/png")
        times[FIRST] = run.seconds
        check(run, i, FIRST, fid, problems)
        for page in STAGES:  # the sidebar's order after the overview (the first view)
            await asyncio.sleep(think)
            run = await tab.rerun(page=page)
            times[page] = run.seconds
            check(run, i, page, fid, problems)
    except Exception as e:  # a timeout or a refused request fails this session, not the test
        problems["failed sessions"].append(f"session {i}: {type(e).__name__}: "
                                           f"{str(e).splitlines()[0] if str(e) else ''}")
    finally:
        with contextlib.suppress(Exception):
            await tab.close()
    return {"session": i, "replica": tab.cookies.get(COOKIE), "times": times,
            "problems": problems}


PROBLEMS = ["wrong images", "exceptions", "error sentences", "failed sessions"]


async def classroom(url: str, sessions: int, within: float, model: str, think: float,
                    timeout: float) -> list[dict]:
    starts = [within * i / sessions for i in range(sessions)]
    return list(await asyncio.gather(*(student(url, i, t, model, think, timeout)
                                       for i, t in enumerate(starts))))


async def teacher(urls: list[str], model: str, timeout: float) -> None:
    """Open the app on the model on every replica (the model loads), as before a lesson."""
    from tools.st_protocol import Tab

    for url in urls:
        tab = Tab(url, timeout=timeout)
        await tab.open(f"model={model}")
        await tab.close()



def start_servers(stack: contextlib.ExitStack, replicas: int, env) -> tuple[str, list]:
    """(the address students open, the app processes): one app, or `replicas` behind HAProxy
    (tools/balancer.py); stopped when `stack` closes."""
    from tools.balancer import balanced

    if replicas > 1:
        lb = stack.enter_context(balanced(replicas, env=env))
        return lb.url, lb.servers
    server = stack.enter_context(serve(env=env))
    return server.url, [server]

def protocol_run(sessions: int = 30, within: float = 30.0, model: str = "vit-b16",
                 replicas: int = 1, threads: int | None = None, think: float = 0.0,
                 timeout: float = 120.0, cache_mb: float | None = None,
                 read_ahead: bool | None = None) -> dict:
    """Start the server (or `replicas` behind HAProxy), run the classroom; the summary.
    `read_ahead`: True / False sets the servers' ui/serving/readahead.py on / off (None: as
    inherited)."""
    env = {"OMP_NUM_THREADS": str(threads)} if threads else {}
    if cache_mb is not None:
        env["VIT_EXPLAINER_CACHE_MB"] = str(cache_mb)
    if read_ahead is not None:
        env["VIT_EXPLAINER_READ_AHEAD"] = "1" if read_ahead else "0"
    env = env or None
    with contextlib.ExitStack() as stack:
        url, servers = start_servers(stack, replicas, env)
        asyncio.run(teacher([s.url for s in servers], model, timeout))
        load_before = os.getloadavg()[0]
        cpu0, client0 = [s.cpu_s() for s in servers], _own_cpu_s()
        t0 = time.time()
        results = asyncio.run(asyncio.wait_for(
            classroom(url, sessions, within, model, think, timeout),
            within + timeout * (len(STAGES) + 2)))
        wall = time.time() - t0
        cpu = [s.cpu_s() - c for s, c in zip(servers, cpu0, strict=True)]
        peak = [s.peak_rss_mb() for s in servers]
        pss = sum(s.pss_mb() for s in servers)
        client = _own_cpu_s() - client0
        load_after = os.getloadavg()[0]
    return summarize(results, {
        "date": str(date.today()), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "sessions": sessions, "within_s": within, "model": model, "replicas": replicas,
        "torch_threads": threads or "default", "cache_mb": cache_mb or "default",
        "read_ahead": {None: "inherited", True: "on", False: "off"}[read_ahead],
        "think_s": think, "wall_s": round(wall, 1),
        "server_cpu_s": round(sum(cpu), 1),
        "server_cpu_share": round(sum(cpu) / (wall * (os.cpu_count() or 1)), 2),
        "server_cpu_per_session_s": round(sum(cpu) / sessions, 2),
        "server_peak_rss_mb": [round(p) for p in peak],
        "server_pss_after_mb": round(pss),
        "client_cpu_s": round(client, 1),
        "load_average_before_after": [round(load_before, 1), round(load_after, 1)]})


def _own_cpu_s() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def summarize(results: list[dict], run: dict) -> dict:
    views = [OPEN, FIRST] + STAGES
    per_view = {}
    for v in views:
        xs = [r["times"][v] for r in results if v in r["times"]]
        per_view[v] = {"n": len(xs), "p50_s": round(pct(xs, 0.5), 2),
                       "p95_s": round(pct(xs, 0.95), 2), "max_s": round(max(xs, default=nan), 2)}
    pages = [r["times"][v] for r in results for v in STAGES if v in r["times"]]
    replicas = sorted({r["replica"] for r in results if r["replica"]})
    return {**run, "views": per_view,
            "page_p50_s": round(pct(pages, 0.5), 2), "page_p95_s": round(pct(pages, 0.95), 2),
            "sessions_per_replica": {k: sum(r["replica"] == k for r in results)
                                     for k in replicas},
            "problems": {k: [p for r in results for p in r["problems"][k]] for k in PROBLEMS}}


def report(summary: dict) -> str:
    """The summary as two Markdown tables and the problems, one per line."""
    s = summary
    out = [f"{s['date']} · {s['machine']} · {s['sessions']} sessions arriving within "
           f"{s['within_s']:g} s · {s['model']} · {s['replicas']} replica(s), torch threads "
           f"{s['torch_threads']} · cache {s.get('cache_mb', 'default')} MB · read-ahead "
           f"{s.get('read_ahead', 'inherited')} · think "
           f"{s['think_s']:g} s · load average before / after "
           f"{s['load_average_before_after'][0]} / {s['load_average_before_after'][1]}", "",
           "| view | sessions | p50 (s) | p95 (s) | max (s) |", "|---|---|---|---|---|"]
    names = {OPEN: "open (connect → run finished)", FIRST: "first view (upload → run finished)"}
    out += [f"| {names.get(v, v)} | {r['n']} | {r['p50_s']} | {r['p95_s']} | {r['max_s']} |"
            for v, r in s["views"].items()]
    out += [f"| every page | | {s['page_p50_s']} | {s['page_p95_s']} | |", "",
            "| wall (s) | server CPU (s, share of the cores) | server CPU per session (s) | "
            "server peak RSS (MB) | server PSS at the end, all replicas (MB) | client CPU (s) | "
            "sessions per replica | " + " | ".join(PROBLEMS) + " |",
            "|---|---|---|---|---|---|---|" + "---|" * len(PROBLEMS),
            f"| {s['wall_s']} | {s['server_cpu_s']} ({s['server_cpu_share']:.0%}) | "
            f"{s['server_cpu_per_session_s']} | "
            f"{' + '.join(str(p) for p in s['server_peak_rss_mb'])} | "
            f"{s.get('server_pss_after_mb', '—')} | {s['client_cpu_s']} | "
            f"{', '.join(f'{k}: {n}' for k, n in s['sessions_per_replica'].items()) or '—'} | "
            + " | ".join(str(len(s["problems"][k])) for k in PROBLEMS) + " |"]
    out += [f"PROBLEM ({k}): {p}" for k in PROBLEMS for p in s["problems"][k]]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, help="how many (default 30; 20 with --browser)")
    ap.add_argument("--model", help="open every session on this model (default vit-b16; the "
                                    "app's default with --browser)")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--within", type=float, default=30.0,
                    help="sessions arrive evenly within this many seconds")
    ap.add_argument("--replicas", type=int, default=1, help="app processes behind HAProxy")
    ap.add_argument("--threads", type=int, help="OMP_NUM_THREADS for each app process")
    ap.add_argument("--cache-mb", type=float, help="the cache budget of each app process")
    ap.add_argument("--read-ahead", action=argparse.BooleanOptionalAction, default=True,
                    help="the servers' read-ahead (ui/serving/readahead.py; default on, as "
                         "the app)")
    ap.add_argument("--think", type=float, default=0.0, help="seconds on a page before the next")
    ap.add_argument("--timeout", type=float, default=120.0, help="the longest any wait may take")
    ap.add_argument("--browser", action="store_true", help="real Chromium tabs instead")
    ap.add_argument("--processes", type=int, default=2, help="with --browser: browser processes")
    ap.add_argument("--pages", help="with --browser: these pages (slugs, comma-separated) "
                                    "after the first view, in this order (default: every page)")
    ap.add_argument("--stagger", type=float, default=1.0,
                    help="with --browser: seconds between session starts")
    args = ap.parse_args(argv)
    if args.browser:
        args.sessions = args.sessions or 20
        return browser_main(args)
    summary = protocol_run(args.sessions or 30, args.within, args.model or "vit-b16",
                           args.replicas, args.threads, args.think, args.timeout,
                           args.cache_mb, args.read_ahead)
    print(report(summary))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return 1 if any(summary["problems"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
