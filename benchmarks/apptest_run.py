"""What one AppTest run of a page costs the test suite, with and without the cached scan of
installed Streamlit components (tests/conftest.py keeps the first scan's answer).

    .venv/bin/python -m benchmarks.apptest_run [--runs 3] [--pages 8] [--page attention ...]

Each configuration runs in its own process (the scan cache is process-wide), alternating, so
both see the same machine. Prints one Markdown table: seconds per page run (mean of the runs,
each the mean over the pages), and the share of the plain run the scan takes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import functools, json, os, sys, time
sys.path.insert(0, {root!r})
os.environ["VIT_EXPLAINER_READ_AHEAD"] = "0"
if {cached}:
    from streamlit.components.v2 import manifest_scanner as ms
    ms.scan_component_manifests = functools.cache(ms.scan_component_manifests)
from tests.support import open_app
pages = {pages!r}
for p in pages:  # warm: models loaded, passes cached, modules imported
    open_app(p)
t = time.perf_counter()
for _ in range({repeat}):
    for p in pages:
        open_app(p)
print(json.dumps((time.perf_counter() - t) / ({repeat} * len(pages))))
"""


def one(cached: bool, pages: list[str], repeat: int) -> float:
    code = CHILD.format(root=str(ROOT), cached=cached, pages=pages, repeat=repeat)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="processes per configuration")
    ap.add_argument("--repeat", type=int, default=2, help="passes over the pages per process")
    ap.add_argument("--page", action="append", help="page slugs (default: eight stages)")
    args = ap.parse_args()
    pages = args.page or ["overview", "patches", "embeddings", "qkv", "attention", "masks",
                          "mlp", "logits"]
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.runs):
        for cached in (False, True):
            times[cached].append(one(cached, pages, args.repeat))
    plain, kept = (statistics.mean(times[c]) for c in (False, True))
    print(f"AppTest, {len(pages)} pages x {args.repeat}, {args.runs} processes each "
          f"(shapes-classifier, sample scene)\n")
    print("| component scan | s per page run (mean) | runs (s) |")
    print("|---|---|---|")
    for cached, label in ((False, "every run (AppTest's own)"), (True, "once per process")):
        runs = ", ".join(f"{t:.3f}" for t in times[cached])
        print(f"| {label} | {statistics.mean(times[cached]):.3f} | {runs} |")
    print(f"\nThe scan is {100 * (plain - kept) / plain:.0f} % of a plain run.")


if __name__ == "__main__":
    main()
