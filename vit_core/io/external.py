"""Bring your own ViT: load checkpoints made by timm, Hugging Face or your own training code.

Everything is mapped onto timm's parameter names (which `ViT` uses) and the geometry is read off
the tensors themselves. Pickled files (.pth/.pt/.bin/.ckpt) are only ever read with
torch.load(weights_only=True): a file that carries code is refused and its code never runs.
timm is used only by `load_timm_pretrained`, and only if it happens to be installed.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

from ..config import ViTConfig
from ..model import ViT
from ..resolution import resample_pos_embed
from .base import CheckpointError, ModelInfo, few, load_state_dict_strict

PICKLE_SUFFIXES = (".pth", ".pt", ".bin", ".ckpt")
WRAPPERS = ("state_dict", "model", "model_state", "module")  # training-checkpoint wrappers
PREFIXES = ("module.", "model.", "_orig_mod.")  # DDP, Lightning / wrappers, torch.compile
IMAGENET_FILE = Path(__file__).parent / "imagenet_classes.txt"

# Hugging Face ViT -> timm. Per-layer names: classic on-disk names and transformers 5's in-memory
# ones (what `torch.save(model.state_dict())` writes under transformers >= 5).
HF_TOP = {"embeddings.cls_token": "cls_token", "embeddings.position_embeddings": "pos_embed",
          "embeddings.patch_embeddings.projection": "patch_embed.proj",
          "layernorm": "norm", "classifier": "head",
          # DeiT distilled (DeiTForImageClassificationWithTeacher): [DIST] and its own head
          "embeddings.distillation_token": "dist_token", "cls_classifier": "head",
          "distillation_classifier": "head_dist"}
HF_MODEL_TYPES = ("vit", "deit", "vit_mae")  # plain pre-LN ViTs; DeiT is a ViT trained
# differently; ViTMAE's encoder is one (its decoder is read by load_mae, vit_core/io/mae_hf.py)
HF_RESAMPLE = {0: "nearest", 2: "bilinear", 3: "bicubic"}  # PIL's numbers in processor configs
HF_LAYER = {"layernorm_before": "norm1", "layernorm_after": "norm2",
            "attention.output.dense": "attn.proj", "attention.o_proj": "attn.proj",
            "intermediate.dense": "mlp.fc1", "output.dense": "mlp.fc2",
            "mlp.fc1": "mlp.fc1", "mlp.fc2": "mlp.fc2"}
HF_QKV = {"attention.attention.query": 0, "attention.attention.key": 1,
          "attention.attention.value": 2, "attention.q_proj": 0, "attention.k_proj": 1,
          "attention.v_proj": 2}
HF_LAYER_KEY = re.compile(r"^(?:encoder\.layer|layers)\.(\d+)\.(.+)\.(weight|bias)$")


def imagenet_class_names() -> tuple[str, ...]:
    """The 1000 ImageNet-1k class names (short forms, made by tools/make_imagenet_names.py)."""
    return tuple(IMAGENET_FILE.read_text(encoding="utf-8").splitlines())


# ---------------------------------------------------------------- reading files


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """Read a state dict from .safetensors or a pickle, unwrapped and with wrapper prefixes cut.

    Args:
        path: a .safetensors file, or a .pth/.pt/.bin/.ckpt file (read with weights_only=True).
    Raises:
        CheckpointError: missing, truncated, corrupt, code-carrying or tensor-free files.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"No file at '{path}'.")
    if path.suffix == ".safetensors":
        try:
            with safe_open(str(path), framework="pt") as f:
                obj = {k: f.get_tensor(k) for k in f.keys()}
        except (SafetensorError, OSError, ValueError) as e:
            raise CheckpointError(f"'{path.name}' is not a readable safetensors file ({e}).") from e
    elif path.suffix in PICKLE_SUFFIXES:
        obj = _torch_load(path)
    else:
        raise CheckpointError(f"'{path.name}': unknown file type; expected .safetensors or "
                              f"one of {', '.join(PICKLE_SUFFIXES)}.")
    return _unwrap(obj, path.name)


def _torch_load(path: Path):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # a damaged file can fail in many ways; all of them mean "unusable"
        text = str(e)
        if glob := re.search(r"unsupported GLOBAL (\S+)", text, re.IGNORECASE):
            raise CheckpointError(
                f"'{path.name}' was refused: it asks to run {glob.group(1)}, so it carries code, "
                f"not just tensors. Pickles are read with torch.load(weights_only=True) and "
                f"nothing in this one was run. Save just the weights (model.state_dict()), "
                f"ideally as .safetensors.") from e
        if "weights only load failed" in text.lower():  # bytes the safe unpickler cannot parse
            detail = re.search(r"Unsupported [^\n]*", text)
            raise CheckpointError(
                f"'{path.name}' cannot be read safely: it is corrupt, or a pickle not written by "
                f"torch.save ({detail.group(0) if detail else 'unreadable'}; nothing in it was "
                f"run).") from e
        raise CheckpointError(f"'{path.name}' is not a readable PyTorch file "
                              f"(truncated or corrupt?): {text.splitlines()[0][:200]}") from e


def _unwrap(obj, what: str) -> dict[str, torch.Tensor]:
    """{"model": {...}} / {"state_dict": ...} / ... -> the tensors, with common prefixes cut."""
    while isinstance(obj, dict) and not any(isinstance(v, torch.Tensor) for v in obj.values()):
        inner = next((obj[k] for k in WRAPPERS if isinstance(obj.get(k), dict)), None)
        if inner is None:
            break
        obj = inner
    if not isinstance(obj, dict) or not obj:
        raise CheckpointError(f"'{what}' holds no state dict (found {type(obj).__name__}).")
    state = {k: v for k, v in obj.items() if isinstance(v, torch.Tensor)}
    if not state:
        raise CheckpointError(f"'{what}' holds no tensors; its keys: {few(list(obj))}.")
    # strip a prefix only when every key has it (it came from a wrapper, not from the model)
    while (p := next((p for p in PREFIXES if all(k.startswith(p) for k in state)), None)):
        state = {k.removeprefix(p): v for k, v in state.items()}
    return state


# ---------------------------------------------------------------- Hugging Face


def is_hf_state(state: dict) -> bool:
    """True if the keys are Hugging Face ViT/DeiT names (`vit.embeddings...`, `deit.embeddings...`
    or `embeddings...`)."""
    return any(_hf_key(k).startswith("embeddings.patch_embeddings") for k in state)


def _hf_key(key: str) -> str:
    return key.removeprefix("vit.").removeprefix("deit.")


def is_hf_mae(hf_config: dict | None) -> bool:
    """A transformers ViTMAE folder: its encoder loads as a headless ViT, the decoder is left."""
    return (hf_config or {}).get("model_type") == "vit_mae"


def from_hf(state: dict, hf_config: dict | None = None) -> dict[str, torch.Tensor]:
    """Map a Hugging Face ViTForImageClassification / ViTModel / DeiT (distilled or not) / ViTMAE
    (its encoder: a headless ViT) state dict onto timm names.

    Args:
        state: HF tensors, with or without the `vit.` / `deit.` prefix (ViTModel has none).
        hf_config: the folder's config.json, checked for an architecture `ViT` can run; for
            model_type "vit_mae" the `decoder.*` tensors are left out.
    Returns:
        a timm-named state dict; q, k, v are concatenated (in that order) into `attn.qkv`.
        Unknown keys pass through unchanged, so the strict loader names them.
    """
    cfg = hf_config or {}
    _check_hf_config(cfg)
    out, qkv, ignored = {}, {}, []
    for key, value in state.items():
        k = _hf_key(key)
        if is_hf_mae(cfg) and key.startswith("decoder."):
            continue  # the MAE's decoder: not part of the encoder (load_mae reads it)
        if k.startswith("pooler.") or k == "embeddings.mask_token":
            ignored.append(key)  # ViTModel's pooler / MIM mask token: unused by a classifier
        elif m := HF_LAYER_KEY.match(k):
            i, name, kind = m.groups()
            if name in HF_QKV:
                qkv.setdefault((i, kind), [None] * 3)[HF_QKV[name]] = value
            elif name in HF_LAYER:
                out[f"blocks.{i}.{HF_LAYER[name]}.{kind}"] = value
            else:
                out[key] = value
        else:
            base, _, kind = k.rpartition(".")
            top = HF_TOP.get(k) or (HF_TOP.get(base) and f"{HF_TOP[base]}.{kind}")
            out[top or key] = value
    out.update(_joined_qkv(qkv))
    if ignored:
        warnings.warn(f"Ignored {few(list(ignored))}: the pooler (and mask token) are not used to "
                      f"classify; the head reads the final CLS token.", stacklevel=2)
    return out


def _check_hf_config(cfg: dict) -> None:
    """An HF config.json `ViT` can run: a ViT, DeiT or ViTMAE model with the exact GELU."""
    if cfg.get("model_type", "vit") not in HF_MODEL_TYPES:
        raise CheckpointError(f"This is a Hugging Face '{cfg['model_type']}' model, not a Vision "
                              f"Transformer: only ViT, DeiT and ViTMAE models can be shown here.")
    if cfg.get("hidden_act", "gelu") != "gelu":
        raise CheckpointError(f"hidden_act '{cfg['hidden_act']}' is not supported; ViT uses the "
                              f"exact GELU ('gelu').")


def _joined_qkv(qkv: dict) -> dict[str, torch.Tensor]:
    """{(layer, weight|bias): [q, k, v]} -> timm's `blocks.{i}.attn.qkv.{kind}`, rows q, k, v."""
    out = {}
    for (i, kind), parts in qkv.items():
        if any(p is None for p in parts):
            raise CheckpointError(f"Layer {i} lacks one of query/key/value {kind}.")
        out[f"blocks.{i}.attn.qkv.{kind}"] = torch.cat(parts, dim=0)  # rows: q, k, v
    return out


# ---------------------------------------------------------------- geometry
def _num_heads(said: int | None, passed: int | None, D: int) -> int:
    """H: what config.json says, else what the caller passed, else D // 64 (d_k = 64)."""
    if said and passed and said != passed:
        raise ValueError(f"config.json says {said} heads but num_heads={passed} was passed.")
    heads = said or passed
    if heads is None:
        if D % 64:
            raise ValueError(f"The width D={D} is not a multiple of 64, so the number of heads "
                             f"cannot be guessed from the usual d_k = 64; pass num_heads=… "
                             f"(e.g. load_model(path, num_heads=3)).")
        heads = D // 64
    return heads



def infer_config(state: dict, hf_config: dict | None = None, num_heads: int | None = None,
                 img_size: int | None = None, mean=None, std=None) -> ViTConfig:
    """Read a ViTConfig off timm-named tensors (and an HF config.json where there is one).

    Args:
        state: timm-named state dict.
        hf_config: HF config.json contents: heads, LayerNorm eps and class names come from it.
        num_heads: H when neither the config nor the tensors can tell (default: D // 64).
        img_size: run at this size instead of the trained one (positions are resampled).
        mean, std: input normalisation; default (0.5, 0.5, 0.5), as in timm's augreg ViTs and HF
            ViT. Original ImageNet-normalised checkpoints need the ImageNet statistics here.
    Raises:
        ValueError: the tensors do not determine a valid ViT; the message says what to pass.
    """
    cfg = hf_config or {}
    D, C, P, P2 = state["patch_embed.proj.weight"].shape
    if P != P2:
        raise ValueError(f"Non-square {P}x{P2} patches are not supported.")
    depth = len({int(m.group(1)) for k in state if (m := re.match(r"blocks\.(\d+)\.", k))})
    class_token, dist_token = "cls_token" in state, "dist_token" in state
    n = state["pos_embed"].shape[1] - int(class_token) - int(dist_token)
    grid = math.isqrt(n)
    if grid * grid != n:
        raise ValueError(f"pos_embed has {n} patch positions, not a square grid (register tokens "
                         f"or a position-free CLS are not supported).")
    heads = _num_heads(cfg.get("num_attention_heads"), num_heads, D)
    num_classes = state["head.weight"].shape[0] if "head.weight" in state else 0
    fc_norm = "fc_norm.weight" in state
    hidden = state["blocks.0.mlp.fc1.weight"].shape[0]
    mlp_ratio = hidden / D if int(D * (hidden / D)) == hidden else (hidden + 0.5) / D
    return ViTConfig(
        img_size=img_size or grid * P, patch_size=P, in_chans=C, embed_dim=D, depth=depth,
        num_heads=heads, mlp_ratio=mlp_ratio, num_classes=num_classes, class_token=class_token,
        dist_token=dist_token,
        global_pool="avg" if fc_norm or not class_token else "token", fc_norm=fc_norm,
        norm_eps=cfg.get("layer_norm_eps", 1e-6), qkv_bias="blocks.0.attn.qkv.bias" in state,
        mean=tuple(mean or (0.5,) * C), std=tuple(std or (0.5,) * C),
        class_names=_class_names(cfg, num_classes))


def _class_names(cfg: dict, num_classes: int) -> tuple[str, ...]:
    labels = cfg.get("id2label") or {}
    names = tuple(str(labels.get(str(i), labels.get(i, ""))) for i in range(num_classes))
    # HF fills id2label with LABEL_0, LABEL_1, ... when none were given: those say nothing
    if labels and all(names) and names != tuple(f"LABEL_{i}" for i in range(num_classes)):
        return names
    return imagenet_class_names() if num_classes == 1000 else ()


# ---------------------------------------------------------------- loading


def looks_external(path: str | Path) -> bool:
    """True for a folder, a pickle, or a readable .safetensors without our config metadata."""
    path = Path(path)
    if path.is_dir() or (path.is_file() and path.suffix in PICKLE_SUFFIXES):
        return True
    if not (path.is_file() and path.suffix == ".safetensors"):
        return False
    try:
        with safe_open(str(path), framework="pt") as f:
            return "vit_explainer.config" not in (f.metadata() or {})
    except (SafetensorError, OSError, ValueError):
        return False  # unreadable: load_checkpoint says so


def read_folder(folder: Path) -> tuple[dict, dict, dict]:
    """A model folder's config.json, its preprocessor_config.json ({} if none) and its weights.

    The folder is a Hugging Face `save_pretrained` folder (transformers' config.json) or a timm
    Hub repo (config.json with `architecture` and `pretrained_cfg`); both keep the weights in
    model.safetensors or pytorch_model.bin, possibly sharded.
    """
    try:
        cfg = json.loads((folder / "config.json").read_text())
    except FileNotFoundError as e:
        raise CheckpointError(f"The folder '{folder.name}' has no config.json; expected a "
                              f"Hugging Face or timm model folder.") from e
    except ValueError as e:
        raise CheckpointError(f"'{folder.name}/config.json' is not valid JSON ({e}).") from e
    pre_file = folder / "preprocessor_config.json"
    try:
        pre = json.loads(pre_file.read_text()) if pre_file.is_file() else {}
    except ValueError as e:
        raise CheckpointError(f"'{folder.name}/preprocessor_config.json' is not valid JSON "
                              f"({e}).") from e
    for name in ("model.safetensors", "pytorch_model.bin"):
        index = folder / f"{name}.index.json"  # sharded: the index names every shard
        if index.is_file():
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
            return cfg, pre, {k: v for s in shards for k, v in read_state_dict(folder / s).items()}
        if (folder / name).is_file():
            return cfg, pre, read_state_dict(folder / name)
    raise CheckpointError(f"The folder '{folder.name}' has config.json but no model.safetensors "
                          f"or pytorch_model.bin.")


def preprocessing_from_hf(pre: dict, img_size: int) -> dict:
    """ViTConfig's preprocessing fields from a transformers preprocessor_config.json.

    ViTImageProcessor / DeiTImageProcessor resize both sides to `size` (a legacy int N means
    N x N; the aspect ratio is not kept), then centre-crop `crop_size` if `do_center_crop`.
    """
    if not pre:
        return {}
    size = pre.get("size", img_size)
    if isinstance(size, dict) and "shortest_edge" in size:
        mode, r = "shortest", int(size["shortest_edge"])
    else:
        mode, r = "square", int(size.get("height", img_size) if isinstance(size, dict) else size)
    crop = pre.get("crop_size", r) if pre.get("do_center_crop") else r
    crop = int(crop.get("height", r) if isinstance(crop, dict) else crop)
    r = round(r * img_size / crop) if crop != img_size else r  # the model runs at img_size
    out = {"resize_mode": mode, "resize_size": max(r, img_size) if r != img_size else 0,
           "interpolation": HF_RESAMPLE.get(pre.get("resample", 2), "bicubic")}
    if "image_mean" in pre and "image_std" in pre:
        out.update(mean=tuple(pre["image_mean"]), std=tuple(pre["image_std"]))
    return out


def preprocessing_from_timm(pcfg: dict, img_size: int) -> dict:
    """ViTConfig's preprocessing fields from timm's pretrained_cfg (its eval transform):
    the shorter side to floor(img_size / crop_pct), centre-crop img_size ("squash": both sides)."""
    if not pcfg:
        return {}
    r = math.floor(img_size / float(pcfg.get("crop_pct") or 1.0))
    interpolation = pcfg.get("interpolation", "bicubic")
    out = {"resize_mode": "square" if pcfg.get("crop_mode") == "squash" else "shortest",
           "resize_size": r if r != img_size else 0,
           "interpolation": interpolation if interpolation in HF_RESAMPLE.values() else "bicubic"}
    if pcfg.get("mean") and pcfg.get("std"):
        out.update(mean=tuple(pcfg["mean"]), std=tuple(pcfg["std"]))
    return out


def load_external(path: str | Path, num_heads: int | None = None, img_size: int | None = None,
                  mean=None, std=None, name: str | None = None) -> ViT:
    """Load a timm / Hugging Face / plain-PyTorch ViT checkpoint into our ViT, in eval mode.

    Args:
        path: a state-dict file (.safetensors/.pth/.pt/.bin/.ckpt, optionally wrapped as
            {"model": ...} etc.), a Hugging Face save_pretrained folder, or a timm Hub repo folder.
        num_heads: H, when the checkpoint does not say (bare timm files); default D // 64.
        img_size: run at another image size; position embeddings are resampled (bicubic).
        mean, std: input normalisation, if not what the folder's config says (default 0.5).
        name: what to call the model (default: the file or folder name).
    """
    path = Path(path)
    cfg, pre, state = read_folder(path) if path.is_dir() else (None, {}, read_state_dict(path))
    timm_repo = cfg is not None and "architecture" in cfg
    hf = not timm_repo and (cfg is not None or is_hf_state(state))
    if hf:
        state = from_hf(state, cfg)
        cfg = cfg or {"layer_norm_eps": 1e-12}  # a bare HF file: HF's LayerNorm eps
    _check_vit_keys(state, path)
    args = (cfg.get("model_args") or {}) if timm_repo else {}
    try:
        config = infer_config(state, cfg if hf else None, num_heads or args.get("num_heads"),
                              img_size)
        config = config.replace(**_preprocessing(config, cfg, pre, timm_repo, mean, std))
    except ValueError as e:
        raise CheckpointError(f"'{path.name}': {e}") from e
    model = _build(state, config, path.name)
    kind = ("timm Hub repo" if timm_repo else "Hugging Face checkpoint" if hf
            else "timm checkpoint")
    # trained=True means "not random weights made by this app" (presets are the ones that are):
    # whether a file's weights were trained the app cannot tell, so the model card says where
    # they come from rather than "trained" (ui/sidebar.weights_origin).
    model.info = ModelInfo(name=name or path.name, source=str(path), trained=True, metrics={},
                           description=kind)
    return model


def _check_vit_keys(state: dict, path: Path) -> None:
    needed = ("patch_embed.proj.weight", "pos_embed", "blocks.0.mlp.fc1.weight")
    if any(k not in state for k in needed):
        also = (" (and has no ViT Explainer config in its metadata)"
                if path.suffix == ".safetensors" else "")
        raise CheckpointError(f"'{path.name}' does not look like a ViT checkpoint{also}: it lacks "
                              f"{', '.join(k for k in needed if k not in state)}. "
                              f"Its keys: {few(list(state))}.")


def _preprocessing(config: ViTConfig, cfg, pre: dict, timm_repo: bool, mean, std) -> dict:
    """The config fields a folder's preprocessing sets (size, interpolation, mean, std; a timm
    repo's pooling and label names), the caller's mean and std over them."""
    args = (cfg.get("model_args") or {}) if timm_repo else {}
    prep = (preprocessing_from_timm(cfg.get("pretrained_cfg") or {}, config.img_size)
            if timm_repo else preprocessing_from_hf(pre, config.img_size))
    prep.update({k: tuple(v) for k, v in (("mean", mean), ("std", std)) if v is not None})
    if timm_repo:
        prep.update(global_pool=cfg.get("global_pool", args.get("global_pool",
                                                                config.global_pool)),
                    class_names=_timm_label_names(cfg, config))
    return prep


def _timm_label_names(cfg: dict, config: ViTConfig) -> tuple[str, ...]:
    names = cfg.get("label_names") or ()
    if len(names) == config.num_classes:
        return tuple(str(n) for n in names)
    return config.class_names


def _build(state: dict, config: ViTConfig, what: str) -> ViT:
    """ViT(config) with `state` loaded strictly, positions resampled if the grid changed."""
    n_pre = config.num_prefix_tokens
    if state["pos_embed"].shape[1] != config.num_image_tokens:
        state = {**state, "pos_embed": resample_pos_embed(state["pos_embed"],
                                                          (config.grid, config.grid), n_pre)}
    model = ViT(config)
    load_state_dict_strict(model, state, f"'{what}'")
    return model.eval()


def load_timm_pretrained(name: str, img_size: int | None = None) -> ViT:
    """`load_model("timm:<name>")`: timm's pretrained weights, if timm is installed and online.

    Args:
        name: a timm model name, e.g. "vit_base_patch16_224".
        img_size: run at another image size (positions resampled).
    """
    try:
        import timm  # optional, never a project dependency: imported only when asked for
    except ImportError as e:
        raise CheckpointError(
            f"timm is not installed, so 'timm:{name}' cannot be fetched: `pip install timm` here, "
            f"or in a separate environment save timm.create_model('{name}', pretrained=True)"
            f".state_dict() to a file and load that file.") from e
    try:
        net = timm.create_model(name, pretrained=True)
    except Exception as e:  # unknown name, offline, hub errors: all mean "no weights"
        raise CheckpointError(f"Could not get timm's pretrained '{name}' (offline, or not a "
                              f"timm model name?): {str(e).splitlines()[0][:200]}") from e
    return from_timm_model(net, name, img_size)


def from_timm_model(net, name: str, img_size: int | None = None) -> ViT:
    """Convert an instantiated timm VisionTransformer (weights, pretrained_cfg) into our ViT."""
    state = {k: v.detach() for k, v in net.state_dict().items()}
    if "patch_embed.proj.weight" not in state or not hasattr(net, "blocks"):
        raise CheckpointError(f"timm's '{name}' is not a ViT; its keys: {few(list(state))}.")
    pcfg = dict(getattr(net, "pretrained_cfg", None) or {})
    try:
        config = infer_config(state, num_heads=net.blocks[0].attn.num_heads, img_size=img_size)
        config = config.replace(norm_eps=getattr(net.blocks[0].norm1, "eps", 1e-6),
                                global_pool=getattr(net, "global_pool", config.global_pool),
                                **preprocessing_from_timm(pcfg, config.img_size))
    except ValueError as e:
        raise CheckpointError(f"timm's '{name}': {e}") from e
    model = _build(state, config, f"timm:{name}")
    model.info = ModelInfo(name=f"timm:{name}", source="timm", trained=True, metrics={},
                           description="timm pretrained")
    return model
