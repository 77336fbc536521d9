"""What one run of each page costs the server, here and at another commit (A/B on one machine).

    .venv/bin/python -m benchmarks.page_runs [--against REV] [--runs 3] [--repeat 2]
                                             [--model NAME] [--page SLUG ...]

A page run is one AppTest run of the page in normal mode (every step drawn, as a student's
scrolled page), warm: the model loaded, the forward pass cached, the modules imported. Most of
it is building the figures. Each configuration runs in its own processes, alternating, so both
see the same machine; `--against` checks REV out into a temporary git worktree. Prints one
Markdown table: seconds per page run (mean of the processes' means, and the spread).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["overview", "patches", "embeddings", "qkv", "attention", "masks", "mlp", "logits",
         "segmentation", "experiments", "training", "mae"]

CHILD = """
import functools, json, os, sys, time
sys.path.insert(0, {root!r})
os.environ["VIT_EXPLAINER_READ_AHEAD"] = "0"
from streamlit.components.v2 import manifest_scanner as ms
ms.scan_component_manifests = functools.cache(ms.scan_component_manifests)  # as tests/conftest
from tests.support import open_app
out = {{}}
for p in {pages!r}:
    open_app(p, {model!r})  # warm
    t = time.perf_counter()
    for _ in range({repeat}):
        open_app(p, {model!r})
    out[p] = (time.perf_counter() - t) / {repeat}
print(json.dumps(out))
"""


def one(root: Path, pages: list[str], model: str, repeat: int) -> dict[str, float]:
    code = CHILD.format(root=str(root), pages=pages, model=model, repeat=repeat)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=root)
    if out.returncode:
        sys.exit(f"the page runs failed in {root}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", help="a git revision to compare with (e.g. HEAD~1)")
    ap.add_argument("--runs", type=int, default=3, help="processes per configuration")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each page per process")
    ap.add_argument("--model", default="shapes-classifier")
    ap.add_argument("--page", action="append", help="page slugs (default: every stage)")
    args = ap.parse_args()
    pages = args.page or PAGES
    roots = {"this tree": ROOT}
    with tempfile.TemporaryDirectory() as tmp:
        if args.against:
            other = Path(tmp) / "other"
            subprocess.run(["git", "worktree", "add", "--detach", "-q", str(other),
                            args.against], cwd=ROOT, check=True)
            roots = {args.against: other, **roots}
        try:
            times: dict[str, list[dict[str, float]]] = {k: [] for k in roots}
            for _ in range(args.runs):
                for name, root in roots.items():
                    times[name].append(one(root, pages, args.model, args.repeat))
        finally:
            if args.against:
                subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT)
    print(f"Seconds per page run (AppTest, normal mode, {args.model}, sample scene; "
          f"{args.runs} processes x {args.repeat} runs each, mean and range of the processes)\n")
    names = list(roots)
    print("| page | " + " | ".join(names) + (" | ratio |" if len(names) == 2 else " |"))
    print("|---" * (len(names) + 1 + (len(names) == 2)) + "|")
    for p in pages + ["all pages"]:
        cells, means = [], []
        for n in names:
            runs = ([sum(r.values()) for r in times[n]] if p == "all pages"
                    else [r[p] for r in times[n]])
            m = statistics.mean(runs)
            means.append(m)
            cells.append(f"{m:.3f} ({min(runs):.3f}–{max(runs):.3f})")
        ratio = f" | {means[0] / means[1]:.1f}×" if len(names) == 2 and means[1] else ""
        print(f"| {p} | " + " | ".join(cells) + ratio + " |")


if __name__ == "__main__":
    main()
