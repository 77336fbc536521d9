"""What a model's head reads, and what its output says, in numbers (the Logits stage words them,
ui/stages/logits/): whether the answer can see the image, how sure a distribution is, the logit
lens's leaders, and what a model without a class head has to show instead (its final CLS
token)."""

from __future__ import annotations

import math

import torch

from ..config import ViTConfig
from .attention import allowed_from_mask


def entropy(probs: torch.Tensor) -> float:
    """Shannon entropy of one distribution, in nats (0 log 0 = 0)."""
    p = torch.as_tensor(probs, dtype=torch.float64)
    p = p[p > 0]
    return float(-(p * p.log()).sum())


UNIFORM_ENTROPY = 0.9  # "close to uniform": the entropy at least this share of log K ...
UNIFORM_MOVED = 0.15  # ... and at most this share of the probability away from 1/K a class


def near_uniform(probs: torch.Tensor) -> bool:
    """True when the entropy is at least UNIFORM_ENTROPY of its maximum, log K, and making every
    class 1/K would move at most UNIFORM_MOVED of the probability (the total variation distance
    from uniform). Entropy alone calls 40 % on one of five classes (twice 1/K) close to uniform."""
    p = torch.as_tensor(probs, dtype=torch.float64).flatten()
    K = p.numel()
    moved = 0.5 * float((p - 1 / K).abs().sum())
    return K > 1 and entropy(p) >= UNIFORM_ENTROPY * math.log(K) and moved <= UNIFORM_MOVED


def distribution(probs: torch.Tensor, n: int = 3) -> dict:
    """How sure one distribution over K classes is, in numbers: its `n` largest probabilities,
    its entropy against the maximum log K, and whether it is `near_uniform`.

    Returns:
        dict(K, leaders [(class, probability)] the n largest, best first, entropy (nats),
        max_entropy (log K), near_uniform, together (what the leaders hold together))."""
    p = torch.as_tensor(probs, dtype=torch.float64).flatten()
    K = p.numel()
    order = p.argsort(descending=True)[:min(n, K)]
    leaders = [(int(k), float(p[k])) for k in order]
    return {"K": K, "leaders": leaders, "entropy": entropy(p), "max_entropy": math.log(K),
            "near_uniform": near_uniform(p), "together": sum(q for _, q in leaders)}


def reads_only_prefix(config: ViTConfig) -> bool:
    """True when the class logits are read from the prefix tokens (CLS, DIST) alone."""
    return config.class_token and config.global_pool == "token" and config.num_classes > 0


def prefix_sees_no_patch(config: ViTConfig, mask: torch.Tensor) -> bool:
    """True when, under `mask` (the additive [S, S] mask a trace holds, or [L, S, S] per
    block), no prefix token (CLS, DIST) may attend to a patch, so no patch reaches them in any
    block."""
    pre = config.num_prefix_tokens
    return bool(pre) and not bool(
        allowed_from_mask(mask)[..., :pre, pre:pre + config.num_patches].any())


def image_blind(config: ViTConfig, mask: torch.Tensor) -> bool:
    """True when the class logits cannot depend on the image under `mask`: the head reads only
    CLS (and DIST), and no patch reaches them. (The prefix tokens start as learned vectors plus
    their positions: the same for every image.)"""
    return reads_only_prefix(config) and prefix_sees_no_patch(config, mask)


def lens_leaders(lens_probs: torch.Tensor) -> list[int]:
    """The class on top at each depth of the lens, each once, in order of first appearance."""
    return list(dict.fromkeys(int(k) for k in torch.as_tensor(lens_probs).argmax(1)))


def lens_lines(probs, lens_probs, most: int = 10) -> tuple[list[int], list[int]]:
    """Which classes the logit-lens chart draws: the (up to) 3 ranked highest at the end, then
    the classes on top at some depth, the highest-peaking first, up to `most` lines in all (10:
    plotly's colour cycle, beyond which two lines would share a colour).

    Returns:
        (drawn classes, classes on top at some depth that are not drawn)."""
    P = torch.as_tensor(lens_probs, dtype=torch.float64)
    final = torch.as_tensor(probs, dtype=torch.float64).argsort(descending=True)[:3].tolist()
    leaders = sorted(lens_leaders(P), key=lambda k: -float(P[:, k].max()))
    drawn = list(dict.fromkeys([*final, *leaders]))[:max(most, len(final))]
    return drawn, [k for k in lens_leaders(P) if k not in drawn]


def lens_summary(lens_probs: torch.Tensor) -> dict:
    """The logit lens in numbers: the first read-out, every class on top before the final answer
    took over for good (where and how high), where that was, and how sure it ends.

    Args:
        lens_probs: [L + 1, K] probabilities; row 0 read after the embedding, row l + 1 after
            block l.

    Returns:
        dict(K, rows (L + 1), all_near_uniform (every row `near_uniform`), p_max (the largest
        probability anywhere), p_max_even (p_max in multiples of 1/K), max_entropy (log K),
        first (the top class after the embedding), p_first, first_entropy,
        first_near_uniform, final (the top class at the end), p_final,
        lead (the first row from which `final` is on top at every row after), rivals [(class,
        rows on top before `lead`, its highest probability on those rows)] in order of first
        appearance, first_on_top {class: first row where it is on top} for every class on top
        somewhere)."""
    P = torch.as_tensor(lens_probs, dtype=torch.float64)
    top = [int(k) for k in P.argmax(1)]
    final = top[-1]
    lead = len(top) - 1
    while lead > 0 and top[lead - 1] == final:
        lead -= 1
    rivals = []
    for k in lens_leaders(P[:lead]) if lead else []:
        if k == final:
            continue
        on_top = [i for i in range(lead) if top[i] == k]
        rivals.append((k, on_top, max(float(P[i, k]) for i in on_top)))
    first = top[0]
    return {"K": P.shape[1], "rows": P.shape[0],
            "all_near_uniform": all(near_uniform(r) for r in P), "p_max": float(P.max()),
            "p_max_even": float(P.max()) * P.shape[1], "max_entropy": math.log(P.shape[1]),
            "first": first, "p_first": float(P[0, first]), "first_entropy": entropy(P[0]),
            "first_near_uniform": near_uniform(P[0]), "final": final,
            "p_final": float(P[-1, final]), "lead": lead, "rivals": rivals,
            "first_on_top": {k: top.index(k) for k in dict.fromkeys(top)}}


def final_token(trace) -> tuple[str, torch.Tensor]:
    """For a model without a class head: the final token that stands for the whole image (CLS
    after the final norm, or the mean of the patch tokens when there is no CLS)."""
    c = trace.config
    x = trace["ln_final"]
    if c.class_token:
        return "CLS", x[0]
    pre = c.num_prefix_tokens
    return "mean patch", x[pre:pre + c.num_patches].mean(0)


def headless_summary(trace, k: int = 3) -> dict:
    """What a headless model has instead of logits: its final CLS (or mean patch) vector, its
    norm, its largest dimensions, and the patches whose final vectors point most like it.

    Returns:
        dict(token, vector [D], norm, top_dims [(index, value)], similarity [N], its range
        sim_lo and sim_hi, nearest [(patch, cosine)])."""
    c = trace.config
    name, v = final_token(trace)
    pre = c.num_prefix_tokens
    patches = trace["ln_final"][pre:pre + c.num_patches].double()
    sim = torch.nn.functional.cosine_similarity(patches, v.double()[None], dim=-1)
    dims = v.abs().argsort(descending=True)[:k]
    near = sim.argsort(descending=True)[:k]
    return {"token": name, "vector": v, "norm": float(v.double().norm()),
            "top_dims": [(int(i), float(v[i])) for i in dims], "similarity": sim.float(),
            "sim_lo": float(sim.float().min()), "sim_hi": float(sim.float().max()),
            "nearest": [(int(i), float(sim[i])) for i in near]}
