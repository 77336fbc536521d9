"""Benchmark: what tracing costs. `python -m benchmarks.trace_cost [models] [--runs 24]`.

In every round, one after another on the same input: a plain forward (`model(x)`, nothing
kept), `run_trace` (lean, as the app uses it), `run_trace(lean=False)` (every intermediate
kept), the first read of one block's name from a fresh lean trace, `trace.patterns()` (every
layer's pattern, streamed), and, where they are importable, timm's `VisionTransformer` and
Hugging Face's eager `ViTForImageClassification` holding the same weights (HF asked for
attentions and hidden states, as an explainer would ask it). All see the same machine state;
the table gives medians, the ratios of medians and the quartiles of the per-round ratios.

Memory: the bytes a trace holds (`nbytes()`) as made, after one block was read and after every
name was read, and the RSS growth per kept trace: a fresh process makes 2 traces (warm-up,
dropped), then keeps 8, and divides the growth by 8.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from vit_core import load_model, run_trace

ROOT = Path(__file__).resolve().parents[1]
KEPT_TRACES = 8


def inputs(config, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, config.in_chans, config.img_size, config.img_size, generator=g)
    return x, (torch.tensor([[1, 4, 5, 6]]) if config.has_text else None)


# ---- the same weights in timm and in Hugging Face transformers (fixture venv only)

def timm_twin(model):
    """timm's VisionTransformer holding the model's weights (strict load) as a callable on x,
    or a sentence saying why there is none. A segmentation head (which timm's class lacks) is
    left out of the twin; it costs one small matmul."""
    try:
        from timm.models.vision_transformer import VisionTransformer
    except Exception:
        return "timm not installed"
    c = model.config
    if c.has_text or c.dist_token:
        return "no timm twin"
    net = VisionTransformer(img_size=c.img_size, patch_size=c.patch_size, embed_dim=c.embed_dim,
                            depth=c.depth, num_heads=c.num_heads, mlp_ratio=c.mlp_ratio,
                            num_classes=c.num_classes, global_pool=c.global_pool,
                            class_token=c.class_token, fc_norm=c.fc_norm).eval()
    weights = {k: v for k, v in model.state_dict().items() if not k.startswith("seg_head.")}
    net.load_state_dict(weights, strict=True)
    return _checked(net, model, net if c.num_classes else net.forward_features)


def hf_twin(model):
    """Hugging Face's eager ViT (ViTForImageClassification, or ViTModel for a headless encoder)
    holding the model's weights, called with output_attentions=True and
    output_hidden_states=True; or a sentence saying why there is none."""
    try:
        from transformers import ViTConfig, ViTForImageClassification, ViTModel
    except Exception:
        return "transformers not installed"
    from vit_core.io.external import HF_LAYER, HF_LAYER_KEY, HF_QKV, HF_TOP

    c = model.config
    if c.has_text or c.dist_token or not c.class_token or c.global_pool != "token":
        return "no HF ViT twin"
    cfg = ViTConfig(image_size=c.img_size, patch_size=c.patch_size, num_channels=c.in_chans,
                    hidden_size=c.embed_dim, num_hidden_layers=c.depth,
                    num_attention_heads=c.num_heads, intermediate_size=c.mlp_hidden,
                    hidden_act="gelu", layer_norm_eps=c.norm_eps, qkv_bias=c.qkv_bias,
                    num_labels=max(c.num_classes, 1), attn_implementation="eager")
    net = (ViTForImageClassification(cfg) if c.num_classes else
           ViTModel(cfg, add_pooling_layer=False)).eval()
    ours, theirs = model.state_dict(), {}
    for key in net.state_dict():  # external.from_hf's names, read the other way
        k = key.removeprefix("vit.")
        if m := HF_LAYER_KEY.match(k):
            i, name, kind = m.groups()
            theirs[key] = (ours[f"blocks.{i}.attn.qkv.{kind}"].chunk(3)[HF_QKV[name]]
                           if name in HF_QKV else ours[f"blocks.{i}.{HF_LAYER[name]}.{kind}"])
        else:
            base, _, kind = k.rpartition(".")
            theirs[key] = ours[HF_TOP.get(k) or f"{HF_TOP[base]}.{kind}"]
    net.load_state_dict(theirs, strict=True)

    def run(x):
        out = net(pixel_values=x, output_attentions=True, output_hidden_states=True)
        assert len(out.attentions) == c.depth and len(out.hidden_states) == c.depth + 1
        return out.logits if c.num_classes else out.last_hidden_state
    return _checked(net, model, run)


def _checked(net, model, run) -> Callable:
    """The twin as a callable, after checking that it computes what the model computes."""
    x, _ = inputs(model.config, seed=1)
    with torch.inference_mode():
        ours, theirs = model(x), run(x)
    err = (ours - theirs).abs().max().item()
    if err > 1e-4:
        raise AssertionError(f"the twin's output differs from the model's by {err:.2e}")

    def call(x):
        with torch.inference_mode():
            run(x)
    return call


# ---- time

def _quartiles(values: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def measure(name: str, runs: int = 24, peers: bool = True) -> dict:
    """Median milliseconds of every contender over `runs` rounds, run in turn in every round."""
    model = load_model(name)
    c = model.config
    x, ids = inputs(c)
    pattern = f"blocks.{c.depth // 2}.attn.pattern"

    def plain(_):
        with torch.inference_mode():
            model(x, ids)

    def trace():  # untimed: a fresh trace for the contenders that read one
        return run_trace(model, x, ids)

    # name -> (untimed preparation or None, timed call on what it made)
    contenders = {"plain": (None, plain), "trace": (None, lambda _: trace()),
                  "full trace": (None, lambda _: run_trace(model, x, ids, lean=False)),
                  "read one block": (trace, lambda tr: tr[pattern]),
                  "patterns()": (trace, lambda tr: [p[0, 0, 0] for p in tr.patterns()])}
    notes = {}
    for peer, twin in [("timm", timm_twin), ("HF eager", hf_twin)] if peers else []:
        made = twin(model)
        if isinstance(made, str):
            notes[peer] = made
        else:
            contenders[peer] = (None, lambda _, made=made: made(x))
    times = {key: [] for key in contenders}
    for round_ in range(runs + 3):  # 3 rounds to warm up allocator and kernels, not counted
        for key, (prepare, call) in contenders.items():
            arg = prepare() if prepare else None
            t0 = time.perf_counter()
            call(arg)
            if round_ >= 3:
                times[key].append(time.perf_counter() - t0)
            del arg
    ms = {key: statistics.median(t) * 1e3 for key, t in times.items()}
    ratios = {}
    for peer in ("plain", "timm", "HF eager"):
        if peer in times:
            per_round = [t / p for t, p in zip(times["trace"], times[peer], strict=True)]
            ratios[peer] = (ms["trace"] / ms[peer], *_quartiles(per_round))
    return {"model": name, "tokens": c.num_image_tokens, "ms": ms, "ratios": ratios,
            "notes": notes, "runs": runs}


# ---- memory

def held(name: str) -> dict:
    """MB a lean trace holds as made, after reading one name of one block, and fully read."""
    model = load_model(name)
    x, ids = inputs(model.config)
    tr = run_trace(model, x, ids)
    made = tr.nbytes()
    tr[f"blocks.{model.config.depth // 2}.attn.pattern"]
    one = tr.nbytes()
    for key in tr:
        tr[key]
    return {"made": made / 2**20, "one block": one / 2**20, "fully read": tr.nbytes() / 2**20,
            "full trace": run_trace(model, x, ids, lean=False).nbytes() / 2**20}


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def rss_per_trace(name: str, lean: bool) -> float | None:
    """RSS growth per kept trace in MB, from a fresh process (None where there is no /proc)."""
    if not Path("/proc/self/statm").exists():
        return None
    cmd = [sys.executable, "-m", "benchmarks.trace_cost", "--rss-child", name,
           *([] if lean else ["--full"])]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["mb"]


def _rss_child(name: str, lean: bool) -> None:
    model = load_model(name)
    xs = [inputs(model.config, seed) for seed in range(KEPT_TRACES + 2)]
    for x, ids in xs[:2]:  # kernels and allocator warm, as in a running server
        run_trace(model, x, ids, lean=lean)
    gc.collect()
    before = _rss()
    kept = [run_trace(model, x, ids, lean=lean) for x, ids in xs[2:]]
    print(json.dumps({"mb": (_rss() - before) / len(kept) / 2**20}))


# ---- tables

def rows(results: list[dict], memory: dict) -> dict[str, list[dict]]:
    """The two tables: time, with ratios and their spread, and memory."""
    def ratio(r, peer):
        if peer not in r["ratios"]:
            return r["notes"].get(peer, "—")
        mid, lo, hi = r["ratios"][peer]
        return f"**{mid:.3f}** ({lo:.2f}–{hi:.2f})"

    def ms(r, key):
        return f"{r['ms'][key]:.1f}" if key in r["ms"] else r["notes"].get(key, "—")

    time_rows = [{"model": r["model"], "tokens": r["tokens"], "plain ms": ms(r, "plain"),
                  "run_trace ms": ms(r, "trace"), "timm ms": ms(r, "timm"),
                  "HF eager ms": ms(r, "HF eager"), "trace / plain": ratio(r, "plain"),
                  "trace / timm": ratio(r, "timm"), "trace / HF eager": ratio(r, "HF eager"),
                  "lean=False ms": ms(r, "full trace"),
                  "first read of a block ms": ms(r, "read one block"),
                  "patterns() ms": ms(r, "patterns()")} for r in results]
    memory_rows = [{"model": name, "trace as made MB": f"{m['made']:.1f}",
                    "+ one block read MB": f"{m['one block']:.1f}",
                    "fully read MB": f"{m['fully read']:.1f}",
                    "lean=False MB": f"{m['full trace']:.1f}",
                    f"RSS per kept trace MB ({KEPT_TRACES} kept)": _mb(m.get("rss")),
                    "RSS per kept trace, lean=False MB": _mb(m.get("rss full"))}
                   for name, m in memory.items()]
    return {"time": time_rows, "memory": memory_rows}


def _mb(value) -> str:
    return "—" if value is None else f"{value:.1f}"


def run(models: list[str], runs: int) -> dict[str, list[dict]]:
    results = [measure(name, runs) for name in models]
    memory = {}
    for name in models:
        memory[name] = held(name)
        memory[name]["rss"] = rss_per_trace(name, True)
        memory[name]["rss full"] = rss_per_trace(name, False)
    return rows(results, memory)


def markdown(table: list[dict]) -> str:
    head = list(table[0])
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(out + ["| " + " | ".join(str(r[k]) for k in head) + " |" for r in table])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=["vit-b16"])
    ap.add_argument("--runs", type=int, default=24)
    ap.add_argument("--rss-child", help=argparse.SUPPRESS)
    ap.add_argument("--full", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rss_child:
        return _rss_child(args.rss_child, not args.full)
    print(f"# {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}, median of {args.runs} rounds, load "
          f"{os.getloadavg()[0]:.2f}")
    for title, table in run(args.models, args.runs).items():
        print(f"\n{title}\n\n{markdown(table)}")


if __name__ == "__main__":
    main()
