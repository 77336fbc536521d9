"""Benchmark: what keeping every intermediate costs. `python -m vit_core.bench [--runs 20]`.

Plain forward (model(x), nothing captured) vs run_trace on the same model and input, alternating
so that both see the same machine state; prints medians, their ratio and the trace's size.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

from .checkpoints import load_model
from .trace import run_trace


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(name: str, runs: int = 20) -> dict:
    model = load_model(name)
    c = model.config
    x = torch.randn(1, c.in_chans, c.img_size, c.img_size)
    ids = torch.tensor([[1, 4, 5, 6]]) if c.has_text else None

    def plain():
        with torch.inference_mode():
            model(x, ids)

    def traced():
        run_trace(model, x, ids)

    for _ in range(3):  # warm up allocator and kernels
        plain(), traced()
    t_plain, t_trace = [], []
    for _ in range(runs):
        t_plain.append(_time(plain))
        t_trace.append(_time(traced))
    p, t = statistics.median(t_plain), statistics.median(t_trace)
    return {"model": name, "tokens": c.num_image_tokens, "plain_ms": p * 1e3,
            "trace_ms": t * 1e3, "ratio": t / p,
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
