"""Train the bundled masked autoencoder on freshly generated scenes.

    python -m vit_core.scenes.train_mae --out vit_core/bundled/shapes-mae.safetensors

Every step hides 75 % of each scene's patches (new random noise per image), encodes the visible
ones and reconstructs the rest; the loss is the mean squared error on the hidden patches only
(vit_core/mae.py). AdamW with linear warmup and cosine decay (train.py's schedule), fresh scenes
every step, no augmentation (the target is the input itself). A resumable state is written to
--state every --save-every steps; rerunning the same command continues from it. A held-out
evaluation every --eval-every steps measures the loss on the hidden patches of the same scenes
under the same noise, beside the loss of predicting each hidden patch by its own mean colour.

Writes <out> (the encoder: load_model gives it, headless), <out stem>.mae/decoder.safetensors
(load_mae gives the whole MAE) and the model card <out stem>.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from ..config import ViTConfig
from ..io.base import ModelInfo
from ..io.mae_files import load_ours, save_mae
from ..mae import (
    MAE,
    MAEConfig,
    mean_colour_errors,
    normalise_patches,
    num_visible,
    pixel_targets,
    visible_colour_errors,
)
from ..model import ViT
from .train import (
    adamw,
    add_run_options,
    optimise,
    progress,
    resume,
    save_state,
    scene_batches,
    set_lr,
    start,
)
from .world import SceneDataset, heldout_seeds

EVAL_NOISE_SEED = 11  # the held-out masking: the same hidden patches at every evaluation


def build(args) -> MAE:
    encoder = ViT(ViTConfig(img_size=224, patch_size=args.patch, embed_dim=args.dim,
                            depth=args.depth, num_heads=args.heads, num_classes=0))
    mae = MAE(encoder, MAEConfig(decoder_dim=args.dec_dim, decoder_depth=args.dec_depth,
                                 decoder_heads=args.dec_heads, mask_ratio=args.mask_ratio,
                                 norm_pix_loss=bool(args.norm_pix_loss)))
    mae.init_fixed_positions()
    return mae


@torch.inference_mode()
def evaluate_mae(mae: MAE, n: int = 300, seed: int = 0, batch: int = 50,
                 workers: int = 0) -> dict:
    """Held-out masked-patch loss on `n` scenes (heldout_seeds(n, seed)), with the masking drawn
    from EVAL_NOISE_SEED, and the same loss for two flat guesses: each hidden patch filled with
    the mean colour of the visible patches (what the encoder could know), and with its own mean
    colour (which it cannot know; a stronger reference). Without norm_pix_loss only."""
    was = mae.training
    mae.eval()
    c = mae.encoder.config
    data = DataLoader(SceneDataset(heldout_seeds(n, seed), mean=c.mean, std=c.std),
                      batch_size=batch, num_workers=workers)
    gen = torch.Generator().manual_seed(EVAL_NOISE_SEED)
    sums = {"masked_loss": 0.0, "visible_colour_loss": 0.0, "own_colour_loss": 0.0}
    hidden = 0.0
    for b in data:
        x = b["pixels"]
        out = mae(x, noise=torch.rand(x.shape[0], c.num_patches, generator=gen))
        target = pixel_targets(x, c.patch_size)
        if mae.config.norm_pix_loss:
            target = normalise_patches(target)[0]
        for key, err in (("masked_loss", out.error),
                         ("visible_colour_loss", visible_colour_errors(target, out.mask)),
                         ("own_colour_loss", mean_colour_errors(target, c.in_chans))):
            sums[key] += (err * out.mask).sum().item()
        hidden += out.mask.sum().item()
    mae.train(was)
    m = {k: v / hidden for k, v in sums.items()}
    return {"n": n, "seed": seed, **m,
            "vs_visible_colour": m["masked_loss"] / m["visible_colour_loss"],
            "vs_own_colour": m["masked_loss"] / m["own_colour_loss"]}


def write_card(out: Path, args, mae: MAE, metrics: dict, seconds: float, history: list):
    c, m = mae.encoder.config, mae.config
    argv = sys.argv[1:]
    if "--note" in argv:  # the note is printed below, not inside the command
        i = argv.index("--note")
        argv = argv[:i] + argv[i + 2:]
    n_enc = sum(p.numel() for p in mae.encoder.parameters() if p.requires_grad)
    n_dec = sum(p.numel() for p in mae.decoder.parameters() if p.requires_grad)
    keep = num_visible(c.num_patches, m.mask_ratio)
    lines = [
        f"# {out.stem}", "",
        f"Trained by `python -m vit_core.scenes.train_mae {shlex.join(argv)}` on this repo's "
        f"generated scenes (`vit_core.scenes.world`), every step on fresh seeds.", "",
        "A masked autoencoder: `load_model(\"" + out.stem + "\")` gives its encoder (a headless "
        "ViT, every stage runs on it), `load_mae(\"" + out.stem + "\")` the whole MAE, whose "
        f"decoder is in `{out.stem}.mae/decoder.safetensors`.", "",
        "## Model", "",
        f"- encoder: input {c.img_size}×{c.img_size}, patch {c.patch_size} ({c.grid}×{c.grid} = "
        f"{c.num_patches} patches), D = {c.embed_dim}, {c.depth} layers, {c.num_heads} heads, "
        f"MLP {c.mlp_hidden}, CLS token, no head; {n_enc:,} trained parameters",
        f"- masking: {m.mask_ratio:.0%} of the patches hidden, so the encoder reads 1 + {keep} of "
        f"{1 + c.num_patches} tokens",
        f"- decoder: D_dec = {m.decoder_dim}, {m.decoder_depth} layers, {m.decoder_heads} heads; "
        f"{n_dec:,} trained parameters; predicts {c.patch_size}×{c.patch_size}×{c.in_chans} = "
        f"{c.patch_size ** 2 * c.in_chans} values per patch",
        "- positions: fixed 2D sine-cosine tables (encoder and decoder), as MAE",
        "- loss: mean squared error on the hidden patches only, on "
        + ("each patch's pixels normalised to mean 0 and variance 1 (norm_pix_loss)"
           if m.norm_pix_loss else "the normalised pixels ((x/255 − 0.5)/0.5)"), "",
        "## Training", "",
        f"- {args.steps} steps × batch {args.batch} = {args.steps * args.batch:,} scenes; AdamW "
        f"lr {args.lr} (warmup {args.warmup} steps, cosine), weight decay {args.wd}",
        f"- wall time on this machine (2 CPU cores): {seconds / 60:.1f} min", "",
        *([args.note, ""] if args.note else []),
        "## Held-out metrics", "",
        f"On {metrics['n']} held-out scenes (seed {metrics['seed']}), the same hidden patches "
        f"for every model (noise seed {EVAL_NOISE_SEED}). Two flat guesses for reference: "
        "`visible_colour_loss` fills each hidden patch with the mean colour of the visible "
        "patches (what the encoder could know); `own_colour_loss` with the hidden patch's own "
        "mean colour, which the MAE never sees.", "",
        "```json", json.dumps(metrics, indent=2), "```", "",
        "## Learning curve (held-out, during training)", "",
        "| step | masked_loss | visible_colour_loss | own_colour_loss |", "|---|---|---|---|",
        *(f"| {h['step']} | {h['masked_loss']:.4f} | {h['visible_colour_loss']:.4f} | "
          f"{h['own_colour_loss']:.4f} |" for h in history),
    ]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="where the encoder's .safetensors goes")
    ap.add_argument("--state", help="resumable training state (default: runs/<out name>.pt)")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--wd", type=float, default=0.05)
    ap.add_argument("--patch", type=int, default=32)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--dec-dim", type=int, default=64)
    ap.add_argument("--dec-depth", type=int, default=2)
    ap.add_argument("--dec-heads", type=int, default=4)
    ap.add_argument("--mask-ratio", type=float, default=0.75)
    ap.add_argument("--norm-pix-loss", type=int, choices=[0, 1], default=0,
                    help="1: the target is each patch normalised to mean 0, variance 1")
    ap.add_argument("--eval-every", type=int, default=250)
    add_run_options(ap)
    ap.add_argument("--note", default="", help="a paragraph for the model card (why this setup)")
    return ap.parse_args(argv)


def main(argv=None) -> dict:
    """Train, save the MAE and its card; returns the final held-out metrics and the losses."""
    args = parse(argv)
    out, state_path = start(args)
    mae = build(args)
    trained = [(n, p) for n, p in mae.named_parameters() if p.requires_grad]  # not the positions
    plain = {n for n, p in trained if p.dim() < 2 or n.endswith(("cls_token", "mask_token"))}
    decay = [p for n, p in trained if n not in plain]  # weight matrices decay; the rest does not
    rest = [p for n, p in trained if n in plain]
    opt = adamw(decay, rest, args, betas=(0.9, 0.95))  # MAE's betas
    step, seconds, history, log = resume(state_path, mae, opt, {"train": []})
    c = mae.encoder.config
    batches = scene_batches(args, step, c)
    gen = torch.Generator().manual_seed(args.seed * 1000 + step)  # the masking noise
    mae.train()
    t_log, n_log, losses = time.time(), 0, []
    t_run, seconds_before = time.time(), seconds
    for batch in batches:
        if step >= args.steps:
            break
        set_lr(opt, step, args)
        x = batch["pixels"]
        loss = mae(x, noise=torch.rand(x.shape[0], c.num_patches, generator=gen)).loss
        optimise(mae, opt, loss)
        step += 1
        seconds = seconds_before + time.time() - t_run
        losses.append(loss.item())
        n_log += args.batch
        if step % 10 == 0 or step == args.steps:
            recent = losses[-10:]
            log["train"].append({"step": step, "lr": opt.param_groups[0]["lr"],
                                 "loss": sum(recent) / len(recent)})
            bar, rate = progress(step, args, n_log, t_log)
            print(f"{bar} loss {loss.item():.4f} | {rate}", flush=True)
            t_log, n_log = time.time(), 0
        if step % args.eval_every == 0 or step == args.steps:
            history.append({"step": step, **{k: v for k, v in
                                             evaluate_mae(mae, args.eval_n, seed=7).items()
                                             if isinstance(v, float)}})
            print("held-out:", json.dumps(history[-1]), flush=True)
        if step % args.save_every == 0 or step == args.steps:
            save_state(state_path, mae, opt, step, seconds, history, log)
    mae.eval()
    final = evaluate_mae(mae, args.final_eval_n, seed=0)
    info = ModelInfo(name=out.stem, source="bundled", trained=True, metrics=final,
                     description="masked autoencoder trained on generated scenes (its encoder)")
    save_mae(mae, out, info)
    load_ours(out)  # what the app loads: both files, strictly
    write_card(out, args, mae, final, seconds, history)
    print("final held-out:", json.dumps(final), f"| {seconds / 60:.1f} min of training")
    return {"final": final, "losses": losses, "seconds": seconds}


if __name__ == "__main__":
    main()
