"""The logit lens: the classifier's answer read off after every block."""

from __future__ import annotations

import torch


@torch.inference_mode()
def logit_lens(model, trace) -> torch.Tensor:
    """The classifier's logits read off after every block (the "logit lens").

    Each layer's CLS vector goes through the final LayerNorm and the class head, as if the
    network stopped there. Row 0 is the embedding, row l+1 the output of block l; the last row
    equals the model's real logits.

    Returns:
        [L + 1, K] logits.
    """
    c = model.config
    if not c.num_classes or not c.class_token:
        raise ValueError("The logit lens here reads the CLS token of a classifier.")
    rows = [trace["embed"][0]] + [trace[f"blocks.{i}.resid_post"][0] for i in range(c.depth)]
    return model.head(model.norm(torch.stack(rows)))
