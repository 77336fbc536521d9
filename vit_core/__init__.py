"""vit_core: a Vision Transformer (and a single-stream image->text transformer) that shows its work.

The model a reader learns from sits at the top: `config` (every number that fixes a shape),
`model` (forward reads like the equations), `hooks` (how every intermediate gets its name),
`hooked` (run_with_hooks: functions that replace intermediates), `trace` (one pass, every
tensor by name), `masks`, `patches` and `resolution` (the same model at another input size).
Around it:
- `vit_core.io`: reading images, text and checkpoints (ours, timm's, Hugging Face's);
- `vit_core.explain`: numbers computed from a trace (rollout, distances, lens, PCA, FLOPs,
  interventions, generation, segmentation);
- `vit_core.scenes`: the generated scene world the bundled models learned from, with the training
  and evaluation CLIs. `import vit_core` does not load it.

Importing the package changes nothing in the process: no environment variables, no threads, no
allocator settings. Never imports streamlit.
"""

from .config import MASK_KINDS, PRESETS, ViTConfig
from .explain.generation import Generation, Scored, generate, score_text
from .explain.segmentation import segment
from .hooked import run_with_hooks
from .io.base import CheckpointError, ImageError, ModelInfo
from .io.checkpoints import (
    BUNDLED_DIR,
    bundled_models,
    default_model_name,
    load_model,
    save_checkpoint,
    training_log,
)
from .io.images import display_crop, load_image, preprocess
from .io.mae_files import load_mae, save_mae
from .io.snapshots import TrainingLog
from .io.text import Encoding, Tokenizer
from .mae import MAE, MAEConfig, MAEOutput
from .masks import allowed_keys, make_mask
from .model import ViT
from .patches import patchify, unpatchify
from .resolution import at_size, input_sizes
from .trace import TRACE_NAMES, Trace, run_trace

__all__ = [
    "BUNDLED_DIR", "CheckpointError", "Encoding", "Generation", "ImageError", "MASK_KINDS",
    "ModelInfo", "PRESETS", "Scored", "TRACE_NAMES", "Tokenizer", "Trace", "TrainingLog", "ViT",
    "ViTConfig",
    "allowed_keys", "at_size", "bundled_models", "default_model_name", "display_crop", "generate",
    "input_sizes", "load_image", "load_model", "make_mask", "patchify", "preprocess", "run_trace",
    "run_with_hooks", "save_checkpoint", "score_text", "segment", "training_log", "unpatchify",
    "MAE", "MAEConfig", "MAEOutput", "load_mae", "save_mae",
]
