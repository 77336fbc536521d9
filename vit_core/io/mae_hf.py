"""transformers' ViTMAEForPreTraining folders (config.json model_type "vit_mae" + weights) as our
MAE (vit_core/mae.py), with neither transformers nor its masking code.

The encoder (`vit.*`) is a plain ViT: external.py maps it, as for any HF ViT, and
`load_model` stops there (the headless encoder). The decoder (`decoder.*`) maps here:

    decoder.decoder_embed.*                 -> decoder.embed.*       D -> D_dec
    decoder.mask_token                      -> decoder.mask_token    (1, 1, D_dec)
    decoder.decoder_pos_embed               -> decoder.pos_embed     (1, 1+N, D_dec), fixed
    decoder.decoder_layers.{i}.<ViT layer>  -> decoder.blocks.{i}.*  (as the encoder's layers)
    decoder.decoder_norm.*                  -> decoder.norm.*
    decoder.decoder_pred.*                  -> decoder.pred.*        D_dec -> P·P·C

Real repos (facebook/vit-mae-*) store `decoder.decoder_layers.{i}`; transformers 5's
save_pretrained writes `decoder.decoder_encoder.layer.{i}` instead: both are read.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..mae import MAE, MAEConfig
from .base import CheckpointError, load_state_dict_strict
from .external import from_hf, is_hf_mae, load_external, read_folder

DECODER_TOP = {"decoder_embed": "embed", "mask_token": "mask_token",
               "decoder_pos_embed": "pos_embed", "decoder_norm": "norm", "decoder_pred": "pred"}
DECODER_LAYER = re.compile(r"^(?:decoder_layers|decoder_encoder\.layer)\.(\d+)\.(.+)$")


def mae_config(hf_config: dict) -> MAEConfig:
    """MAEConfig from a ViTMAE config.json (transformers' defaults where a field is absent)."""
    width = int(hf_config.get("decoder_hidden_size", 512))
    return MAEConfig(decoder_dim=width,
                     decoder_depth=int(hf_config.get("decoder_num_hidden_layers", 8)),
                     decoder_heads=int(hf_config.get("decoder_num_attention_heads", 16)),
                     decoder_mlp_ratio=int(hf_config.get("decoder_intermediate_size", 2048))
                     / width,
                     mask_ratio=float(hf_config.get("mask_ratio", 0.75)),
                     norm_pix_loss=bool(hf_config.get("norm_pix_loss", False)))


def decoder_from_hf(state: dict) -> dict:
    """The `decoder.*` tensors of a ViTMAEForPreTraining state dict, named as MAEDecoder's
    (without the `decoder.` prefix). Unknown keys pass through, so the strict loader names them."""
    out, layers = {}, {}
    for key, value in state.items():
        if not key.startswith("decoder."):
            continue
        k = key.removeprefix("decoder.")
        if m := DECODER_LAYER.match(k):  # one ViT layer: external.py's mapping, renumbered
            layers[f"encoder.layer.{m.group(1)}.{m.group(2)}"] = value
        else:
            base, _, kind = k.rpartition(".")
            out[DECODER_TOP.get(k) or (f"{DECODER_TOP[base]}.{kind}" if base in DECODER_TOP
                                       else key)] = value
    out.update(from_hf(layers))  # -> blocks.{i}.norm1 / attn.qkv / attn.proj / norm2 / mlp.*
    return out


def load_hf_mae(folder: str | Path, name: str | None = None, **options) -> MAE:
    """A ViTMAEForPreTraining folder as our MAE, in eval mode; `.info` is the encoder's.

    Args:
        folder: a save_pretrained folder (config.json with model_type "vit_mae" + weights).
        name: what to call the model (default: the folder's name).
        options: for the encoder, as load_external (num_heads, mean, std; not img_size).
    """
    folder = Path(folder)
    if options.get("img_size"):
        raise CheckpointError("An MAE runs at the size it was trained at (its decoder's "
                              "positions are fixed): img_size cannot change.")
    cfg, _, state = read_folder(folder)
    if not is_hf_mae(cfg):
        raise CheckpointError(f"'{folder.name}' is a '{cfg.get('model_type')}' model, not a "
                              f"masked autoencoder (ViTMAE): it has no decoder to reconstruct "
                              f"hidden patches with.")
    encoder = load_external(folder, name=name, **options)  # the headless ViT, as load_model
    try:
        mae = MAE(encoder, mae_config(cfg))
    except ValueError as e:
        raise CheckpointError(f"'{folder.name}': {e}") from e
    load_state_dict_strict(mae.decoder, decoder_from_hf(state), f"'{folder.name}' (decoder)")
    mae.info = encoder.info
    mae.info.description = "Hugging Face masked autoencoder (ViTMAE)"
    return mae.eval()
