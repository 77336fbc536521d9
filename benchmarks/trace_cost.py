"""Benchmark: what keeping every intermediate costs. `python -m benchmarks.trace_cost [--runs 20]`.

Plain forward (model(x), nothing captured) vs run_trace on the same model and input, alternating
so that both see the same machine state; prints medians, their ratio and the trace's size.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

from vit_core import load_model, run_trace


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(name: str, runs: int = 20, others: dict | None = None) -> dict:
    """Median times of plain forward and run_trace (and of each `others` callable, taking the
    input tensor), run in turn within every round so that all see the same machine state."""
    model = load_model(name)
    c = model.config
    x = torch.randn(1, c.in_chans, c.img_size, c.img_size)
    ids = torch.tensor([[1, 4, 5, 6]]) if c.has_text else None

    def plain():
        with torch.inference_mode():
            model(x, ids)

    def traced():
        run_trace(model, x, ids)

    fns = {"plain": plain, "trace": traced}
    for key, fn in (others or {}).items():
        fns[key] = lambda fn=fn: fn(x)
    for _ in range(3):  # warm up allocator and kernels
        for fn in fns.values():
            fn()
    times = {key: [] for key in fns}
    for _ in range(runs):
        for key, fn in fns.items():
            times[key].append(_time(fn))
    ms = {key: statistics.median(t) * 1e3 for key, t in times.items()}
    plain_ms, trace_ms = ms.pop("plain"), ms.pop("trace")
    return {"model": name, "tokens": c.num_image_tokens, "plain_ms": plain_ms,
            "trace_ms": trace_ms, "ratio": trace_ms / plain_ms, "others_ms": ms,
            "trace_mb": run_trace(model, x, ids).nbytes() / 2**20}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("models", nargs="*", default=["vit-b16"])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args(argv)
    print(f"# {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}, median of {args.runs} alternating runs")
    print("| model | tokens | plain forward (ms) | run_trace (ms) | ratio | trace (MB) |")
    print("|---|---|---|---|---|---|")
    for name in args.models:
        r = measure(name, args.runs)
        print(f"| {r['model']} | {r['tokens']} | {r['plain_ms']:.1f} | {r['trace_ms']:.1f} | "
              f"{r['ratio']:.3f} | {r['trace_mb']:.1f} |")


if __name__ == "__main__":
    main()
