"""Train the bundled models on freshly generated scenes.

    python -m vit_core.scenes.train --task classify \
        --out vit_core/bundled/shapes-classifier.safetensors
    python -m vit_core.scenes.train --task caption --mask prefix --init <classifier> --out ...

AdamW, linear warmup + cosine decay, label smoothing, light photometric augmentation, fixed seeds,
held-out evaluation every --eval-every steps. A resumable state (weights + optimiser + step) is
written to --state every --save-every steps; rerunning the same command continues from it.
Every step sees new scenes (a fresh seed stream), the cheapest cure for a data-hungry ViT.

With --snapshots 0,40,100,... the weights at those steps are also written in float16 to
<out stem>.snapshots/step-<N>.safetensors, each with its held-out metrics on the 200 scenes
`SNAPSHOT_EVAL` names; <out stem>.training.json keeps the recipe, the training loss every 10
steps, the held-out curve and the snapshots (the Training stage draws them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from ..config import ViTConfig
from ..explain.segmentation import seg_grid, seg_targets
from ..hooks import capture
from ..io.checkpoints import ModelInfo, load_checkpoint, save_checkpoint
from ..io.ref import ModelRef
from ..io.text import Tokenizer
from ..model import ViT
from .evaluate import caption_batch, evaluate_captioner, evaluate_classifier
from .world import CLASS_NAMES, MAX_CAPTION_WORDS, VOCAB, FreshSceneStream

SNAPSHOT_EVAL = {"n": 200, "seed": 7}  # the held-out scenes every snapshot is measured on


def snapshot_dir(out: Path) -> Path:
    return out.with_name(out.stem + ".snapshots")


def training_log_path(out: Path) -> Path:
    return out.with_name(out.stem + ".training.json")


def make_config(args) -> ViTConfig:
    common = dict(img_size=224, patch_size=args.patch, embed_dim=args.dim, depth=args.depth,
                  num_heads=args.heads, mlp_ratio=4.0)
    if args.task == "classify":
        return ViTConfig(**common, num_classes=len(CLASS_NAMES), class_names=CLASS_NAMES,
                         seg_classes=len(CLASS_NAMES) + 1, seg_upsample=args.seg_upsample)
    tok = Tokenizer(VOCAB)
    return ViTConfig(**common, num_classes=0, class_token=True, vocab_size=len(tok),
                     vocab=tok.vocab, max_text_len=MAX_CAPTION_WORDS + 1,
                     default_mask=args.mask)


def lr_at(step: int, total: int, warmup: int, peak: float, floor: float = 0.02) -> float:
    """Linear warmup to `peak`, then cosine decay to floor * peak."""
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, total - warmup)
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


def add_run_options(ap) -> None:
    """The options every training run of this repository takes: evaluation, saving, threads,
    seed (vit_core/scenes/train.py and train_mae.py)."""
    ap.add_argument("--eval-n", type=int, default=300)
    ap.add_argument("--final-eval-n", type=int, default=1000)
    ap.add_argument("--save-every", type=int, default=100)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch default)")
    ap.add_argument("--seed", type=int, default=0)


def set_lr(opt, step: int, args) -> None:
    """The learning rate of `step` (lr_at with the run's --steps, --warmup and --lr) for every
    parameter group."""
    for group in opt.param_groups:
        group["lr"] = lr_at(step, args.steps, args.warmup, args.lr)


def augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Light photometric jitter that keeps every caption true: brightness, contrast, noise."""
    B = x.shape[0]
    contrast = 1 + 0.15 * (torch.rand(B, 1, 1, 1, generator=gen) * 2 - 1)
    bright = 0.1 * (torch.rand(B, 1, 1, 1, generator=gen) * 2 - 1)
    noise = 0.03 * torch.randn(x.shape, generator=gen)
    return x * contrast + bright + noise


def warm_start(model: ViT, path: str) -> list[str]:
    """Copy every tensor of `path` whose name and shape match (the image side of a classifier)."""
    from safetensors.torch import load_file

    src = load_file(path)
    own = model.state_dict()
    taken = {k: v for k, v in src.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(taken, strict=False)
    return sorted(taken)


def sincos_2d(grid: int, dim: int) -> torch.Tensor:
    """(grid², dim) 2D sine-cosine position codes: half the channels encode x, half y."""
    quarter = dim // 4
    freq = 1.0 / 100.0 ** (torch.arange(quarter, dtype=torch.float32) / quarter)
    ys, xs = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
    ang_x = xs.flatten()[:, None].float() * freq  # (N, D/4)
    ang_y = ys.flatten()[:, None].float() * freq
    return torch.cat([ang_x.sin(), ang_x.cos(), ang_y.sin(), ang_y.cos()], dim=1)


def add_smooth_positions(model: ViT, rms: float) -> None:
    """Add a smooth, coordinate-readable 2D code to the patches' E_pos (still trainable).

    A classifier's learned positions tell patches apart but need not say *where* they are in a
    way a caption word ("on the left") can read; sine-cosine codes do, from the first step."""
    c = model.config
    code = sincos_2d(c.grid, c.embed_dim)
    code = code * (rms / code.pow(2).mean().sqrt())
    with torch.no_grad():
        model.pos_embed[0, c.num_prefix_tokens:] += code


def loss_on(model, batch, args, tok) -> tuple[torch.Tensor, dict]:
    x = batch["pixels"]
    if args.task == "classify":
        with capture() as store:
            logits = model(x)
        loss_cls = F.cross_entropy(logits, batch["label"], label_smoothing=args.label_smoothing)
        c = model.config
        seg = seg_grid(store["seg_logits"], c.grid)  # (B, K_seg, g r, g r)
        # objects cover ~10 % of the pixels: weight them up so the easy all-background answer
        # stops paying, which pushes every patch token to encode what it shows
        weight = torch.full((seg.shape[1],), args.seg_fg_weight)
        weight[0] = 1.0
        loss_seg = F.cross_entropy(seg, seg_targets(batch["mask"], seg.shape[-1]), weight=weight)
        acc = (logits.argmax(-1) == batch["label"]).float().mean()
        return loss_cls + args.seg_weight * loss_seg, {"cls": loss_cls.item(),
                                                       "seg": loss_seg.item(), "acc": acc.item()}
    inputs, targets = caption_batch(tok, batch["caption"], model.config.max_text_len)
    logits = model(x, inputs, mask=args.mask)  # (B, T, V)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=tok.pad_id,
                           label_smoothing=args.label_smoothing)
    real = targets != tok.pad_id
    acc = (logits.argmax(-1) == targets)[real].float().mean()
    return loss, {"tok_acc": acc.item()}


def evaluate_now(model, args) -> dict:
    model.eval()
    if args.task == "classify":
        out = evaluate_classifier(model, args.eval_n, seed=7, workers=0)
    else:
        out = evaluate_captioner(model, args.eval_n, seed=7, mask=args.mask, workers=0)
    model.train()
    return out


def save_state(path: Path, model, opt, step: int, seen: float, history: list,
               log: dict | None = None):
    tmp = path.with_suffix(".tmp")
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                "seconds": seen, "history": history, "log": log or {}}, tmp)
    os.replace(tmp, path)  # atomic: a stop mid-write never leaves a broken state


def save_snapshot(model, out: Path, step: int, args) -> dict:
    """Write the weights at `step` in float16 and measure them on the SNAPSHOT_EVAL scenes."""
    path = snapshot_dir(out) / f"step-{step}.safetensors"
    info = ModelInfo(name=str(ModelRef(out.stem, step=step)), source="bundled", trained=step > 0,
                     description=f"{out.stem} after {step} of {args.steps} training steps")
    save_checkpoint(model, path, info, dtype=torch.float16)
    measured = load_checkpoint(path)  # what the app will load: the float16 file itself
    measured.eval()
    held = evaluate_classifier(measured, SNAPSHOT_EVAL["n"], seed=SNAPSHOT_EVAL["seed"],
                               workers=0) if args.task == "classify" else \
        evaluate_captioner(measured, SNAPSHOT_EVAL["n"], seed=SNAPSHOT_EVAL["seed"],
                           mask=args.mask, workers=0)
    entry = {"step": step, "file": path.name,
             **{k: v for k, v in held.items() if isinstance(v, float)}}
    print("snapshot:", json.dumps(entry), flush=True)
    return entry


def write_training_log(out: Path, args, log: dict, history: list, seconds: float) -> Path:
    path = training_log_path(out)
    recipe = {k: v for k, v in vars(args).items() if k not in ("note", "out", "state")}
    path.write_text(json.dumps({
        "model": out.stem, "recipe": recipe, "seconds": round(seconds, 1),
        "snapshot_eval": SNAPSHOT_EVAL, "train": log.get("train", []),
        "held_out": history, "snapshots": log.get("snapshots", [])}, indent=1) + "\n")
    return path


def write_card(out: Path, args, config: ViTConfig, metrics: dict, seconds: float,
               history: list):
    argv = sys.argv[1:]
    if "--note" in argv:  # the note is printed below, not inside the command
        i = argv.index("--note")
        argv = argv[:i] + argv[i + 2:]
    lines = [f"# {out.stem}", "",
             f"Trained by `python -m vit_core.scenes.train {shlex.join(argv)}` on this repo's "
             f"generated scenes (`vit_core.scenes.world`), every step on fresh seeds.", "",
             "## Model", "",
             f"- task: {args.task}" + (f", attention mask: {args.mask}" if args.task == "caption"
                                      else ""),
             f"- input {config.img_size}×{config.img_size}, patch {config.patch_size} "
             f"({config.grid}×{config.grid} = {config.num_patches} patches), D = "
             f"{config.embed_dim}, {config.depth} layers, {config.num_heads} heads, "
             f"MLP {config.mlp_hidden}",
             f"- parameters: {sum(p.numel() for p in ViT(config).parameters()):,}", "",
             "## Training", "",
             f"- {args.steps} steps × batch {args.batch} = {args.steps * args.batch:,} scenes; "
             f"AdamW lr {args.lr} (warmup {args.warmup} steps, cosine), weight decay "
             f"{args.wd}, label smoothing {args.label_smoothing}",
             f"- wall time on this machine (2 CPU cores): {seconds / 60:.1f} min",
             f"- warm start: {args.init or 'none (from scratch)'}", "",
             *([args.note, ""] if args.note else []),
             "## Held-out metrics", "",
             "Measured on scenes from seeds never used in training "
             f"(`python -m vit_core.scenes.evaluate {out.stem} --n {metrics.get('n')} --seed "
             f"{metrics.get('seed')}`):", "", "```json", json.dumps(metrics, indent=2), "```", "",
             "## Learning curve (held-out, during training)", "",
             ("| step | " + " | ".join(k for k in history[-1] if k != "step") + " |")
             if history else "",
             "|---" * (len(history[-1]) if history else 0) + "|" if history else ""]
    for h in history:
        lines.append("| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v)
                                       for v in h.values()) + " |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", choices=["classify", "caption"], required=True)
    ap.add_argument("--mask", choices=["prefix", "causal"], default="prefix")
    ap.add_argument("--out", required=True, help="where the .safetensors checkpoint goes")
    ap.add_argument("--state", help="resumable training state (default: runs/<out name>.pt)")
    ap.add_argument("--init", help="warm-start from this checkpoint (matching tensors only)")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--wd", type=float, default=0.05)
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--seg-weight", type=float, default=1.0)
    ap.add_argument("--seg-fg-weight", type=float, default=5.0,
                    help="loss weight of object cells vs background in the segmentation loss")
    ap.add_argument("--pos-sincos", type=float, default=0.0,
                    help="add 2D sine-cosine codes of this RMS to the patch positions at start")
    ap.add_argument("--patch", type=int, default=32)
    ap.add_argument("--dim", type=int, default=192)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--seg-upsample", type=int, default=8)
    ap.add_argument("--eval-every", type=int, default=500)
    add_run_options(ap)
    ap.add_argument("--snapshots", default="",
                    help="comma-separated steps whose weights are kept in float16 (0 = the start)")
    ap.add_argument("--note", default="", help="a paragraph for the model card (why this setup)")
    return ap.parse_args(argv)


def start(args) -> tuple[Path, Path]:
    """Threads and seed set; the output path and the resumable state's path (its folder made)."""
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    state_path = Path(args.state or Path("runs") / f"{out.stem}.pt")
    state_path.parent.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    return out, state_path


def adamw(decay: list, rest: list, args, **kw) -> torch.optim.AdamW:
    """AdamW with weight decay on `decay` only."""
    return torch.optim.AdamW([{"params": decay, "weight_decay": args.wd},
                              {"params": rest, "weight_decay": 0.0}], lr=args.lr, **kw)


def resume(state_path: Path, model, opt, log: dict) -> tuple[int, float, list, dict]:
    """(step, seconds, history, log) from the state file if there is one (weights_only=True: a
    state file can never run code), else from the start."""
    if not state_path.exists():
        return 0, 0.0, [], log
    st = torch.load(state_path, weights_only=True)
    model.load_state_dict(st["model"])
    opt.load_state_dict(st["opt"])
    print(f"resumed from {state_path} at step {st['step']}")
    return st["step"], st["seconds"], st["history"], st.get("log") or log


def scene_batches(args, step: int, config) -> DataLoader:
    """The training scenes from `step` on (a resumed run continues the stream)."""
    stream = FreshSceneStream(base_seed=args.seed, start=step * args.batch, mean=config.mean,
                              std=config.std)
    return DataLoader(stream, batch_size=args.batch, num_workers=args.workers,
                      persistent_workers=args.workers > 0)


def optimise(model, opt, loss: torch.Tensor) -> None:
    """One step: gradients of `loss`, clipped to norm 1, applied."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


def progress(step: int, args, n_seen: int, since: float) -> tuple[str, str]:
    """(the progress bar and step, the rate and the time left) after `n_seen` images since
    time `since`."""
    rate = n_seen / (time.time() - since)
    eta = (args.steps - step) * args.batch / max(rate, 1e-9) / 60
    bar = "#" * int(30 * step / args.steps)
    return f"[{bar:<30}] step {step}/{args.steps}", f"{rate:.0f} img/s, eta {eta:.1f} min"


def build_model(args) -> ViT:
    config = make_config(args)
    model = ViT(config)
    if args.init:
        print(f"warm start: {len(warm_start(model, args.init))} tensors from {args.init}")
    if args.pos_sincos:
        add_smooth_positions(model, args.pos_sincos)
    return model


class Snapshots:
    """The weights kept at the --snapshots steps, each once (a resumed run skips those taken)."""

    def __init__(self, model, out: Path, args, log: dict):
        self.model, self.out, self.args, self.log = model, out, args, log
        self.steps = sorted({int(x) for x in args.snapshots.split(",") if x.strip()})
        self.taken = {e["step"] for e in log["snapshots"]}

    def take_if_due(self, at: int) -> None:
        if at in self.steps and at not in self.taken:
            was_training = self.model.training
            self.log["snapshots"].append(save_snapshot(self.model, self.out, at, self.args))
            self.taken.add(at)
            self.model.train(was_training)


def log_every_10(step: int, args, log: dict, lr: float, parts_log: list) -> bool:
    """Append the mean of the parts since the last entry to the training log, every 10 steps
    and at the last; whether it did."""
    if not (step % 10 == 0 or step == args.steps):
        return False
    log["train"].append({"step": step, "lr": lr, **{
        k: sum(p[k] for p in parts_log) / len(parts_log) for k in parts_log[0]}})
    return True


def finish(model, out: Path, args, seconds: float, history: list, log: dict,
           snapshots: Snapshots) -> dict:
    """Evaluate the trained model, save it with its card (and training log); its metrics."""
    model.eval()
    if args.task == "classify":
        final = evaluate_classifier(model, args.final_eval_n, seed=0)
    else:
        final = evaluate_captioner(model, args.final_eval_n, seed=0, mask=args.mask)
    info = ModelInfo(name=out.stem, source="bundled", trained=True, metrics=final,
                     description=f"{args.task} model trained on generated scenes"
                     + (f" with the {args.mask} mask" if args.task == "caption" else ""))
    save_checkpoint(model, out, info)
    write_card(out, args, model.config, final, seconds, history)
    if snapshots.steps or log["train"]:
        write_training_log(out, args, log, history, seconds)
    print("final held-out:", json.dumps(final), f"| {seconds / 60:.1f} min of training")
    return final


def main(argv=None) -> dict:
    """Train, save the checkpoint and card; returns final metrics and this run's losses."""
    args = parse(argv)
    out, state_path = start(args)
    model = build_model(args)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "pos_embed" not in n]
    rest = [p for n, p in model.named_parameters() if p.dim() < 2 or "pos_embed" in n]
    opt = adamw(decay, rest, args)
    step, seconds, history, log = resume(state_path, model, opt, {"train": [], "snapshots": []})
    snapshots = Snapshots(model, out, args, log)
    snapshots.take_if_due(step)
    tok = Tokenizer(VOCAB)
    batches = scene_batches(args, step, model.config)
    gen = torch.Generator().manual_seed(args.seed * 1000 + step)
    model.train()
    t_log, n_log, losses, parts_log = time.time(), 0, [], []
    t_run, seconds_before = time.time(), seconds  # wall time: data, steps and evaluation
    for batch in batches:
        if step >= args.steps:
            break
        set_lr(opt, step, args)
        batch["pixels"] = augment(batch["pixels"], gen)
        loss, parts = loss_on(model, batch, args, tok)
        optimise(model, opt, loss)
        step += 1
        seconds = seconds_before + time.time() - t_run
        losses.append(loss.item())
        parts_log.append({"loss": loss.item(), **parts})
        n_log += args.batch
        if log_every_10(step, args, log, opt.param_groups[0]["lr"], parts_log):
            parts_log = []
            bar, rate = progress(step, args, n_log, t_log)
            print(f"{bar} loss {loss.item():.3f} "
                  + " ".join(f"{k} {v:.3f}" for k, v in parts.items()) + f" | {rate}", flush=True)
            t_log, n_log = time.time(), 0
        if step % args.eval_every == 0 or step == args.steps:
            held = evaluate_now(model, args)
            history.append({"step": step, **{k: v for k, v in held.items()
                                             if isinstance(v, float)}})
            print("held-out:", json.dumps(history[-1]), flush=True)
        snapshots.take_if_due(step)
        if step % args.save_every == 0 or step == args.steps:
            save_state(state_path, model, opt, step, seconds, history, log)
    final = finish(model, out, args, seconds, history, log, snapshots)
    return {"final": final, "losses": losses, "seconds": seconds}


if __name__ == "__main__":
    main()
