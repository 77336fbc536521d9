"""Loading and saving models: presets (random weights), and this project's safetensors files.
(Checkpoints from timm, Hugging Face or plain PyTorch: see external.py; load_model routes there.)

Our checkpoint format is one .safetensors file: the state dict (timm names) plus metadata
`vit_explainer.config` (ViTConfig JSON) and `vit_explainer.info` (ModelInfo JSON). Nothing is
ever unpickled from our files; where a pickle must be read it goes through
torch.load(weights_only=True), which refuses code.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, fields
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from ..config import PRESETS, ViTConfig
from ..model import ViT
from . import hub, snapshots
from .base import CheckpointError, ModelInfo, load_state_dict_strict
from .external import load_external, load_timm_pretrained, looks_external

BUNDLED_DIR = Path(__file__).parent.parent / "bundled"  # the models this repo trains and ships
DEFAULT_MODEL = "shapes-classifier"
FALLBACK_MODEL = "vit-b16"


def bundled_models() -> list[str]:
    """Names of the trained models shipped in BUNDLED_DIR (listed again when the folder
    changes: a model trained meanwhile appears)."""
    try:
        stamp = BUNDLED_DIR.stat().st_mtime_ns
    except OSError:
        stamp = None
    return list(_bundled(str(BUNDLED_DIR), stamp))


@functools.lru_cache(maxsize=8)
def _bundled(folder: str, stamp: int | None) -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in Path(folder).glob("*.safetensors")))


def default_model_name() -> str:
    return DEFAULT_MODEL if DEFAULT_MODEL in bundled_models() else FALLBACK_MODEL


def build_preset(name: str, seed: int = 0) -> ViT:
    """A preset geometry with random weights from a fixed seed (global RNG left untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ViT(PRESETS[name])
    model.info = ModelInfo(name=name, source="preset", trained=False,
                           description="untrained: random weights, real shapes")
    return model.eval()


def save_checkpoint(model: ViT, path: str | Path, info: ModelInfo | None = None,
                    dtype: torch.dtype | None = None) -> Path:
    """Write the model's weights (cast to `dtype` if given), config and info to one file."""
    info = info or getattr(model, "info", None) or ModelInfo(Path(path).stem, "file", True)
    state = {k: v.detach().to(dtype or v.dtype).contiguous()
             for k, v in model.state_dict().items()}
    meta = {"vit_explainer.config": model.config.to_json(),
            "vit_explainer.info": json.dumps({k: v for k, v in asdict(info).items()
                                              if k not in ("card", "source")})}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(path), metadata=meta)
    return path


def load_checkpoint(path: str | Path) -> ViT:
    """Load one of our .safetensors checkpoints; raise CheckpointError naming any problem."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"No file at '{path}'.")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            state = {k: f.get_tensor(k) for k in f.keys()}
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(f"'{path.name}' is not a readable safetensors file ({e}).") from e
    if "vit_explainer.config" not in meta:
        raise CheckpointError(f"'{path.name}' has no ViT Explainer config in its metadata.")
    try:
        config = ViTConfig.from_json(meta["vit_explainer.config"])
        info = json.loads(meta.get("vit_explainer.info", "{}"))
    except (ValueError, TypeError) as e:
        raise CheckpointError(f"'{path.name}' has an invalid config: {e}") from e
    check_info(info, path.name)
    model = ViT(config)
    load_state_dict_strict(model, state, path.name)
    card = path.with_suffix(".md")
    model.info = ModelInfo(**{"name": path.stem, "trained": True, **info},
                           source=str(path), card=card.read_text() if card.is_file() else "")
    return model.eval()


INFO_KEYS = tuple(f.name for f in fields(ModelInfo) if f.name not in ("source", "card"))


def check_info(info, file_name: str) -> None:
    """Refuse `vit_explainer.info` metadata that is not a JSON object of ModelInfo's saved
    fields (INFO_KEYS), naming the first unknown key in one sentence."""
    if not isinstance(info, dict):
        raise CheckpointError(f"'{file_name}' has vit_explainer.info metadata that is not a JSON "
                              f"object (it is a {type(info).__name__}).")
    unknown = [k for k in info if k not in INFO_KEYS]
    if unknown:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise CheckpointError(f"'{file_name}' has an unknown key '{unknown[0]}'{more} in its "
                              f"vit_explainer.info metadata; known keys: {', '.join(INFO_KEYS)}.")


def training_log(name: str) -> snapshots.TrainingLog | None:
    """How bundled model `name` was trained (recipe, curves, snapshots), or None without a log."""
    return snapshots.read_log(BUNDLED_DIR, name) if name in bundled_models() else None


def load_model(name_or_path: str | Path | None = None, *, local_files_only: bool = False,
               step: int | None = None, **options) -> ViT:
    """A ready-to-trace model in eval mode, with `.config` and `.info`.

    Args:
        name_or_path: a preset ("vit-b16", ...), a bundled model ("shapes-classifier", ...),
            "hf:ORG/NAME" for a ViT from the Hugging Face Hub (vit_core/io/hub.py: fetched into
            the Hugging Face cache on first use, then loaded from there with no network),
            a path to one of our .safetensors checkpoints, a checkpoint from another library
            (a timm/PyTorch state-dict file or a Hugging Face folder), "timm:<name>" for timm's
            pretrained weights (needs timm and a network), or None for the default model.
        step: for a bundled model with training snapshots (`training_log(name).steps`): its
            weights after that many training steps (0: the random start; the last step: the
            model itself). Snapshots are stored in float16 and loaded as float32.
        local_files_only: never download: an "hf:" model not on this machine is a
            CheckpointError naming the fetch command (as with `HF_HUB_OFFLINE=1`). The app
            passes it: only the teacher fetches. A "timm:" name (timm downloads it) is refused.
        options: for other libraries' checkpoints only: num_heads, img_size, mean, std
            (see vit_core.external.load_external; "timm:" names take img_size).
    """
    name = str(name_or_path) if name_or_path is not None else default_model_name()
    if step is not None:
        log = training_log(name)
        snapshots.check_step(log, name, step)
        if step != log.final_step:
            model = load_checkpoint(snapshots.snapshot_path(BUNDLED_DIR, name, step))
            model.info.source = "bundled"
            return model
    if name not in PRESETS and name not in bundled_models():
        if name.startswith(hub.PREFIX):  # fetched on first use, then read from the local cache
            return hub.load(name, local_files_only=local_files_only, **options)
        if name.startswith("timm:"):
            if local_files_only:
                raise CheckpointError(f"'{name}' would be downloaded by timm, and this caller "
                                      f"loads only what is on this machine.")
            return load_timm_pretrained(name.removeprefix("timm:"), **options)
        if looks_external(Path(name)):  # a folder, a pickle, or a .safetensors that isn't ours
            return load_external(name, **options)
    if options:
        raise CheckpointError(f"{', '.join(sorted(options))}: only for checkpoints from other "
                              f"libraries, not for '{name}'.")
    if name in PRESETS:
        return build_preset(name)
    if name in bundled_models():
        model = load_checkpoint(BUNDLED_DIR / f"{name}.safetensors")
        model.info.source = "bundled"
        sureness = BUNDLED_DIR / f"{name}.confidence.json"  # how sure it is on its own world
        if sureness.is_file():  # (python -m vit_core.scenes.evaluate NAME --confidence FILE)
            model.info.metrics["confidence_on_scenes"] = json.loads(sureness.read_text())
        return model
    path = Path(name)
    if path.suffix == ".safetensors" or path.exists():
        return load_checkpoint(path)
    known = ", ".join(list(PRESETS) + bundled_models())
    raise CheckpointError(f"No model or file named '{name}'. Known models: {known}.")
