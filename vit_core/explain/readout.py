"""What a model's head reads, and what its output says: the class head's input for each ViT
family, how sure a distribution is, the logit lens told in numbers, and what a model without a
class head has to show instead (its final CLS token)."""

from __future__ import annotations

import math

import torch

from ..config import ViTConfig


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


def near_uniform(probs: torch.Tensor) -> bool:
    """True when the entropy is at least 90 % of its maximum, log K."""
    K = torch.as_tensor(probs).numel()
    return K > 1 and entropy(probs) >= 0.9 * math.log(K)


def distribution_note(probs: torch.Tensor, names: list[str], temperature: float) -> str:
    """One sentence on how sure the shown distribution is, from its top probability and
    entropy (against the uniform 1/K and log K)."""
    p = torch.as_tensor(probs, dtype=torch.float64)
    K = p.numel()
    top = int(p.argmax())
    h, hmax = entropy(p), math.log(K)
    text = (f"At T = {temperature:g} the top class, {names[top]}, has {float(p[top]):.1%}; the "
            f"entropy is {h:.2f} nats of a possible {hmax:.2f}")
    if near_uniform(p):
        return text + f", so the distribution is close to uniform (1/{K} = {1 / K:.1%} each)."
    if float(p[top]) >= 0.5:
        return text + ": the model is confident."
    return text + ": the model hedges between a few classes."


def lens_leaders(lens_probs: torch.Tensor) -> list[int]:
    """The class on top at each depth of the lens, each once, in order of first appearance."""
    return list(dict.fromkeys(int(k) for k in torch.as_tensor(lens_probs).argmax(1)))


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
    if rivals:  # the strongest class that led before the final answer took over
        best = max(rivals, key=lambda k: float(P[:lead, k].max()))
        at = int(P[:lead, best].argmax())
        text += (f"; {names[best]} leads on the way, up to {float(P[at, best]):.0%} after "
                 f"{where[at]}")
    return text + (f"; {names[final]} leads from {where[lead]} on and ends at "
                   f"{float(P[-1, final]):.0%}.")


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
