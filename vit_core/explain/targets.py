"""What an attribution explains: a class of a classifier, or one word of a captioner's caption.

    t = predicted(model, pixels)                 # the top class, or the caption's first word
    t = answered(model, logits=trace.logits)     # the same, read from a pass already made
    s = score(model, pixels, t)                  # [B]: the class's logit / the word's log-prob
    p = probability(model, pixels, t)            # [B]: softmax(logits)[class] / P(word | ...)

A word is scored as it was generated: the model is fed [SOS] and the words before it, and the
last position's distribution is read (teacher forcing on the caption, one pass per word), so a
mask that lets text see later text cannot leak the word itself. `score` is differentiable (call
it outside torch.no_grad) and takes written hooks, so the attribution methods, the faithfulness
curves and activation patching all read one number the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..hooked import run_with_hooks
from .generation import greedy_ids, tokenizer_for


@dataclass(frozen=True)
class Target:
    """A class (`index` = the class) or a word (`ids` = [SOS] + the caption's tokens, and
    `index` = the word's place in `ids`, 1 for the first word). `label` names it for people."""

    index: int
    ids: tuple[int, ...] | None = None
    label: str = ""

    @property
    def is_word(self) -> bool:
        return self.ids is not None

    def __post_init__(self):
        if self.ids is not None and not 1 <= self.index < len(self.ids):
            raise ValueError(f"Word {self.index} is not in a caption of {len(self.ids) - 1} "
                             f"words (the first word is 1).")


def class_target(model, index: int) -> Target:
    """The classifier's class `index`, named by the model's class names when it has them."""
    K = model.config.num_classes
    if not K:
        raise ValueError("This model has no classes to explain.")
    if not 0 <= index < K:
        raise ValueError(f"Class {index} is not one of this model's {K} classes (0 to {K - 1}).")
    names = model.config.class_names or ()
    return Target(index, label=names[index] if index < len(names) else f"class {index}")


def word_targets(model, pixels: torch.Tensor, ids=None, mask=None) -> list[Target]:
    """One target per word of `ids` ([SOS] first), or of the greedy caption of `pixels` [1, C,
    H, W] when `ids` is None; [EOS] and what follows it are left out."""
    tok = tokenizer_for(model)
    if ids is None:
        ids = [tok.sos_id] + [int(i) for i in greedy_ids(model, _batch(pixels), mask=mask)[0]]
    ids = tuple(int(i) for i in ids)
    end = ids.index(tok.eos_id) if tok.eos_id in ids else len(ids)
    return [Target(t, ids=ids, label=tok.vocab[ids[t]]) for t in range(1, end)]


def predicted(model, pixels: torch.Tensor, mask=None) -> Target:
    """What the model answers for one image: its top class, or its caption's first word."""
    if model.config.has_text:
        return answered(model, caption=greedy_ids(model, _batch(pixels), mask=mask)[0])
    if not model.config.num_classes:
        return answered(model)  # raises: nothing to explain
    with torch.no_grad():
        return answered(model, logits=model(_batch(pixels), mask=mask)[0])


def answered(model, logits=None, caption=None) -> Target:
    """`predicted`, read from a pass already made: the top class of a classifier's `logits`
    ([K] or [1, K]), or the first word of a captioner's `caption` (the ids after [SOS], as
    greedy_ids or generate give them)."""
    if model.config.has_text:
        ids = [tokenizer_for(model).sos_id, *(int(i) for i in caption)]
        words = word_targets(model, None, ids=ids)
        if not words:
            raise ValueError("The caption is empty: there is no word to explain.")
        return words[0]
    if not model.config.num_classes:
        raise ValueError("This model has no classes or words to explain (a headless encoder).")
    return class_target(model, int(torch.as_tensor(logits).reshape(-1).argmax()))


def logits_for(model, pixels: torch.Tensor, target: Target, hooks=None, mask=None):
    """The distribution the target is read from, [B, K] (classes) or [B, V] (the next word)."""
    pixels = _batch(pixels)
    if not target.is_word:
        return run_with_hooks(model, pixels, hooks or {}, mask=mask)
    fed = torch.tensor(target.ids[:target.index]).expand(pixels.shape[0], -1)
    return run_with_hooks(model, pixels, hooks or {}, text_ids=fed, mask=mask)[:, -1]


def score(model, pixels: torch.Tensor, target: Target, hooks=None, mask=None) -> torch.Tensor:
    """[B]: the class's logit, or the word's log-probability, for each image of `pixels`."""
    logits = logits_for(model, pixels, target, hooks, mask)
    if target.is_word:
        return logits.log_softmax(-1)[:, target.ids[target.index]]
    return logits[:, target.index]


def probability(model, pixels: torch.Tensor, target: Target, hooks=None,
                mask=None) -> torch.Tensor:
    """[B]: softmax(logits)[class], or P(word | image, the words before it)."""
    logits = logits_for(model, pixels, target, hooks, mask)
    chosen = target.ids[target.index] if target.is_word else target.index
    return logits.softmax(-1)[:, chosen]


def _batch(pixels: torch.Tensor) -> torch.Tensor:
    return pixels.unsqueeze(0) if pixels.dim() == 3 else pixels
