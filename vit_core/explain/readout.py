"""What a model's head reads, and what its output says: the class head's input for each ViT
family, how sure a distribution is, the logit lens told in numbers, and what a model without a
class head has to show instead (its final CLS token)."""

from __future__ import annotations

import math

import torch

from ..config import ViTConfig
from .attention import allowed_from_mask


def readout(c: ViTConfig) -> str:
    """How this model's class head turns the final tokens into K logits, as one sentence."""
    K = c.num_classes
    if c.global_pool == "avg":
        return (f"The {c.num_patches} final patch tokens"
                + ("" if c.fc_norm else ", after the final LayerNorm,") + " are averaged"
                + (" (CLS is left out)" if c.class_token else "")
                + (", the mean goes through one more LayerNorm (fc_norm)," if c.fc_norm else "")
                + f" and one linear layer gives one score (logit) per class, {K} in all.")
    if c.dist_token:
        return (f"The final CLS token and the final DIST token (after the final LayerNorm) each "
                f"go through their own linear layer, and the two sets of {K} scores (logits) "
                f"are averaged.")
    return (f"Only the final CLS token is used: after the final LayerNorm, one linear layer "
            f"gives one score (logit) per class, {K} in all.")


def readout_path(c: ViTConfig) -> str:
    """The path from the residual stream to the logits, short: for the logit lens."""
    if c.global_pool == "avg":
        return ("the mean of the patch tokens → fc_norm → class head" if c.fc_norm else
                "final LayerNorm → the mean of the patch tokens → class head")
    if c.dist_token:
        return "final LayerNorm → CLS and DIST through their two heads, averaged"
    return "final LayerNorm → CLS token → class head"


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


CONFIDENT = 0.75  # "confident": at least this much on the top class ...
CLEAR_LEAD = 5.0  # ... and at least this many times the runner-up's probability


def distribution_note(probs: torch.Tensor, names: list[str], temperature: float,
                      image_blind: bool = False) -> str:
    """One sentence on how sure the shown distribution is, from its top probability, the
    runner-up's, and the entropy (against the uniform 1/K and log K).

    Args:
        image_blind: the distribution cannot depend on the image (see `image_blind`): then it
            is not told as the model's view of this picture.
    """
    p = torch.as_tensor(probs, dtype=torch.float64)
    K = p.numel()
    order = p.argsort(descending=True)
    top = int(order[0])
    p1 = float(p[top])
    h, hmax = entropy(p), math.log(K)
    text = (f"At T = {temperature:g} the top class, {names[top]}, has {p1:.1%}; the "
            f"entropy is {h:.2f} nats of a possible {hmax:.2f}")
    if image_blind:
        return text + ": the same for every picture, so it says nothing about this one."
    if near_uniform(p):
        return text + f", so the distribution is close to uniform (1/{K} = {1 / K:.1%} each)."
    if K == 1:
        return text + "."
    second = int(order[1])
    p2 = float(p[second])
    runner = f"the runner-up, {names[second]}, has {p2:.1%}"
    if p1 >= CONFIDENT and p1 >= CLEAR_LEAD * p2:
        return text + f": the model is confident ({runner})."
    if p1 >= 0.5:
        return text + f": the model leans to {names[top]} but is not sure: {runner}."
    n = min(3, K)
    return (text + f": no class gets half the probability; {runner}, and the top {n} together "
            f"hold {float(p[order[:n]].sum()):.1%}.")


def reads_only_prefix(config: ViTConfig) -> bool:
    """True when the class logits are read from the prefix tokens (CLS, DIST) alone."""
    return config.class_token and config.global_pool == "token" and config.num_classes > 0


def prefix_sees_no_patch(config: ViTConfig, mask: torch.Tensor) -> bool:
    """True when, under `mask` (the additive [S, S] mask a trace holds), no prefix token (CLS,
    DIST) may attend to a patch, so no patch reaches them in any block."""
    pre = config.num_prefix_tokens
    return bool(pre) and not bool(allowed_from_mask(mask)[:pre, pre:pre + config.num_patches]
                                  .any())


def image_blind(config: ViTConfig, mask: torch.Tensor) -> bool:
    """True when the class logits cannot depend on the image under `mask`: the head reads only
    CLS (and DIST), and no patch reaches them. (The prefix tokens start as learned vectors plus
    their positions: the same for every image.)"""
    return reads_only_prefix(config) and prefix_sees_no_patch(config, mask)


def blind_reason(config: ViTConfig, mask_kind: str) -> str:
    """Why `image_blind` holds, as a sentence (for a causal-style mask)."""
    who = ("CLS (token 0) may attend only to itself"
           + (", and DIST only to CLS and itself" if config.dist_token else ""))
    reads, them = ("CLS and DIST", "them") if config.dist_token else ("CLS", "it")
    return (f"Under the {mask_kind} mask {who}: no patch ever reaches {them}, and the class head "
            f"reads only {reads}, so this prediction is the same for every picture.")


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


def lens_note(lens_probs: torch.Tensor, names: list[str]) -> str:
    """The logit lens told in numbers: the first read-out, any other class that led on the way
    (and how high it got), where the final answer takes the lead for good, and how sure it ends.

    Args:
        lens_probs: [L + 1, K] probabilities; row 0 read after the embedding, row l + 1 after
            block l.
    """
    P = torch.as_tensor(lens_probs, dtype=torch.float64)
    K = P.shape[1]
    where = ["the embedding"] + [f"block {i}" for i in range(P.shape[0] - 1)]
    if all(near_uniform(r) for r in P):
        return (f"Every read-out is close to uniform: no class gets more than "
                f"{float(P.max()):.1%} at any depth (1/{K} = {1 / K:.1%}).")
    first = int(P[0].argmax())
    final = int(P[-1].argmax())
    top = P.argmax(1)
    lead = len(top) - 1
    while lead > 0 and int(top[lead - 1]) == final:
        lead -= 1
    h0 = entropy(P[0])
    text = (f"Read after the embedding the top guess is {names[first]} at "
            f"{float(P[0, first]):.0%} (entropy {h0:.2f} of a possible {math.log(K):.2f} nats"
            + (", close to uniform)" if near_uniform(P[0]) else ")"))
    if lead == 0:
        return text + (f" and it stays on top at every depth, ending at {float(P[-1, final]):.0%}.")
    rivals = [k for k in lens_leaders(P[:lead]) if k != final]
    if rivals:  # every class on top before the final answer took over, where and how high
        said = []
        for k in rivals[:RIVALS_NAMED]:
            on_top = [i for i in range(lead) if int(top[i]) == k]
            peak = max(float(P[i, k]) for i in on_top)
            said.append(f"{names[k]} is on top after {_depths(on_top)} "
                        + (f"({peak:.0%})" if len(on_top) == 1 else f"(up to {peak:.0%})"))
        more = len(rivals) - RIVALS_NAMED
        text += ("; on the way " + ", then ".join(said)
                 + (f", and {more} more class{'es' if more > 1 else ''}" if more > 0 else ""))
    return text + (f"; {names[final]} leads from {where[lead]} on and ends at "
                   f"{float(P[-1, final]):.0%}.")


RIVALS_NAMED = 3  # classes on top on the way that the lens note names; the rest it counts


def _depths(rows: list[int]) -> str:
    """Lens rows (0: after the embedding, l + 1: after block l) as words: runs of consecutive
    blocks joined ("the embedding", "block 1", "blocks 2–4", "the embedding to block 1")."""
    runs, start = [], rows[0]
    for a, b in zip(rows, [*rows[1:], None], strict=True):
        if b != a + 1:
            runs.append((start, a))
            start = b
    out = []
    for a, b in runs:
        if a == b:
            out.append("the embedding" if a == 0 else f"block {a - 1}")
        else:
            out.append(f"the embedding to block {b - 1}" if a == 0 else f"blocks {a - 1}–{b - 1}")
    return ", ".join(out)


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
        dict(token, vector [D], norm, top_dims [(index, value)], similarity [N], nearest
        [(patch, cosine)])."""
    c = trace.config
    name, v = final_token(trace)
    pre = c.num_prefix_tokens
    patches = trace["ln_final"][pre:pre + c.num_patches].double()
    sim = torch.nn.functional.cosine_similarity(patches, v.double()[None], dim=-1)
    dims = v.abs().argsort(descending=True)[:k]
    near = sim.argsort(descending=True)[:k]
    return {"token": name, "vector": v, "norm": float(v.double().norm()),
            "top_dims": [(int(i), float(v[i])) for i in dims], "similarity": sim.float(),
            "nearest": [(int(i), float(sim[i])) for i in near]}
