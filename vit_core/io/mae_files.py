"""Masked autoencoders on disk: our two-file format, and `load_mae`, which finds any of them.

Ours keeps the encoder a plain checkpoint, so `load_model` reads it like every other model (the
headless encoder) and every stage runs on it; the decoder sits beside it:

    NAME.safetensors              the encoder: one of our checkpoints (checkpoints.py)
    NAME.mae/decoder.safetensors  the decoder (MAEDecoder's names), with metadata
                                  `vit_explainer.mae`: the MAEConfig as JSON

A transformers ViTMAE folder or `hf:` repo is read by mae_hf.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from ..mae import MAE, MAEConfig
from . import hub
from .base import CheckpointError, ModelInfo, load_state_dict_strict
from .checkpoints import BUNDLED_DIR, bundled_models, load_checkpoint, save_checkpoint
from .external import is_hf_mae
from .mae_hf import load_hf_mae

META_KEY = "vit_explainer.mae"


def decoder_path(path: str | Path) -> Path:
    """Where the decoder of the MAE whose encoder is `path` lives."""
    path = Path(path)
    return path.with_name(path.stem + ".mae") / "decoder.safetensors"


def bundled_maes() -> list[str]:
    """The bundled models that are masked autoencoders (a decoder ships beside them)."""
    return [n for n in bundled_models() if decoder_path(BUNDLED_DIR / f"{n}.safetensors").is_file()]


def is_mae(name_or_path: str | Path) -> bool:
    """Whether `load_mae` finds a masked autoencoder under this name, reading the disk only: a
    bundled MAE, one of our MAE checkpoints, a ViTMAE folder, or an 'hf:' ViTMAE repo that is on
    this machine."""
    name = str(name_or_path)
    if name.startswith(hub.PREFIX):
        try:
            folder = hub.local_folder(name)
        except CheckpointError:
            return False
        return folder is not None and _vit_mae_folder(folder)
    if name in bundled_models():
        return decoder_path(BUNDLED_DIR / f"{name}.safetensors").is_file()
    path = Path(name)
    if path.is_dir():
        return _vit_mae_folder(path)
    return path.is_file() and decoder_path(path).is_file()


def _vit_mae_folder(folder: Path) -> bool:
    try:
        return is_hf_mae(json.loads((folder / "config.json").read_text()))
    except (OSError, ValueError):
        return False


def save_mae(mae: MAE, path: str | Path, info: ModelInfo | None = None) -> Path:
    """Write the encoder as one of our checkpoints at `path`, and the decoder beside it."""
    path = save_checkpoint(mae.encoder, path, info or getattr(mae, "info", None))
    target = decoder_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in mae.decoder.state_dict().items()}
    save_file(state, str(target), metadata={META_KEY: mae.config.to_json()})
    return path


def load_ours(path: str | Path) -> MAE:
    """One of our MAE checkpoints (the encoder file; its decoder is found beside it)."""
    path = Path(path)
    encoder = load_checkpoint(path)
    target = decoder_path(path)
    if not target.is_file():
        raise CheckpointError(f"'{path.name}' is a plain ViT checkpoint: there is no MAE decoder "
                              f"beside it ({target.parent.name}/{target.name}).")
    try:
        with safe_open(str(target), framework="pt") as f:
            meta = f.metadata() or {}
            state = {k: f.get_tensor(k) for k in f.keys()}
        config = MAEConfig.from_json(meta[META_KEY])
    except (SafetensorError, OSError, KeyError, ValueError, TypeError) as e:
        raise CheckpointError(f"'{target.parent.name}/{target.name}' is not a readable MAE "
                              f"decoder ({e}).") from e
    mae = MAE(encoder, config)
    load_state_dict_strict(mae.decoder, state, f"'{target.parent.name}/{target.name}'")
    mae.info = encoder.info
    return mae.eval()


def load_mae(name_or_path: str | Path, *, local_files_only: bool = False) -> MAE:
    """A masked autoencoder, ready to run, with `.encoder` (a headless ViT), `.config`, `.info`.

    Args:
        name_or_path: a bundled MAE ("shapes-mae"), "hf:ORG/NAME" for a transformers ViTMAE repo
            (fetched on first use, as load_model), a ViTMAE save_pretrained folder, or one of our
            MAE checkpoints (the encoder's .safetensors, its decoder beside it).
        local_files_only: never download (see load_model).
    """
    name = str(name_or_path)
    if name.startswith(hub.PREFIX):
        return hub.load(name, local_files_only=local_files_only, loader=load_hf_mae)
    if name in bundled_models():
        mae = load_ours(BUNDLED_DIR / f"{name}.safetensors")
        mae.info.source = "bundled"
        return mae
    path = Path(name)
    if path.is_dir():
        return load_hf_mae(path)
    if path.is_file():
        return load_ours(path)
    known = ", ".join(bundled_maes()) or "none yet"
    raise CheckpointError(f"No masked autoencoder named '{name}' (bundled MAEs: {known}); give "
                          f"'hf:ORG/NAME' of a ViTMAE repo, a ViTMAE folder, or one of our MAE "
                          f"checkpoints.")
