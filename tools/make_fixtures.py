"""Generate the committed reference fixtures in tests/fixtures/ (dev-only tool).

This script is NOT part of the project runtime and is never run by the tests or CI.
It needs timm and transformers, which the project does not depend on, so it runs
only in a separate, throw-away virtualenv (never in the project's .venv):

    python3.11 -m venv /work/fixture-venv
    /work/fixture-venv/bin/pip install torch==2.14.1 torchvision==0.29.1
    /work/fixture-venv/bin/pip install torch==2.14.1 timm transformers safetensors

Then, from the repository root:

    /work/fixture-venv/bin/python tools/make_fixtures.py

Everything is computed in float32 on CPU with fixed seeds and a single thread, so
re-running it with the same library versions reproduces the files bit for bit.
After writing, the script reloads every saved checkpoint into a fresh timm / Hugging
Face model and checks that the saved logits are reproduced exactly.

Files written (see tests/fixtures/README.md for the layout of each):
    timm_vit_tiny.safetensors          timm ViT (CLS token pooling) + reference activations
    timm_vit_tiny_wrapped.pth          same weights as {"model": {"module.<k>": ...}, "epoch": 3}
    timm_vit_tiny_avgpool.safetensors  timm ViT without CLS token, global avg pool + fc_norm
    hf_vit_tiny/                       HF ViTForImageClassification (config.json + model.safetensors)
    hf_vit_tiny_bin/                   same model, config.json + pytorch_model.bin
    hf_vit_tiny_expected.safetensors   HF input / logits / hidden states / final layernorm
    pos_resample.safetensors           timm.layers.resample_abs_pos_embed reference cases
    timm_vit_resolution.safetensors    timm ViT (dynamic_img_size) at 224, 160 and 288 px

Only the last one, without touching the others:

    /work/fixture-venv/bin/python tools/make_fixtures.py --resolution

The masked autoencoder alone (transformers only: `pip install torch==2.13.0 transformers
safetensors numpy` is enough, no timm), without touching the others:

    /work/fixture-venv/bin/python tools/make_fixtures.py --mae

    hf_vit_mae_tiny/                     HF ViTMAEForPreTraining (config.json + model.safetensors)
    hf_vit_mae_tiny_expected.safetensors its outputs for a fixed image and fixed noise
"""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import sys
from pathlib import Path

import torch
import torch.nn as nn
import transformers
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from transformers import ViTConfig, ViTForImageClassification

try:  # --mae needs transformers only; its venv has no timm
    import timm
    from timm.layers import resample_abs_pos_embed
    from timm.models.vision_transformer import VisionTransformer
except ImportError:
    timm = None

OUT_DIR = Path(__file__).resolve().parent.parent / "tests" / "fixtures"

SEED_TIMM_TINY = 1234
SEED_TIMM_AVG = 2345
SEED_HF = 3456
SEED_POS = 4567
SEED_INPUT = 42
SEED_RESOLUTION = 5678
RESOLUTION_SIZES = (224, 160, 288)  # its own size first; 160 and 288 px: 10x10 and 18x18 grids

TIMM_TINY_CFG = dict(
    img_size=32,
    patch_size=8,
    in_chans=3,
    embed_dim=48,
    depth=2,
    num_heads=3,
    mlp_ratio=4.0,
    num_classes=5,
    class_token=True,
    global_pool="token",
)
TIMM_AVG_CFG = dict(
    img_size=48,
    patch_size=16,
    in_chans=3,
    embed_dim=32,
    depth=1,
    num_heads=2,
    mlp_ratio=4.0,
    num_classes=4,
    class_token=False,
    global_pool="avg",
)
# the tiny model on a ViT-B/16 grid: 224 px in 16-pixel patches, 14x14
TIMM_RESOLUTION_CFG = dict(TIMM_TINY_CFG, img_size=224, patch_size=16)
HF_LABELS = {0: "cat", 1: "dog", 2: "bird", 3: "fish", 4: "frog"}


# --------------------------------------------------------------------------- helpers


def _gen(seed: int) -> torch.Generator:
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    return g


def _randn(shape, g: torch.Generator, std: float, mean: float = 0.0) -> torch.Tensor:
    return torch.randn(tuple(shape), generator=g, dtype=torch.float32) * std + mean


@torch.no_grad()
def randomize_(model: nn.Module, seed: int, embed_param_names: set[str]) -> None:
    """Overwrite every parameter (in named_parameters order) with seeded random values.

    - LayerNorm weight: 1 + N(0, 0.1); LayerNorm bias: N(0, 0.1)
    - CLS token / position embedding (embed_param_names): N(0, 0.5)
    - Conv2d (patch embedding) weight: N(0, 1/sqrt(fan_in)) so patch tokens stay O(1)
    - other weights: N(0, 0.2); other biases: N(0, 0.1)
    """
    g = _gen(seed)
    ln_params: dict[str, str] = {}
    conv_weights: dict[str, int] = {}
    for mname, mod in model.named_modules():
        prefix = f"{mname}." if mname else ""
        if isinstance(mod, nn.LayerNorm):
            ln_params[prefix + "weight"] = "ln_w"
            ln_params[prefix + "bias"] = "ln_b"
        elif isinstance(mod, nn.Conv2d):
            conv_weights[prefix + "weight"] = mod.weight[0].numel()
    seen = set()
    for name, p in model.named_parameters():
        seen.add(name)
        if name in embed_param_names:
            new = _randn(p.shape, g, 0.5)
        elif ln_params.get(name) == "ln_w":
            new = _randn(p.shape, g, 0.1, mean=1.0)
        elif ln_params.get(name) == "ln_b":
            new = _randn(p.shape, g, 0.1)
        elif name in conv_weights:
            new = _randn(p.shape, g, 1.0 / math.sqrt(conv_weights[name]))
        elif name.endswith("bias"):
            new = _randn(p.shape, g, 0.1)
        else:
            new = _randn(p.shape, g, 0.2)
        p.copy_(new)
    missing = embed_param_names - seen
    assert not missing, f"embed params not found: {missing}"
    # nothing in the state dict should be left that is not a parameter (no buffers)
    buffers = [n for n, _ in model.named_buffers()]
    assert not buffers, f"unexpected buffers: {buffers}"


def _t(x: torch.Tensor) -> torch.Tensor:
    return x.detach().to(torch.float32).contiguous().clone()


def _canonicalize_safetensors_header(path: Path) -> None:
    """Rewrite the JSON header with sorted keys so the file is byte-for-byte reproducible.

    safetensors stores the metadata in a Rust HashMap, so its order in the header changes from
    run to run. The tensor data (and every data_offsets entry) is left untouched; the header is
    re-padded with spaces to a multiple of 8 bytes, as safetensors itself does.
    """
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def _save_safetensors(
    tensors: dict[str, torch.Tensor], path: Path, metadata: dict[str, str]
) -> None:
    save_file({k: _t(v) for k, v in tensors.items()}, str(path), metadata=metadata)
    _canonicalize_safetensors_header(path)
    os.chmod(path, 0o644)


def _input(shape) -> torch.Tensor:
    return torch.randn(*shape, generator=_gen(SEED_INPUT), dtype=torch.float32)


# --------------------------------------------------------------------------- timm


def build_timm(cfg: dict, fc_norm, dynamic_img_size: bool = False) -> VisionTransformer:
    model = VisionTransformer(
        **cfg,
        qkv_bias=True,
        qk_norm=False,
        proj_bias=True,
        init_values=None,  # no LayerScale
        pos_embed="learn",
        no_embed_class=False,  # pos_embed covers the CLS token too
        reg_tokens=0,
        pre_norm=False,  # no norm_pre (CLIP style) -> patch conv has a bias
        final_norm=True,
        fc_norm=fc_norm,
        dynamic_img_size=dynamic_img_size,
        dynamic_img_pad=False,
        drop_rate=0.0,
        pos_drop_rate=0.0,
        patch_drop_rate=0.0,
        proj_drop_rate=0.0,
        attn_drop_rate=0.0,
        drop_path_rate=0.0,
    )
    assert_plain_timm_vit(model)
    return model


def assert_plain_timm_vit(model: VisionTransformer) -> None:
    """It must be the plain pre-LN ViT: LayerNorm eps 1e-6 everywhere, exact GELU, no extras."""
    for name, mod in model.named_modules():
        if isinstance(mod, nn.LayerNorm):
            assert mod.eps == 1e-6, (name, mod.eps)
        if isinstance(mod, nn.GELU):
            assert mod.approximate == "none", name
    for blk in model.blocks:
        assert isinstance(blk.mlp.act, nn.GELU)
        assert isinstance(blk.ls1, nn.Identity) and isinstance(blk.ls2, nn.Identity)
        assert isinstance(blk.attn.q_norm, nn.Identity) and isinstance(blk.attn.k_norm, nn.Identity)
    assert isinstance(model.norm_pre, nn.Identity)
    assert model.attn_pool is None and model.reg_token is None


@torch.no_grad()
def run_timm(model: VisionTransformer, x: torch.Tensor) -> dict[str, torch.Tensor]:
    acts: dict[str, torch.Tensor] = {}
    handles = [
        model.blocks[0].register_forward_pre_hook(
            lambda m, args: acts.__setitem__("embed", _t(args[0]))
        ),
        model.norm.register_forward_hook(lambda m, a, out: acts.__setitem__("norm", _t(out))),
    ]
    for i, blk in enumerate(model.blocks):
        handles.append(
            blk.register_forward_hook(
                lambda m, a, out, i=i: acts.__setitem__(f"blocks.{i}", _t(out))
            )
        )
    if not isinstance(model.fc_norm, nn.Identity):
        handles.append(
            model.fc_norm.register_forward_pre_hook(
                lambda m, args: acts.__setitem__("pooled", _t(args[0]))
            )
        )
        handles.append(
            model.fc_norm.register_forward_hook(
                lambda m, a, out: acts.__setitem__("fc_norm", _t(out))
            )
        )
    logits = model(x)
    for h in handles:
        h.remove()
    acts["logits"] = _t(logits)
    return acts


def timm_fixture(cfg: dict, fc_norm, seed: int, path: Path) -> tuple[VisionTransformer, dict]:
    torch.manual_seed(seed)
    model = build_timm(cfg, fc_norm)
    embed_names = {"pos_embed"} | ({"cls_token"} if cfg["class_token"] else set())
    randomize_(model, seed, embed_names)
    model.eval()
    x = _input((2, cfg["in_chans"], cfg["img_size"], cfg["img_size"]))
    acts = run_timm(model, x)
    # sanity: the model.norm hook saw the full forward_features output
    with torch.no_grad():
        assert torch.equal(acts["norm"], model.forward_features(x))
    uses_fc_norm = not isinstance(model.fc_norm, nn.Identity)
    uses_norm = not isinstance(model.norm, nn.Identity)
    tensors = {f"state.{k}": v for k, v in model.state_dict().items()}
    tensors["input"] = x
    tensors.update(acts)
    config = dict(cfg)
    config.update(
        norm_eps=1e-6,
        qkv_bias=True,
        fc_norm=uses_fc_norm,
        final_norm_is_identity=not uses_norm,
        num_prefix_tokens=model.num_prefix_tokens,
        act="gelu_exact",
        attention_impl="fused_sdpa" if model.blocks[0].attn.fused_attn else "eager",
    )
    meta = {
        "timm_version": timm.__version__,
        "torch_version": torch.__version__,
        "config": json.dumps(config, sort_keys=True),
        "seed": str(seed),
        "input_seed": str(SEED_INPUT),
    }
    _save_safetensors(tensors, path, meta)
    return model, config


# --------------------------------------------------------------------------- Hugging Face


def build_hf() -> ViTForImageClassification:
    cfg = ViTConfig(
        image_size=32,
        patch_size=8,
        num_channels=3,
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=3,
        intermediate_size=192,
        hidden_act="gelu",
        layer_norm_eps=1e-12,
        num_labels=5,
        id2label=dict(HF_LABELS),
        label2id={v: k for k, v in HF_LABELS.items()},
        qkv_bias=True,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(SEED_HF)
    model = ViTForImageClassification(cfg)
    assert model.vit.pooler is None
    return model


@torch.no_grad()
def run_hf(model: ViTForImageClassification, x: torch.Tensor) -> dict[str, torch.Tensor]:
    acts: dict[str, torch.Tensor] = {}
    h = model.vit.layernorm.register_forward_hook(
        lambda m, a, out: acts.__setitem__("final", _t(out))
    )
    out = model(pixel_values=x, output_hidden_states=True, interpolate_pos_encoding=False)
    h.remove()
    acts["logits"] = _t(out.logits)
    n = model.config.num_hidden_layers
    assert len(out.hidden_states) == n + 1
    for i, hs in enumerate(out.hidden_states):
        acts[f"hidden.{i}"] = _t(hs)
    return acts


def hf_fixture() -> ViTForImageClassification:
    model = build_hf()
    randomize_(model, SEED_HF, {"vit.embeddings.cls_token", "vit.embeddings.position_embeddings"})
    model.eval()
    x = _input((2, 3, 32, 32))
    acts = run_hf(model, x)

    # cross-check hidden_states against explicit hooks / manual recomputation
    with torch.no_grad():
        emb = model.vit.embeddings(x, interpolate_pos_encoding=False)
        assert torch.equal(_t(emb), acts["hidden.0"])
        h = emb
        for i, layer in enumerate(model.vit.layers):
            h = layer(h, None)
            assert torch.allclose(_t(h), acts[f"hidden.{i + 1}"], atol=1e-5, rtol=1e-5)
        assert torch.allclose(_t(model.vit.layernorm(h)), acts["final"], atol=1e-5, rtol=1e-5)
        assert torch.allclose(
            model.classifier(acts["final"][:, 0]), acts["logits"], atol=1e-5, rtol=1e-5
        )

    safe_dir = OUT_DIR / "hf_vit_tiny"
    bin_dir = OUT_DIR / "hf_vit_tiny_bin"
    for d in (safe_dir, bin_dir):
        if d.exists():
            shutil.rmtree(d)
    model.save_pretrained(str(safe_dir), safe_serialization=True)
    # transformers >= 5 ignores safe_serialization=False and always writes model.safetensors, so
    # the legacy pytorch_model.bin is written by hand: exactly the tensors (and key names, i.e. the
    # original on-disk ViT format) of model.safetensors, as a plain torch.save'd dict.
    on_disk = load_file(str(safe_dir / "model.safetensors"))
    bin_dir.mkdir(parents=True)
    shutil.copyfile(safe_dir / "config.json", bin_dir / "config.json")
    torch.save({k: on_disk[k].contiguous() for k in sorted(on_disk)}, bin_dir / "pytorch_model.bin")
    for d in (safe_dir, bin_dir):
        for f in d.iterdir():
            os.chmod(f, 0o644)

    tensors = {"input": x}
    tensors.update(acts)
    meta = {
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "attn_implementation": model.config._attn_implementation,
        "seed": str(SEED_HF),
        "input_seed": str(SEED_INPUT),
        "num_hidden_layers": str(model.config.num_hidden_layers),
    }
    _save_safetensors(tensors, OUT_DIR / "hf_vit_tiny_expected.safetensors", meta)
    return model


# --------------------------------------------------------------------------- pos embed resampling

POS_CALL = dict(interpolation="bicubic", antialias=True)  # timm's defaults, passed explicitly


def pos_fixture() -> None:
    g = _gen(SEED_POS)
    posemb_in = _randn((1, 1 + 7 * 7, 24), g, 0.5)
    posemb_in_np = _randn((1, 4 * 4, 24), g, 0.5)
    out = resample_abs_pos_embed(posemb_in, new_size=(10, 10), num_prefix_tokens=1, **POS_CALL)
    out_np = resample_abs_pos_embed(posemb_in_np, new_size=(6, 6), num_prefix_tokens=0, **POS_CALL)
    assert out.shape == (1, 101, 24) and out_np.shape == (1, 36, 24)
    assert torch.equal(out[:, :1], posemb_in[:, :1])  # prefix token passes through unchanged
    meta = {
        "timm_version": timm.__version__,
        "torch_version": torch.__version__,
        "call": json.dumps(
            {
                "function": "timm.layers.resample_abs_pos_embed",
                "posemb_in": {
                    "new_size": [10, 10],
                    "old_size": None,
                    "num_prefix_tokens": 1,
                    "interpolation": "bicubic",
                    "antialias": True,
                    "align_corners": None,
                },
                "posemb_in_noprefix": {
                    "new_size": [6, 6],
                    "old_size": None,
                    "num_prefix_tokens": 0,
                    "interpolation": "bicubic",
                    "antialias": True,
                    "align_corners": None,
                },
                "equivalent": "F.interpolate(grid NCHW, size=new_size, mode='bicubic', "
                "align_corners=False, antialias=True) on the non-prefix tokens; "
                "grid is row-major (h, w) of the flattened tokens",
            },
            sort_keys=True,
        ),
        "seed": str(SEED_POS),
    }
    _save_safetensors(
        {
            "posemb_in": posemb_in,
            "posemb_out": out,
            "posemb_in_noprefix": posemb_in_np,
            "posemb_out_noprefix": out_np,
        },
        OUT_DIR / "pos_resample.safetensors",
        meta,
    )


# --------------------------------------------------------------------------- another resolution


def _pixels(size: int, g: torch.Generator) -> torch.Tensor:
    """A random 8-bit RGB image [1, 3, size, size]: stored as uint8 (small), read as u8/127.5 - 1."""
    return torch.randint(0, 256, (1, 3, size, size), generator=g, dtype=torch.uint8)


def _normalise(u8: torch.Tensor) -> torch.Tensor:
    return u8.to(torch.float32) / 127.5 - 1.0  # mean 0.5, std 0.5, as the loader's default


@torch.no_grad()
def resolution_fixture() -> None:
    """One timm ViT built with dynamic_img_size=True, run at its own 224 px and at 160 and 288 px,
    where timm resamples pos_embed to the new grid on every forward (resample_abs_pos_embed)."""
    torch.manual_seed(SEED_RESOLUTION)
    model = build_timm(TIMM_RESOLUTION_CFG, False, dynamic_img_size=True)
    randomize_(model, SEED_RESOLUTION, {"pos_embed", "cls_token"})
    model.eval()
    g = _gen(SEED_RESOLUTION + 1)
    tensors = {f"state.{k}": v for k, v in model.state_dict().items()}
    for size in RESOLUTION_SIZES:
        u8 = _pixels(size, g)
        grid = size // TIMM_RESOLUTION_CFG["patch_size"]
        tensors[f"pixels_{size}"] = u8
        tensors[f"logits_{size}"] = _t(model(_normalise(u8)))
        tensors[f"pos_embed_{size}"] = _t(resample_abs_pos_embed(
            model.pos_embed, new_size=(grid, grid), num_prefix_tokens=1, **POS_CALL))
    meta = {
        "timm_version": timm.__version__,
        "torch_version": torch.__version__,
        "config": json.dumps(dict(TIMM_RESOLUTION_CFG, dynamic_img_size=True), sort_keys=True),
        "sizes": json.dumps(RESOLUTION_SIZES),
        "input": "pixels_<size> (uint8) / 127.5 - 1",
        "seed": str(SEED_RESOLUTION),
    }
    save_file({k: v if v.dtype == torch.uint8 else _t(v) for k, v in tensors.items()},
              str(OUT_DIR / "timm_vit_resolution.safetensors"), metadata=meta)
    _canonicalize_safetensors_header(OUT_DIR / "timm_vit_resolution.safetensors")
    os.chmod(OUT_DIR / "timm_vit_resolution.safetensors", 0o644)


@torch.no_grad()
def verify_resolution() -> None:
    """A fresh dynamic-size timm model from the saved weights reproduces every saved tensor."""
    saved = load_file(str(OUT_DIR / "timm_vit_resolution.safetensors"))
    state = {k[len("state."):]: v for k, v in saved.items() if k.startswith("state.")}
    torch.manual_seed(999)  # different init on purpose: everything must come from the file
    model = build_timm(TIMM_RESOLUTION_CFG, False, dynamic_img_size=True)
    model.load_state_dict(state, strict=True)
    model.eval()
    for size in RESOLUTION_SIZES:
        assert torch.equal(model(_normalise(saved[f"pixels_{size}"])), saved[f"logits_{size}"])
        grid = size // TIMM_RESOLUTION_CFG["patch_size"]
        assert torch.equal(resample_abs_pos_embed(model.pos_embed, new_size=(grid, grid),
                                                  num_prefix_tokens=1, **POS_CALL),
                           saved[f"pos_embed_{size}"])
    assert torch.equal(saved["pos_embed_224"], state["pos_embed"])  # its own grid: unchanged
    print(f"ok  timm_vit_resolution.safetensors: logits and positions at {RESOLUTION_SIZES} px "
          f"reproduced exactly")


# --------------------------------------------------------------------------- masked autoencoder

SEED_MAE = 6789
MAE_DIR = "hf_vit_mae_tiny"
MAE_EXPECTED = "hf_vit_mae_tiny_expected.safetensors"
MAE_RATIOS = (0.75, 0.7, 0.0)  # the config's; 0.7: int(16 * 0.3) = 4 where round() gives 5; 0.0


def build_mae():
    from transformers import ViTMAEConfig, ViTMAEForPreTraining

    cfg = ViTMAEConfig(
        image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64, hidden_act="gelu", layer_norm_eps=1e-12,
        qkv_bias=True, decoder_hidden_size=16, decoder_num_hidden_layers=1,
        decoder_num_attention_heads=2, decoder_intermediate_size=32, mask_ratio=0.75,
        norm_pix_loss=True, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(SEED_MAE)
    return ViTMAEForPreTraining(cfg)


def _mae_noise(seed: int) -> torch.Tensor:
    return torch.rand(2, 16, generator=_gen(seed), dtype=torch.float32)


@torch.no_grad()
def run_mae(model, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Outputs at each ratio of MAE_RATIOS (suffix _r<ratio>) for noise seeded 100 + index; at
    ratio 0 the noise is 0, 1, ..., N-1 (nothing hidden, patches in grid order: the headless
    encoder's pass). The decoder's input (its tokens with [MASK] placed, plus positions) is read
    by a pre-hook on its first layer; the encoder's input by a hook on the embeddings."""
    acts: dict[str, torch.Tensor] = {}
    own = model.config.mask_ratio
    for i, ratio in enumerate(MAE_RATIOS):
        noise = _mae_noise(100 + i) if ratio else torch.arange(16.0).expand(2, 16).contiguous()
        seen: dict[str, torch.Tensor] = {}
        h1 = model.decoder.decoder_layers[0].register_forward_pre_hook(
            lambda m, a, seen=seen: seen.__setitem__("decoder_input", _t(a[0])))
        h2 = model.vit.embeddings.register_forward_hook(
            lambda m, a, out, seen=seen: seen.__setitem__("encoder_input", _t(out[0])))
        model.config.mask_ratio = ratio
        try:
            out = model(pixel_values=x, noise=noise)
        finally:
            model.config.mask_ratio = own
            h1.remove()
            h2.remove()
        tag = f"_r{ratio}"
        acts["noise" + tag] = noise
        acts["encoder_input" + tag] = seen["encoder_input"]
        if ratio:  # nothing hidden: no loss (0 / 0), and only the encoder is of interest
            acts["mask" + tag] = _t(out.mask)
            acts["ids_restore" + tag] = out.ids_restore.to(torch.int64).contiguous()
            acts["decoder_input" + tag] = seen["decoder_input"]
            acts["logits" + tag] = _t(out.logits)
            acts["loss" + tag] = _t(out.loss)
    return acts


@torch.no_grad()
def _last_hidden(model, x: torch.Tensor, noise: torch.Tensor, ratio: float) -> torch.Tensor:
    own = model.config.mask_ratio
    model.config.mask_ratio = ratio
    try:
        return _t(model.vit(pixel_values=x, noise=noise).last_hidden_state)
    finally:
        model.config.mask_ratio = own


@torch.no_grad()
def mae_fixture() -> None:
    from transformers.models.vit_mae.modeling_vit_mae import build_2d_sinusoidal_position_embedding

    model = build_mae()
    # transformers 5.24 leaves both fixed tables at zero in a model built from a config (the
    # encoder's initialize_weights returns early, the decoder's _init_weights zeroes its table);
    # pretrained checkpoints store them. Fill them with the library's own functions.
    model.vit.embeddings.patch_embeddings.projection._is_hf_initialized = False
    model.vit.embeddings.initialize_weights()
    model.decoder.initialize_weights(model.vit.embeddings.patch_embeddings.num_patches)
    tables = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    assert sorted(tables) == ["decoder.decoder_pos_embed", "vit.embeddings.position_embeddings"]
    randomize_(model, SEED_MAE, {"vit.embeddings.cls_token"})
    for n, p in model.named_parameters():  # the fixed sine-cosine positions stay what they are
        if n in tables:
            p.copy_(tables[n])
    for n, dim in (("vit.embeddings.position_embeddings", 32), ("decoder.decoder_pos_embed", 16)):
        ref = build_2d_sinusoidal_position_embedding(4, 4, dim, cls_token=True)
        ref = torch.cat([ref[..., dim // 2:], ref[..., :dim // 2]], dim=-1)[None]
        assert torch.equal(tables[n], ref), n
    model.eval()
    x = _input((2, 3, 16, 16))
    acts = run_mae(model, x)
    for ratio in MAE_RATIOS:
        tag = f"_r{ratio}"
        acts["last_hidden_state" + tag] = _last_hidden(model, x, acts["noise" + tag], ratio)
    folder = OUT_DIR / MAE_DIR
    if folder.exists():
        shutil.rmtree(folder)
    model.save_pretrained(str(folder), safe_serialization=True)
    for f in folder.iterdir():
        os.chmod(f, 0o644)
    meta = {
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "attn_implementation": model.config._attn_implementation,
        "seed": str(SEED_MAE),
        "input_seed": str(SEED_INPUT),
        "ratios": json.dumps(MAE_RATIOS),
        "noise": "torch.rand(2, 16) seeded 100 + index of the ratio; ratio 0: arange(16)",
    }
    _save_safetensors({"input": x, **acts}, OUT_DIR / MAE_EXPECTED, meta)


@torch.no_grad()
def verify_mae() -> None:
    from transformers import ViTMAEForPreTraining

    exp = load_file(str(OUT_DIR / MAE_EXPECTED))
    folder = OUT_DIR / MAE_DIR
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]
    model = ViTMAEForPreTraining.from_pretrained(str(folder)).eval()
    acts = run_mae(model, exp["input"])
    for k, v in acts.items():
        assert torch.equal(v, exp[k]), k
    for ratio in MAE_RATIOS:
        tag = f"_r{ratio}"
        assert torch.equal(_last_hidden(model, exp["input"], exp["noise" + tag], ratio),
                           exp["last_hidden_state" + tag]), tag
    sizes = {p.name: p.stat().st_size for p in [*folder.iterdir(), OUT_DIR / MAE_EXPECTED]}
    print(f"ok  {MAE_DIR}/ and {MAE_EXPECTED}: every output reproduced exactly; bytes {sizes}")


# --------------------------------------------------------------------------- verification


@torch.no_grad()
def verify() -> None:
    # (1) + (3): fresh timm models from the saved state
    for fname, cfg in (
        ("timm_vit_tiny.safetensors", TIMM_TINY_CFG),
        ("timm_vit_tiny_avgpool.safetensors", TIMM_AVG_CFG),
    ):
        path = OUT_DIR / fname
        saved = load_file(str(path))
        with safe_open(str(path), "pt") as f:
            meta_cfg = json.loads(f.metadata()["config"])
        state = {k[len("state.") :]: v for k, v in saved.items() if k.startswith("state.")}
        torch.manual_seed(999)  # different init on purpose: everything must come from the file
        model = build_timm(cfg, meta_cfg["fc_norm"])
        model.load_state_dict(state, strict=True)
        model.eval()
        acts = run_timm(model, saved["input"])
        for k, v in acts.items():
            assert torch.equal(v, saved[k]), (fname, k)
        print(f"ok  {fname}: logits + {len(acts) - 1} activations reproduced exactly")

    # (2): wrapped DDP-style checkpoint
    ref = load_file(str(OUT_DIR / "timm_vit_tiny.safetensors"))
    ckpt = torch.load(OUT_DIR / "timm_vit_tiny_wrapped.pth", map_location="cpu", weights_only=True)
    assert set(ckpt) == {"model", "epoch"} and ckpt["epoch"] == 3
    state = {k[len("module.") :]: v for k, v in ckpt["model"].items()}
    model = build_timm(TIMM_TINY_CFG, False)
    model.load_state_dict(state, strict=True)
    model.eval()
    assert torch.equal(model(ref["input"]), ref["logits"])
    print("ok  timm_vit_tiny_wrapped.pth: logits reproduced exactly")

    # (4): HF folders
    exp = load_file(str(OUT_DIR / "hf_vit_tiny_expected.safetensors"))
    with safe_open(str(OUT_DIR / "hf_vit_tiny_expected.safetensors"), "pt") as f:
        attn_impl = f.metadata()["attn_implementation"]
    for d, weights in (
        ("hf_vit_tiny", "model.safetensors"),
        ("hf_vit_tiny_bin", "pytorch_model.bin"),
    ):
        folder = OUT_DIR / d
        assert sorted(p.name for p in folder.iterdir()) == sorted(["config.json", weights]), d
        model = ViTForImageClassification.from_pretrained(
            str(folder), attn_implementation=attn_impl
        )
        model.eval()
        acts = run_hf(model, exp["input"])
        for k, v in acts.items():
            assert torch.equal(v, exp[k]), (d, k)
        print(f"ok  {d}/: logits + hidden states + final reproduced exactly")

    # (5)
    pos = load_file(str(OUT_DIR / "pos_resample.safetensors"))
    assert torch.equal(
        resample_abs_pos_embed(
            pos["posemb_in"], new_size=(10, 10), num_prefix_tokens=1, **POS_CALL
        ),
        pos["posemb_out"],
    )
    assert torch.equal(
        resample_abs_pos_embed(
            pos["posemb_in_noprefix"], new_size=(6, 6), num_prefix_tokens=0, **POS_CALL
        ),
        pos["posemb_out_noprefix"],
    )
    print("ok  pos_resample.safetensors reproduced exactly")


# --------------------------------------------------------------------------- main


def main() -> int:
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    if "--mae" in sys.argv[1:]:  # only the MAE fixture; the others stay as they are
        mae_fixture()
        verify_mae()
        return 0
    if timm is None:
        raise SystemExit("timm is not installed in this venv; only --mae runs without it.")
    if "--resolution" in sys.argv[1:]:  # only the resolution fixture; the others stay as they are
        resolution_fixture()
        verify_resolution()
        return 0

    tiny, tiny_cfg = timm_fixture(
        TIMM_TINY_CFG, False, SEED_TIMM_TINY, OUT_DIR / "timm_vit_tiny.safetensors"
    )
    wrapped = {"model": {"module." + k: _t(v) for k, v in tiny.state_dict().items()}, "epoch": 3}
    torch.save(wrapped, OUT_DIR / "timm_vit_tiny_wrapped.pth")
    os.chmod(OUT_DIR / "timm_vit_tiny_wrapped.pth", 0o644)

    # fc_norm=None is timm's default: for global_pool="avg" it resolves to True (model.norm becomes
    # Identity and a LayerNorm `fc_norm` is applied to the pooled features instead).
    _, avg_cfg = timm_fixture(
        TIMM_AVG_CFG, None, SEED_TIMM_AVG, OUT_DIR / "timm_vit_tiny_avgpool.safetensors"
    )
    print("avgpool model uses fc_norm:", avg_cfg["fc_norm"])

    hf_fixture()
    pos_fixture()
    resolution_fixture()
    verify()
    verify_resolution()

    total = 0
    for p in sorted(OUT_DIR.rglob("*")):
        if p.is_file():
            total += p.stat().st_size
            print(f"{p.stat().st_size:>9}  {p.relative_to(OUT_DIR)}")
    print(f"{total:>9}  total bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
