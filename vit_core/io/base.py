"""What every reader shares, importing nothing else of the package (so nothing imports in a
circle): the error types a user may see, ModelInfo, and the strict state-dict copy that names every
problem."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


class ImageError(ValueError):
    """An uploaded image cannot be used; the message is one sentence for the user."""


class CheckpointError(ValueError):
    """A model file could not be used; the message names what is wrong."""


@dataclass
class ModelInfo:
    name: str
    source: str  # "preset" | "bundled" | a file path
    # False: random weights from a fixed seed (presets). True: the bundled models (trained by
    # this repo), or weights read from a file, the Hub or timm, which are taken as given (whether
    # those were trained is not known: the model card names where they come from instead)
    trained: bool
    description: str = ""
    metrics: dict = field(default_factory=dict)  # held-out metrics measured after training
    card: str = ""  # the model card (Markdown), when one ships next to the weights


def few(keys: list[str], n: int = 5) -> str:
    """The first n keys, and how many more there are."""
    return ", ".join(keys[:n]) + (f" … (+{len(keys) - n} more)" if len(keys) > n else "")


def load_state_dict_strict(model: torch.nn.Module, state: dict, what: str = "checkpoint"):
    """Copy `state` into `model`, naming every missing or unexpected key and any shape mismatch."""
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    wrong = [f"{k}: file {tuple(state[k].shape)} vs model {tuple(own[k].shape)}"
             for k in own if k in state and state[k].shape != own[k].shape]
    problems = []
    if missing:
        problems.append(f"missing keys {few(missing)}")
    if unexpected:
        problems.append(f"unexpected keys {few(unexpected)}")
    if wrong:
        problems.append(f"shape mismatch {wrong[0]}" + (f" (+{len(wrong) - 1} more)"
                                                        if len(wrong) > 1 else ""))
    if problems:
        raise CheckpointError(f"{what} does not fit this model: " + "; ".join(problems) + ".")
    model.load_state_dict(state, strict=True)
