"""vit_core: a Vision Transformer (and a single-stream image->text transformer) that shows its work.

Never imports streamlit. Build or load a model, preprocess an image, and `run_trace` returns every
intermediate tensor of one forward pass under a documented name (see TRACE_NAMES / the README).
"""

import os

# A trace keeps every intermediate alive (~170 MB for ViT-B/16), so each trace touches fresh
# memory: ~21k 4 KB page faults, about 10 % of the forward pass. Transparent huge pages in torch's
# CPU allocator cut that ~5x (trace/timm 1.23 -> 1.09, README "Performance"). Torch reads this once,
# so it only takes effect when vit_core (or ui) is imported before torch; =0 opts out.
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")

from .checkpoints import (
    BUNDLED_DIR,
    CheckpointError,
    ModelInfo,
    bundled_models,
    default_model_name,
    load_model,
    save_checkpoint,
)
from .config import MASK_KINDS, PRESETS, ViTConfig
from .images import ImageError, display_crop, load_image, patchify, preprocess, unpatchify
from .masks import allowed_keys, make_mask
from .model import ViT
from .text import Encoding, Tokenizer
from .trace import TRACE_NAMES, Trace, run_trace

__all__ = [
    "BUNDLED_DIR", "CheckpointError", "Encoding", "ImageError", "MASK_KINDS", "ModelInfo",
    "PRESETS", "TRACE_NAMES", "Tokenizer", "Trace", "ViT", "ViTConfig", "allowed_keys",
    "bundled_models", "default_model_name", "display_crop", "load_image", "load_model",
    "make_mask", "patchify", "preprocess", "run_trace", "save_checkpoint", "unpatchify",
]
