"""ModelRef: which model, in one plain value, and the one place its name is read and written.

The app names a model by one string (the picker's choice, the cache's key, a link's `model=`):

    shapes-classifier                 a bundled model        vit-b16          a preset (random)
    hf:facebook/deit-tiny-patch16-224 a Hub model            /models/vit.pth  a file or folder
    /models/vit.pth?heads=12          a file, with its number of attention heads given
    shapes-classifier@step250         a bundled model's weights after 250 training steps
    shapes-classifier@step250@288px   ... run at 288×288 px (its positions resampled)

`ModelRef.parse(text)` reads such a string, `str(ref)` writes it back, and `ref.link()` gives the
query parameters a link carries (the picker name, the size, the step). Text that is not one of
these forms raises ValueError with one sentence, which the app shows as it is.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from ..config import PRESETS
from .checkpoints import bundled_models
from .hub import PREFIX as HUB_PREFIX

HEADS = "?heads="  # 'PATH?heads=12': a checkpoint that does not record its number of heads
_SIZE = re.compile(r"^(?P<rest>.*)@(?!step)(?P<size>\w*)px$")  # 'NAME@288px'
_STEP = re.compile(r"^(?P<rest>.*)@step(?P<step>\w*)$")  # 'NAME@step250'
LINK_KEYS = ("model", "size", "train_step")  # a link's query parameters (ui/keys says the same)


@dataclass(frozen=True)
class ModelRef:
    """A model by name, with what the app changes about it.

    Attributes:
        name: the picker's name without options: a bundled model, a preset, 'hf:ORG/NAME', or a
            path on the server.
        heads: attention heads of a checkpoint that does not record them ('?heads=H'), or None.
        step: the training step whose weights to load ('@stepN'); None: the final weights.
        size: the input size in pixels to run at ('@Spx'); None: the model's own.
    """

    name: str
    heads: int | None = None
    step: int | None = None
    size: int | None = None

    @classmethod
    def parse(cls, text: str) -> ModelRef:
        """'NAME[?heads=H][@stepN][@Spx]' -> ModelRef; ValueError (one sentence) when a part is
        not a whole number, or there is no name."""
        text = str(text)
        size, rest = _number(_SIZE.match(text), text, "size", "an input size in pixels")
        step, rest = _number(_STEP.match(rest), rest, "step", "a training step", least=0)
        name, sep, heads = rest.partition(HEADS)
        if sep and not (heads.isdigit() and int(heads) > 0):
            raise ValueError(f"'{text}' asks for {heads!r} attention heads, which is not a "
                             f"whole number above 0.")
        if not name:
            raise ValueError(f"'{text}' names no model: give a model's name or a file's path.")
        return cls(name, int(heads) if sep else None, step, size)

    def __str__(self) -> str:
        """The string `parse` reads back: 'NAME?heads=H@stepN@Spx', each part only when set."""
        return (self.name + (f"{HEADS}{self.heads}" if self.heads is not None else "")
                + (f"@step{self.step}" if self.step is not None else "")
                + (f"@{self.size}px" if self.size is not None else ""))

    def link(self) -> dict[str, str]:
        """The query parameters a link carries for this model: the picker's name (with its
        heads), then the input size and the training step when they are set."""
        model, size, step = LINK_KEYS
        out = {model: str(self.picked)}
        if self.size is not None:
            out[size] = str(self.size)
        if self.step is not None:
            out[step] = str(self.step)
        return out

    @property
    def picked(self) -> ModelRef:
        """The model as the picker names it: at its own size and final weights."""
        return dataclasses.replace(self, step=None, size=None)

    @property
    def unsized(self) -> ModelRef:
        """The same model at its own input size (the same training step)."""
        return dataclasses.replace(self, size=None)

    def at(self, *, step: int | None = None, size: int | None = None) -> ModelRef:
        """The same model at training step `step` and input size `size` (None: its own)."""
        return dataclasses.replace(self, step=step, size=size)

    @property
    def source(self) -> str:
        """'hub' | 'preset' | 'bundled' | 'file' (a checkpoint file or folder on the server)."""
        if self.name.startswith(HUB_PREFIX):
            return "hub"
        if self.name in PRESETS:
            return "preset"
        return "bundled" if self.name in bundled_models() else "file"


def _number(m: re.Match | None, text: str, what: str, words: str, least: int = 1):
    """(the number a suffix gives, the text before it); (None, text) without the suffix."""
    if m is None:
        return None, text
    value = m[what]
    if not (value.isdigit() and int(value) >= least):
        raise ValueError(f"'{text}' asks for {words} of {value!r}, which is not a whole number"
                         f"{' above 0' if least else ''}.")
    return int(value), m["rest"]
