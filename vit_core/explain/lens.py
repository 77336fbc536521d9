"""The logit lens: the classifier's answer read off after every block."""

from __future__ import annotations

import torch


@torch.inference_mode()
def logit_lens(model, trace) -> torch.Tensor:
    """The classifier's logits read off after every block (the "logit lens").

    The residual stream after each block goes through the model's own final LayerNorm, pooling
    (CLS, CLS + DIST, or the mean of the patch tokens with fc_norm) and class head, as if the
    network stopped there. Row 0 is the embedding, row l+1 the output of block l; the last row
    equals the model's logits.

    Returns:
        [L + 1, K] logits.
    """
    c = model.config
    if not c.num_classes:
        raise ValueError("This model has no class head, so there are no class logits to read.")
    rows = [trace["embed"]] + [trace[f"blocks.{i}.resid_post"] for i in range(c.depth)]
    return model.classify(model.norm(torch.stack(rows)))  # [L+1, S, D] -> [L+1, K]


def probabilities(logits: torch.Tensor) -> torch.Tensor:
    """A classifier's logits [K] as probabilities (the softmax), in their own dtype."""
    return logits.softmax(-1)


def top_class(logits: torch.Tensor) -> tuple[int, float]:
    """The most likely class of logits [K] and its probability, the softmax in float64."""
    probs = logits.double().softmax(-1)
    k = int(probs.argmax())
    return k, float(probs[k])
