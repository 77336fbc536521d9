"""The sidebar's model card: where a model's weights come from, its geometry and classes, and
its text stream, worded from the model's own config and info."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui import keys
from ui.serving import state
from vit_core.io import hub
from vit_core.io.text import SPECIALS


def card(sb) -> None:
    """A short model card: where the model comes from, its geometry and classes."""
    model = state.get_model(st.session_state[keys.MODEL])
    c, info = model.config, model.info
    n = sum(p.numel() for p in model.parameters())
    with sb.expander("Model card"):
        st.markdown(
            f"**{info.name}** · {weights_origin(info)}  \n"
            f"source: {info.source}  \n"
            f"{c.img_size}×{c.img_size} input, patch {c.patch_size} ({c.grid}×{c.grid}), D = "
            f"{c.embed_dim}, {plural(c.depth, 'layer')} × {plural(c.num_heads, 'head')}, "
            f"{n / 1e6:.2f} M parameters"
            + (f"  \n{classes_line(c)}" if c.num_classes else "")
            + (f"  \n{text_line(c, info)}" if c.has_text else ""))
        if info.metrics:
            st.json(info.metrics, expanded=False)


def plural(n: int, word: str) -> str:
    """'1 layer', '2 layers'; '1 class', '3 classes'."""
    return f"{n} {word}" if n == 1 else f"{n} {word}{'es' if word.endswith('s') else 's'}"


def weights_origin(info) -> str:
    """Where the weights come from. "trained" only for the bundled models (trained by this
    repo); a file's or a Hub repo's weights may be trained or not, which the app cannot tell,
    so the card names where they come from instead."""
    source = str(info.source)
    if not info.trained:  # presets; a file whose own metadata says so
        return "untrained (random weights)"
    if source == "bundled":
        return "trained by this repo on generated scenes"
    if source.startswith(hub.PREFIX):
        return f"weights from the Hugging Face Hub repo {source.removeprefix(hub.PREFIX)}"
    if source == "timm":
        return "weights from timm's pretrained models"
    path = Path(source)
    return (f"weights from the {'folder' if path.is_dir() else 'file'} {path.name} (whether "
            f"they were trained, the app cannot tell)")


def classes_line(c) -> str:
    """The class head: how many classes, and their first names (or that the file has none)."""
    if not c.class_names:
        return (f"{plural(c.num_classes, 'class')}, without names (numbered 0"
                + (f" … {c.num_classes - 1})" if c.num_classes > 1 else ")"))
    return (f"{plural(c.num_classes, 'class')}: {', '.join(c.class_names[:10])}"
            + (" …" if len(c.class_names) > 10 else ""))


def text_line(c, info) -> str:
    """The text stream: its tokens (words and special tokens), length and mask."""
    special = [t for t in c.vocab if t in SPECIALS]
    tokens = plural(c.vocab_size, "token")
    if c.vocab:
        tokens += (f": {plural(len(c.vocab) - len(special), 'word')} + {len(special)} special"
                   + (f" ({', '.join(special)})" if special else ""))
    mask = (f"trained with the {c.default_mask} mask" if info.source == "bundled"
            else f"its own mask: {c.default_mask}")
    return f"text: {tokens}; up to {c.max_text_len} text tokens per pass, {mask}"
