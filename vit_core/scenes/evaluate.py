"""Held-out metrics, printed as JSON by
`python -m vit_core.scenes.evaluate MODEL --n 1000 --seed S`.

Scenes come from `heldout_seeds(n, S)`, which never overlap the seeds training draws from.
Classifier: top-1, segmentation mIoU, and how much last-layer CLS attention lands on the object.
Captioner: exact-caption match of greedy generation, and teacher-forced token accuracy.
With --confidence JSON instead: how sure the model is on those scenes (`confidence`), stored
with the bundled model for the app's overview.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from ..explain.generation import greedy_ids, tokenizer_for
from ..explain.segmentation import class_map
from ..hooks import capture
from ..io.checkpoints import load_model
from .world import SceneDataset, heldout_seeds


def caption_batch(tok, captions: list[str], max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher forcing: inputs [SOS] w1..wn and targets w1..wn [EOS], padded with [PAD]."""
    rows = [tok.encode(c, max_len=max_len).ids for c in captions]
    T = max(len(r) for r in rows)
    inputs = torch.full((len(rows), T), tok.pad_id)
    targets = torch.full((len(rows), T), tok.pad_id)
    for i, r in enumerate(rows):
        inputs[i, : len(r)] = torch.tensor(r)
        targets[i, : len(r)] = torch.tensor(r[1:] + [tok.eos_id])
    return inputs, targets


def loader(n: int, seed: int, config, batch: int = 50, workers: int = 1):
    ds = SceneDataset(heldout_seeds(n, seed), mean=config.mean, std=config.std)
    return DataLoader(ds, batch_size=batch, num_workers=workers)


def object_attention_ratio(pattern_cls: torch.Tensor, mask: torch.Tensor,
                           grid: int) -> torch.Tensor:
    """Share of CLS attention on object pixels divided by the object's share of the image.

    Args:
        pattern_cls: [B, N] last-layer CLS -> patch attention, mean over heads.
        mask: [B, H, W] pixel classes (0 = background).
    """
    B, H, _ = mask.shape
    P = H // grid
    cover = (mask > 0).float().reshape(B, grid, P, grid, P).mean((2, 4)).reshape(B, -1)  # [B, N]
    on_object = (pattern_cls * cover).sum(1) / pattern_cls.sum(1)
    return on_object / cover.mean(1)


@torch.inference_mode()
def evaluate_classifier(model, n: int = 1000, seed: int = 0, workers: int = 1) -> dict:
    c = model.config
    classes = max(c.seg_classes, 1)
    inter, union = torch.zeros(classes), torch.zeros(classes)
    correct, ratios = 0, []
    for b in loader(n, seed, c, workers=workers):
        with capture() as store:
            logits = model(b["pixels"])
        correct += int((logits.argmax(-1) == b["label"]).sum())
        last = store[f"blocks.{c.depth - 1}.attn.pattern"]  # (B, H, S, S)
        if c.class_token:
            cls = last[:, :, 0, c.num_prefix_tokens:].mean(1)
            ratios.append(object_attention_ratio(cls, b["mask"], c.grid))
        if model.seg_head is not None:
            pred = torch.stack([class_map(s, c.grid, c.img_size) for s in store["seg_logits"]])
            for k in range(classes):
                p, t = pred == k, b["mask"] == k
                inter[k] += (p & t).sum()
                union[k] += (p | t).sum()
    out = {"n": n, "seed": seed, "top1": correct / n}
    if model.seg_head is not None:
        present = union > 0
        out["miou"] = float((inter[present] / union[present]).mean())
    if ratios:
        out["cls_object_attention_ratio_median"] = float(torch.cat(ratios).median())
    return out


@torch.inference_mode()
def evaluate_captioner(model, n: int = 1000, seed: int = 0, mask=None, workers: int = 1) -> dict:
    tok = tokenizer_for(model)
    c = model.config
    exact, tok_right, tok_total = 0, 0, 0
    for b in loader(n, seed, c, workers=workers):
        inputs, targets = caption_batch(tok, b["caption"], c.max_text_len)
        pred = model(b["pixels"], inputs, mask=mask).argmax(-1)
        real = targets != tok.pad_id
        tok_right += int((pred == targets)[real].sum())
        tok_total += int(real.sum())
        for ids, caption in zip(greedy_ids(model, b["pixels"], mask=mask), b["caption"],
                                strict=True):
            exact += tok.decode(ids) == caption
    return {"n": n, "seed": seed, "mask": mask or c.default_mask, "exact_match": exact / n,
            "token_accuracy": tok_right / tok_total}


@torch.inference_mode()
def confidence(model, n: int = 64, seed: int = 7, mask=None) -> torch.Tensor:
    """How sure the model is on held-out scenes of its own world: [n] probabilities.

    A classifier: the top class's probability. A captioner: the mean probability of the words
    of its greedy caption ([EOS] included), each read where it was chosen.
    """
    c = model.config
    probs = []
    for b in loader(n, seed, c, batch=min(n, 64)):
        if not c.has_text:
            probs.append(model(b["pixels"]).softmax(-1).amax(-1))
            continue
        tok = tokenizer_for(model)
        ids = greedy_ids(model, b["pixels"], mask=mask)  # [B, steps] after [SOS]
        inputs = torch.cat([torch.full((len(ids), 1), tok.sos_id), ids[:, :-1]], 1)
        p = model(b["pixels"], inputs, mask=mask).softmax(-1)  # [B, steps, V]
        chosen = p.gather(-1, ids[..., None])[..., 0]
        ended = (ids == tok.eos_id).long().cumsum(1)
        real = (ended == 0) | ((ended == 1) & (ids == tok.eos_id))  # words up to [EOS]
        probs.append((chosen * real).sum(1) / real.sum(1))
    return torch.cat(probs)


def evaluate(model, n: int = 1000, seed: int = 0, workers: int = 1) -> dict:
    if model.config.has_text:
        return evaluate_captioner(model, n, seed, workers=workers)
    return evaluate_classifier(model, n, seed, workers=workers)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("model", help="a bundled model name or a .safetensors path")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--confidence", metavar="JSON",
                    help="instead: write how sure the model is on --n held-out scenes "
                         "(quantiles of confidence()) to this file, for the app's overview")
    args = ap.parse_args(argv)
    t0 = time.time()
    if args.confidence:
        probs = confidence(load_model(args.model), args.n, args.seed)
        qs = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9)
        out = {"n": args.n, "seed": args.seed, "mean": round(float(probs.mean()), 4),
               "quantiles": {str(q): round(float(probs.quantile(q)), 4) for q in qs}}
        Path(args.confidence).write_text(json.dumps(out, indent=2) + "\n")
        print(json.dumps(out, indent=2))
        return
    out = evaluate(load_model(args.model), args.n, args.seed, args.workers)
    out["model"], out["seconds"] = args.model, round(time.time() - t0, 1)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
