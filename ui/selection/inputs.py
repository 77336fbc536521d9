"""What the user looks at: an image as bytes with its cache key, and the sample scenes.

An input is keyed by the sha256 of its bytes (never by hashing a PIL image); samples and
composed scenes are drawn once by the scene world's own generator.
"""

from __future__ import annotations

import functools
import hashlib
import io
from dataclasses import dataclass

import streamlit as st

from vit_core.scenes import world


@dataclass(frozen=True)
class Input:
    """What the user chose to look at."""

    key: str  # sha256 of the bytes: the cache key
    label: str  # shown to the user ("sample: a red ball on the grass", "upload: cat.jpg")
    data: bytes


@st.cache_resource(show_spinner=False)
def sample_seeds() -> list[int]:
    """Gallery scenes from held-out seeds (never trained on), starting with the notes' example."""
    red_ball = world.find_seed("a red ball on the grass", start=world.HELDOUT_BASE)
    rest = [s for s in world.heldout_seeds(7, seed=42) if s != red_ball]
    return [red_ball] + rest if red_ball is not None else rest


@st.cache_resource(max_entries=16, show_spinner=False)
def sample_bytes(seed: int) -> bytes:
    buf = io.BytesIO()
    world.make_scene(seed).image.save(buf, format="PNG")
    return buf.getvalue()


@functools.lru_cache(maxsize=64)
def sample_caption(seed: int) -> str:
    """The caption of sample scene `seed` (the sidebar's picker words every option each run)."""
    return world.scene_spec(seed).caption


@st.cache_resource(max_entries=16, show_spinner=False)
def composed_bytes(code: str) -> bytes:
    """PNG of a composed scene (world.Composition code), drawn by the scenes' own generator."""
    buf = io.BytesIO()
    world.compose(world.Composition.parse(code)).image.save(buf, format="PNG")
    return buf.getvalue()


def make_input(label: str, raw: bytes) -> Input:
    return Input(hashlib.sha256(raw).hexdigest(), label, raw)
