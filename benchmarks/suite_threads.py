"""What torch's thread count does to the test suite's wall time under pytest-xdist: each worker
(and each server a browser test starts) with OMP_NUM_THREADS=1 against 2 (the machine's cores).

    .venv/bin/python -m benchmarks.suite_threads [--tier quick|rest] [--runs 2] [--workers 2]

tests/conftest.py gives each worker its share of the cores (cores // workers) unless
OMP_NUM_THREADS is set; this sets it for each run. The settings alternate run by run, so both
see the same machine. Prints one Markdown table: wall seconds of every run, and the mean.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIERS = {"quick": "not browser and not load and not slow", "rest": "browser or load or slow"}


def run(tier: str, threads: int, workers: int) -> tuple[float, bool]:
    """One run of the tier: (wall seconds, passed)."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", str(workers),
                           "-p", "no:cacheprovider", "-m", TIERS[tier]], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    for line in done.stdout.splitlines():  # what failed, said (a timing of a red run is no A/B)
        if line.startswith(("FAILED", "ERROR")):
            print(f"threads {threads}: {line}", file=sys.stderr, flush=True)
    return time.perf_counter() - start, done.returncode == 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tier", choices=list(TIERS), default="quick")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, os.cpu_count() or 2])
    args = ap.parse_args(argv)
    walls: dict[int, list[str]] = {t: [] for t in args.threads}
    means: dict[int, list[float]] = {t: [] for t in args.threads}
    for _ in range(args.runs):
        for t in args.threads:
            wall, ok = run(args.tier, t, args.workers)
            walls[t].append(f"{wall:.0f}" + ("" if ok else " (failed)"))
            means[t].append(wall)
            print(f"threads {t}: {wall:.0f} s{'' if ok else ' (failed)'}", file=sys.stderr,
                  flush=True)
    print(f"\n{args.tier} tier, -n {args.workers}, {os.cpu_count()} cores\n")
    print("| OMP_NUM_THREADS | runs (s) | mean (s) |\n|---|---|---|")
    for t in args.threads:
        print(f"| {t} | {', '.join(walls[t])} | {statistics.mean(means[t]):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
