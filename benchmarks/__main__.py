"""Performance of the explainer on this machine; prints Markdown tables and writes JSON.

    .venv/bin/python -m benchmarks [--only trace first warm payload memory fair load why]
                                   [--json FILE]

trace    run_trace vs a plain forward, timm and Hugging Face's eager ViT (when importable);
         bytes and RSS per kept trace
first    upload -> first page rendered: AppTest run time, and in Chromium until notRunning
warm     each page's rerun with its trace cached, after moving layer / head / patch (AppTest)
payload  bytes a page visit sends to the browser (websocket frames + media), in Chromium
memory   one cached ViT-B/16 trace, and server RSS after N sessions with their own images
fair     a new student's first view while others' captions are written: whole-caption jobs
         against one word per turn on the worker
load     a classroom measured on the server: --classroom sessions (30) arrive within 30 s on
         ViT-B/16, each uploads its own picture and visits every page 10 s apart
         (tools/load_test.py, Streamlit's protocol, no browsers), on one app process and on
         --replicas behind HAProxy (one torch thread each, the default cache shared out)
why      what the explanations cost (activation patching, exact and attribution, on the
         bundled classifier and ViT-B/16), cold and warm, and attribution patching's agreement
         with exact patching on the bundled models (benchmarks/why.py)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ui.serving.process import ENVIRONMENT  # noqa: E402  (imports nothing heavy)

# The app's environment, set before torch loads as app.py does (ui/serving/process.py says why).
for _name, _value in ENVIRONMENT.items():
    os.environ.setdefault(_name, _value)
import torch  # noqa: E402

STAGES = ["overview", "patches", "embeddings", "qkv", "attention", "masks", "mlp", "logits",
          "shapes", "segmentation", "experiments"]


def table(rows: list[dict]) -> str:
    head = list(rows[0])
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(r[k]) for k in head) + " |" for r in rows]
    return "\n".join(out)


def bench_trace(models: list[str], runs: int) -> dict[str, list[dict]]:
    """Two tables (time with timm / HF eager columns where importable, and memory); see
    benchmarks/trace_cost.py for what is measured."""
    from benchmarks.trace_cost import run

    return run(models, runs)


def photo() -> bytes:
    from tests.support import photo_bytes

    return photo_bytes()


def apptest(model: str, page: str = "overview"):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.session_state["model"] = model
    at.query_params["page"] = page
    return at


def bench_first(models: list[str], uploads: int = 5) -> list[dict]:
    from ui.serving import state

    rows = []
    for name in models:
        state.get_model(name)  # a loaded model, as on a running server; traces not cached yet
        at = apptest(name).run()
        t0 = time.perf_counter()
        at.sidebar.file_uploader[0].upload(f"first-{name}.jpg", photo(), "image/jpeg")
        at.run()
        apptest_s = time.perf_counter() - t0
        state._trace.clear()
        state._prepare.clear()
        times = sorted(browser_first_views(name, uploads))
        rows.append({"model": name, "AppTest upload → rendered (s)": f"{apptest_s:.2f}",
                     f"Chromium upload → notRunning, median of {uploads} (s)":
                         f"{times[len(times) // 2]:.2f}",
                     "min – max (s)": f"{times[0]:.2f} – {times[-1]:.2f}"})
    return rows


# The run that shows this upload has finished: a cheap check, polled on every animation frame.
# (Playwright's text locator searched the whole page's text on each poll, on the same two cores
# as the page and the server: ~0.1 s of the browser's time per upload went to the measurement.)
SHOWN_JS = """text => !!document.querySelector(
    '[data-testid="stApp"][data-test-script-state="notRunning"]')
    && !!document.querySelector('h1') && [...document.querySelectorAll(
    '[data-testid="stSidebar"] [data-testid="stCaptionContainer"]')].some(
    e => e.textContent.startsWith(text))"""


def browser_first_views(model: str, uploads: int) -> list[float]:
    """Seconds from choosing a file to `notRunning`, for `uploads` different photos in turn, each
    new to the server (no cached trace). After the first, choosing a file replaces the previous
    one, as when a student tries a second photo."""
    import tempfile

    from playwright.sync_api import sync_playwright

    from tests.support import photo_bytes
    from tools.browser import CHROMIUM_ARGS, serve, wait_idle

    seconds = []
    with serve() as srv, sync_playwright() as pw, tempfile.TemporaryDirectory() as tmp:
        b = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = b.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{srv.url}/?model={model}")
        wait_idle(page)  # model loaded, sample traced
        for i in range(uploads):
            path = Path(tmp) / f"photo{i}.jpg"
            path.write_bytes(photo_bytes(w=640 + 16 * i))  # a different image each time
            page.wait_for_timeout(1000)
            t0 = time.perf_counter()
            page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(path)
            page.wait_for_function(SHOWN_JS, arg=f"Showing upload: {path.name}",
                                   timeout=300_000)
            seconds.append(time.perf_counter() - t0)
            wait_idle(page)
        b.close()
    return seconds


WIDGETS = {"patches": [("number_input", "patch", [3, 50, 100])],
           "embeddings": [("number_input", "patch", [3, 50, 100])],
           "qkv": [("slider", "layer", [0, 2, 4]), ("slider", "head", [1, 2, 0])],
           "attention": [("slider", "layer", [0, 2, 4]), ("slider", "head", [1, 2, 0]),
                         ("number_input", "patch", [3, 50, 100])],
           "mlp": [("slider", "layer", [0, 2, 4]), ("number_input", "patch", [3, 50, 100])]}


def bench_warm(model: str) -> list[dict]:
    rows = []
    for page in STAGES:
        at = apptest(model, page).run()  # cold: fills the caches
        times = []
        for kind, key, values in WIDGETS.get(page, []):
            for v in values:
                widget = getattr(at, kind)(key=key)
                hi = getattr(widget, "max", None)
                v = v if hi is None else min(v, int(hi))
                widget.set_value(v)
                t0 = time.perf_counter()
                at.run()
                times.append(time.perf_counter() - t0)
        for _ in range(3):  # plain reruns (e.g. another widget elsewhere)
            t0 = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t0)
        rows.append({"page": page, "median ms": f"{statistics.median(times) * 1e3:.0f}",
                     "worst ms": f"{max(times) * 1e3:.0f}", "reruns": len(times)})
    return rows


def bench_payload(model: str) -> list[dict]:
    from playwright.sync_api import sync_playwright

    from tools.browser import CHROMIUM_ARGS, serve, wait_idle

    rows = []
    with serve() as srv, sync_playwright() as pw:
        b = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        for slug in STAGES:
            page = b.new_page()
            frames, media = [], []
            page.on("websocket", lambda ws, frames=frames: ws.on(
                "framereceived", lambda payload: frames.append(len(payload))))
            page.on("response", lambda r, media=media: media.append(r)
                    if "/media/" in r.url and "/static/" not in r.url else None)
            page.goto(f"{srv.url}/?page={slug}&model={model}")
            wait_idle(page)
            ws, img = sum(frames), sum(len(r.body()) for r in media)  # before the page closes
            rows.append({"page": slug, "websocket KB": f"{ws / 1024:.0f}",
                         "images KB": f"{img / 1024:.0f}",
                         "total MB": f"{(ws + img) / 2**20:.2f}"})
            page.close()
        b.close()
    return rows


def bench_memory(sessions: int) -> list[dict]:
    import subprocess

    from vit_core import load_model, run_trace

    model = load_model("vit-b16")
    tr = run_trace(model, torch.randn(1, 3, 224, 224))
    out = ROOT / "benchmarks" / "_load.json"
    # its own process: the load test spawns browser workers, which must not inherit AppTest's
    # __main__ from the sections before
    subprocess.run([sys.executable, str(ROOT / "tools" / "load_test.py"), "--browser",
                    "--sessions", str(sessions), "--processes", "2", "--json", str(out)],
                   check=False)
    r = json.loads(out.read_text())
    out.unlink()
    return [{"one ViT-B/16 trace (MB)": f"{tr.nbytes() / 2**20:.1f}",
             "sessions": sessions, "server RSS before (MB)": r["server_rss_mb_before"],
             "server RSS after (MB)": r["server_rss_mb_after"],
             "page p50 / p95 (s)": f"{r['page_p50_s']} / {r['page_p95_s']}",
             "problems": len(r["problems"])}]


def bench_fair(captions: int = 4, rounds: int = 3) -> list[dict]:
    """A new student's first view (one ViT-B/16 trace) sent while `captions` captions are being
    written on vit-b16-text (10 words each): the caption as one worker job (how it ran before)
    against one word per turn (ui/serving/worker.py). Medians of `rounds`; a fresh worker each
    time."""
    from concurrent.futures import ThreadPoolExecutor

    from ui.serving import worker as w
    from vit_core import generate, load_model, run_trace

    viewer, writer = load_model("vit-b16"), load_model("vit-b16-text")
    pixels = torch.randn(1, 3, 224, 224)
    ways = {"whole caption per job": lambda wk: wk.run(generate, writer, pixels,
                                                       max_new_tokens=10, timeout=600),
            "one word per turn": lambda wk: generate(wk.stepwise(writer), pixels,
                                                     max_new_tokens=10)}
    rows = []
    for name, caption in ways.items():
        first, ends = [], []
        for _ in range(rounds):
            wk = w.Worker()
            with ThreadPoolExecutor(captions) as pool:
                t0 = time.perf_counter()
                jobs = [pool.submit(caption, wk) for _ in range(captions)]
                time.sleep(0.5)  # the captions have started
                sent = time.perf_counter()
                wk.run(run_trace, viewer, pixels, timeout=600)
                first.append(time.perf_counter() - sent)
                for j in jobs:
                    j.result()
                ends.append(time.perf_counter() - t0)
            wk.stop()
        rows.append({"captions are run as": name, "captions at once": captions,
                     "first view sent 0.5 s in, done after (s)":
                         f"{statistics.median(first):.2f}",
                     "all captions done after (s)": f"{statistics.median(ends):.2f}"})
    return rows


def bench_load(sessions: int, replicas: int) -> str:
    from tools.load_test import protocol_run, report
    from ui.serving.cache import DEFAULT_MB

    # the classroom of docs/deployment.md: arriving within 30 s, 10 s on each page; the replicas
    # on one machine each with one torch thread and half the default cache
    runs = [protocol_run(sessions=sessions, within=30, think=10, replicas=1, read_ahead=True)]
    if replicas > 1:
        runs.append(protocol_run(sessions=sessions, within=30, think=10, replicas=replicas,
                                 threads=1, cache_mb=DEFAULT_MB // replicas, read_ahead=True))
    return "\n\n".join(report(r) for r in runs)


def bench_why() -> dict[str, list[dict]]:
    from benchmarks.why import run

    return run()


def main(argv=None):
    from vit_core import bundled_models, default_model_name

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*",
                    default=["trace", "first", "warm", "payload", "memory", "fair", "load", "why"])
    ap.add_argument("--runs", type=int, default=24)
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--classroom", type=int, default=30, help="sessions in the load section")
    ap.add_argument("--replicas", type=int, default=2,
                    help="the load section again on this many replicas behind HAProxy (1: no)")
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results.json"))
    args = ap.parse_args(argv)
    default = default_model_name()
    results = {"date": str(date.today()), "machine": f"{platform.machine()}, "
               f"{torch.get_num_threads()} threads", "torch": torch.__version__}
    sections = {
        "trace": lambda: bench_trace(["vit-b16"] + bundled_models(), args.runs),
        "first": lambda: bench_first([default, "vit-b16"] if default != "vit-b16"
                                     else ["vit-b16"]),
        "warm": lambda: bench_warm("vit-b16"),
        "payload": lambda: bench_payload("vit-b16"),
        "memory": lambda: bench_memory(args.sessions),
        "fair": bench_fair,
        "load": lambda: bench_load(args.classroom, args.replicas),
        "why": bench_why,
    }
    results["loadavg"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"# {results['date']} · {results['machine']} · torch {results['torch']} · "
          f"load {results['loadavg']}")
    for name in args.only:
        t0 = time.time()
        rows = sections[name]()
        results[name] = rows
        if isinstance(rows, str):  # a section that prints its own report
            text = rows
        else:
            tables = rows if isinstance(rows, dict) else {"": rows}  # a section may print several
            text = "\n\n".join(f"{title}\n\n{table(t)}" if title else table(t)
                               for title, t in tables.items())
        print(f"\n## {name} ({time.time() - t0:.0f} s)\n\n{text}", flush=True)
        out = Path(args.json)  # after each section; sections not run keep their last results
        kept = json.loads(out.read_text()) if out.exists() else {}
        out.write_text(json.dumps({**kept, **results}, indent=2))


if __name__ == "__main__":
    main()
