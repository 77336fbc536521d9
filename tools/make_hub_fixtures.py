"""Generate the Hugging Face Hub-format test fixtures in tests/fixtures/hub* (dev-only tool).

This script is NOT part of the project runtime and is never run by the tests or CI. Like
tools/make_fixtures.py it needs timm and transformers (and torchvision, which timm and the
transformers image processors use), so it runs only in a separate, throw-away virtualenv:

    python3.11 -m venv /work/fixture-venv
    /work/fixture-venv/bin/pip install torch==2.14.1 torchvision==0.29.1
    /work/fixture-venv/bin/pip install torch==2.14.1 timm transformers safetensors
    /work/fixture-venv/bin/pip install pillow==12.3.0   # the project's pillow (requirements.txt)

Then, from the repository root:

    /work/fixture-venv/bin/python tools/make_hub_fixtures.py

It writes:
    tests/fixtures/hub/<org>/<name>/       one folder per Hub repo, holding the files the real repo
                                           would hold (config.json, model.safetensors and, for the
                                           transformers repos, preprocessor_config.json)
    tests/fixtures/hub_expected/<org>__<name>.safetensors
                                           input, logits and hidden states computed by the library
    tests/fixtures/hub_expected/preprocess.safetensors (+ preprocess_*.json)
                                           the libraries' preprocessing of tests/fixtures/photo.jpg
    tests/fixtures/photo.jpg               only if it is missing: scikit-image's CC0 photo
                                           chelsea.png re-encoded (needs `pip install scikit-image`)

All weights are random (seeded, see randomize_ in tools/make_fixtures.py); nothing is downloaded.
Everything is float32 on CPU with one thread. Re-running with the same library versions on the
same kind of CPU reproduces every file bit for bit (other CPUs may change activations by ~1e-5).
At the end every repo is loaded back with the real library (transformers `from_pretrained(folder)`,
timm `create_model("local-dir:<folder>", pretrained=True)`) and must reproduce the saved outputs
exactly. Layouts: tests/fixtures/README.md.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # so that `tools.make_fixtures` imports when run as a script

import numpy as np  # noqa: E402
import PIL  # noqa: E402
import safetensors  # noqa: E402
import timm  # noqa: E402
import timm.data  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
import transformers  # noqa: E402
from PIL import Image  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from timm.models._hub import save_for_hf  # noqa: E402
from transformers import (  # noqa: E402
    AutoConfig,
    AutoImageProcessor,
    BertConfig,
    BertModel,
    DeiTConfig,
    DeiTImageProcessor,
    ViTConfig,
    ViTImageProcessor,
)

from tools.make_fixtures import (  # noqa: E402
    SEED_INPUT,
    _input,
    _save_safetensors,
    _t,
    assert_plain_timm_vit,
    randomize_,
    run_timm,
)

FIXTURES = ROOT / "tests" / "fixtures"
HUB = FIXTURES / "hub"
EXPECTED = FIXTURES / "hub_expected"
PHOTO = FIXTURES / "photo.jpg"
PHOTO_SOURCE = (
    "scikit-image 0.26.0 skimage/data/chelsea.png ('Chelsea the cat', 451x300 RGB), "
    "re-encoded as JPEG quality 92 by PIL 12.3.0"
)
PHOTO_LICENSE = (
    "CC0 by the photographer (Stefan van der Walt); skimage.data.chelsea docstring: "
    "'No copyright restrictions. CC0 by the photographer (Stefan van der Walt).'"
)

IMAGENET_MEAN = [0.485, 0.456, 0.406]  # timm.data.IMAGENET_DEFAULT_MEAN
IMAGENET_STD = [0.229, 0.224, 0.225]
HALF = [0.5, 0.5, 0.5]

HIDDEN_STATES_DOC = (
    "hidden_states.0 = embeddings (patch tokens with the prefix tokens prepended, plus the "
    "position embedding) = input of block 0; hidden_states.i = output of block i-1 (before any "
    "final norm); hidden_states_last = output of the final LayerNorm over all tokens"
)


def _key(repo: str) -> str:
    return repo.replace("/", "__")


def _json_text(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


# --------------------------------------------------------------------------- the repos


@dataclass(frozen=True)
class HFRepo:
    repo: str  # "<org>/<name>": the folder tests/fixtures/hub/<org>/<name>/
    arch: str  # transformers class; save_pretrained writes it to config.json "architectures"
    seed: int
    config: dict  # ViTConfig / DeiTConfig keyword arguments
    labels: tuple[str, ...] = ()
    processor: dict = field(default_factory=dict)  # image processor keyword arguments
    processor_class: type = ViTImageProcessor
    legacy_processor: dict | None = None  # written by hand instead, in the pre-2023 Hub form


HF_REPOS = [
    HFRepo(
        "tiny-org/vit-cls",
        "ViTForImageClassification",
        5101,
        dict(image_size=48, patch_size=16, hidden_size=32, num_hidden_layers=2,
             num_attention_heads=2, intermediate_size=128),
        labels=("cat", "dog", "bird", "fish", "frog"),
        processor=dict(size={"height": 48, "width": 48}, resample=2, image_mean=HALF,
                       image_std=HALF),
    ),
    HFRepo(
        # like facebook/dino-vits16: a ViTModel (with ViTModel's default pooler), no classifier
        "tiny-org/vit-headless",
        "ViTModel",
        5102,
        dict(image_size=32, patch_size=8, hidden_size=36, num_hidden_layers=2,
             num_attention_heads=3, intermediate_size=144),
        processor=dict(size={"height": 32, "width": 32}, resample=3, image_mean=IMAGENET_MEAN,
                       image_std=IMAGENET_STD),
    ),
    HFRepo(
        # like facebook/deit-tiny-patch16-224: ViT weights + a DeiT processor (256 -> crop 224),
        # scaled down: resize to 37x37, centre-crop 32x32
        "tiny-org/deit-cls",
        "ViTForImageClassification",
        5103,
        dict(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
             num_attention_heads=2, intermediate_size=128),
        labels=("red", "green", "blue", "yellow"),
        processor_class=DeiTImageProcessor,
        processor=dict(size={"height": 37, "width": 37}, crop_size={"height": 32, "width": 32},
                       resample=3, image_mean=IMAGENET_MEAN, image_std=IMAGENET_STD),
    ),
    HFRepo(
        # like facebook/deit-tiny-distilled-patch16-224 (model_type "deit", CLS + distillation
        # token, two heads); its preprocessor_config.json is in the legacy form older Hub repos use
        "tiny-org/deit-distilled",
        "DeiTForImageClassificationWithTeacher",
        5104,
        dict(image_size=32, patch_size=8, hidden_size=48, num_hidden_layers=2,
             num_attention_heads=3, intermediate_size=192),
        labels=("cat", "dog", "bird", "fish", "frog"),
        processor_class=DeiTImageProcessor,
        legacy_processor={
            "crop_size": 32,
            "do_center_crop": True,
            "do_normalize": True,
            "do_resize": True,
            "feature_extractor_type": "DeiTFeatureExtractor",
            "image_mean": IMAGENET_MEAN,
            "image_std": IMAGENET_STD,
            "resample": 3,
            "size": 35,
        },
    ),
    HFRepo(
        "tiny-org/vit-1block-1head-p14",
        "ViTForImageClassification",
        5105,
        dict(image_size=28, patch_size=14, hidden_size=32, num_hidden_layers=1,
             num_attention_heads=1, intermediate_size=128),
        labels=("zero", "one", "two"),
        processor=dict(size={"height": 28, "width": 28}, resample=2, image_mean=HALF,
                       image_std=HALF),
    ),
]


@dataclass(frozen=True)
class TimmRepo:
    repo: str
    seed: int
    model_args: dict  # overrides of the base architecture; timm records them in config.json
    data_config: dict  # preprocessing written into pretrained_cfg
    architecture: str = "vit_tiny_patch16_224"  # a timm entrypoint, so stock timm can rebuild it


TIMM_REPOS = [
    TimmRepo(
        "timm/vit_tiny_cls.test",
        5201,
        dict(img_size=32, patch_size=8, embed_dim=48, depth=2, num_heads=3, num_classes=5),
        # mean/std stay the base tag's 0.5 (augreg)
        dict(interpolation="bicubic", crop_pct=0.9, crop_mode="center"),
    ),
    TimmRepo(
        "timm/vit_tiny_avg_fcnorm.test",
        5202,
        dict(img_size=48, patch_size=16, embed_dim=32, depth=2, num_heads=2, num_classes=4,
             global_pool="avg", fc_norm=True),
        dict(interpolation="bicubic", crop_pct=0.875, crop_mode="center", mean=IMAGENET_MEAN,
             std=IMAGENET_STD),
    ),
    TimmRepo(
        # fc_norm left at timm's default (None), which becomes True for global_pool="avg"
        "timm/vit_tiny_avg_nocls.test",
        5203,
        dict(img_size=32, patch_size=8, embed_dim=40, depth=1, num_heads=2, num_classes=3,
             class_token=False, global_pool="avg"),
        dict(interpolation="bilinear", crop_pct=1.0, crop_mode="center", mean=IMAGENET_MEAN,
             std=IMAGENET_STD),
    ),
]

BERT_REPO = "tiny-org/bert-not-vit"
SEED_BERT = 5301

# The 224-pixel preprocessing references (real checkpoints' settings)
HF_VIT_224 = dict(size={"height": 224, "width": 224}, resample=2, image_mean=HALF, image_std=HALF)
HF_DEIT_224 = dict(size={"height": 256, "width": 256}, crop_size={"height": 224, "width": 224},
                   resample=3, image_mean=IMAGENET_MEAN, image_std=IMAGENET_STD)
TIMM_CROP09 = dict(input_size=[3, 224, 224], interpolation="bicubic", crop_pct=0.9,
                   crop_mode="center", mean=IMAGENET_MEAN, std=IMAGENET_STD)


def _versions() -> dict[str, str]:
    return {
        "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "timm_version": timm.__version__,
        "transformers_version": transformers.__version__,
        "safetensors_version": safetensors.__version__,
        "pillow_version": PIL.__version__,
        "numpy_version": np.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


def _check_pillow_pin() -> None:
    """Pixels must come from the pillow the project runs (JPEG decoding and PIL resize)."""
    pin = re.search(r"^pillow==(\S+)", (ROOT / "requirements.txt").read_text(), re.M)
    assert pin and PIL.__version__ == pin.group(1), (
        f"pillow {PIL.__version__} in this venv, requirements.txt pins {pin and pin.group(1)}: "
        f"pip install pillow=={pin and pin.group(1)}"
    )


# --------------------------------------------------------------------------- photo


def make_photo() -> None:
    """Write tests/fixtures/photo.jpg once from scikit-image's CC0 cat photo; keep it afterwards."""
    if PHOTO.exists():
        return
    spec = importlib.util.find_spec("skimage")
    assert spec is not None, "photo.jpg is missing: pip install scikit-image to recreate it"
    src = Path(spec.origin).parent / "data" / "chelsea.png"
    Image.open(src).convert("RGB").save(PHOTO, "JPEG", quality=92)


def load_photo() -> Image.Image:
    img = Image.open(PHOTO)
    img.load()
    assert img.mode == "RGB" and img.size == (451, 300), (img.mode, img.size)
    return img


# --------------------------------------------------------------------------- transformers


def build_hf(spec: HFRepo) -> torch.nn.Module:
    cls = getattr(transformers, spec.arch)
    config_cls = DeiTConfig if spec.arch.startswith("DeiT") else ViTConfig
    kwargs = dict(spec.config, num_channels=3, hidden_act="gelu", qkv_bias=True,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    if spec.labels:
        kwargs["id2label"] = dict(enumerate(spec.labels))
        kwargs["label2id"] = {name: i for i, name in enumerate(spec.labels)}
    torch.manual_seed(spec.seed)
    model = cls(config_cls(**kwargs))
    embed = ["cls_token", "position_embeddings"]
    if spec.arch.startswith("DeiT"):
        embed.append("distillation_token")
    prefix = f"{model.base_model_prefix}." if model.base_model is not model else ""
    randomize_(model, spec.seed, {f"{prefix}embeddings.{n}" for n in embed})
    return model.eval()


@torch.no_grad()
def run_hf(model: torch.nn.Module, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Outputs by name; hidden states are cross-checked against hooks on the modules themselves."""
    base = model.base_model
    hooked: dict[str, torch.Tensor] = {}

    def keep(name):
        return lambda m, a, out: hooked.__setitem__(name, _t(out))

    handles = [base.embeddings.register_forward_hook(keep("hidden_states.0")),
               base.layernorm.register_forward_hook(keep("hidden_states_last"))]
    for i, layer in enumerate(base.layers):
        handles.append(layer.register_forward_hook(keep(f"hidden_states.{i + 1}")))
    out = model(pixel_values=x, output_hidden_states=True, interpolate_pos_encoding=False)
    for h in handles:
        h.remove()
    assert len(out.hidden_states) == len(base.layers) + 1
    for i, hs in enumerate(out.hidden_states):
        assert torch.equal(_t(hs), hooked[f"hidden_states.{i}"]), i
    acts = dict(hooked)
    for name in ("logits", "cls_logits", "distillation_logits", "last_hidden_state",
                 "pooler_output"):
        value = getattr(out, name, None)
        if value is not None:
            acts[name] = _t(value)
    return acts


def check_hf_heads(model: torch.nn.Module, acts: dict[str, torch.Tensor]) -> None:
    """The heads do what the README says they do."""
    last = acts["hidden_states_last"]
    close = dict(atol=1e-5, rtol=1e-5)
    if "pooler_output" in acts:  # ViTModel: tanh(dense(CLS))
        assert torch.equal(acts["last_hidden_state"], last)
        pooled = torch.tanh(model.pooler.dense(last[:, 0]))
        assert torch.allclose(pooled, acts["pooler_output"], **close)
    elif "cls_logits" in acts:  # DeiT with teacher: CLS head, distillation head, their mean
        assert torch.allclose(model.cls_classifier(last[:, 0]), acts["cls_logits"], **close)
        assert torch.allclose(
            model.distillation_classifier(last[:, 1]), acts["distillation_logits"], **close
        )
        mean = (acts["cls_logits"] + acts["distillation_logits"]) / 2
        assert torch.allclose(mean, acts["logits"], **close)
    else:
        assert torch.allclose(model.classifier(last[:, 0]), acts["logits"], **close)


def write_processor(spec: HFRepo, folder: Path) -> None:
    if spec.legacy_processor is not None:
        (folder / "preprocessor_config.json").write_text(_json_text(spec.legacy_processor))
    else:
        spec.processor_class(**spec.processor).save_pretrained(str(folder))


def hf_fixture(spec: HFRepo) -> None:
    folder = HUB / spec.repo
    model = build_hf(spec)
    model.save_pretrained(str(folder))
    write_processor(spec, folder)
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json", "model.safetensors", "preprocessor_config.json"
    ], spec.repo

    cfg = model.config
    x = _input((2, 3, cfg.image_size, cfg.image_size))
    acts = run_hf(model, x)
    check_hf_heads(model, acts)
    meta = _versions() | {
        "repo": spec.repo,
        "library": "transformers",
        "architecture": spec.arch,
        "attn_implementation": cfg._attn_implementation,
        "seed": str(spec.seed),
        "input_seed": str(SEED_INPUT),
        "hidden_states": HIDDEN_STATES_DOC,
    }
    _save_safetensors({"input": x} | acts, EXPECTED / f"{_key(spec.repo)}.safetensors", meta)


def hf_photo(folder: Path, img: Image.Image, backend: str = "torchvision") -> torch.Tensor:
    """The photo through the repo's processor, checked against the README's recipe."""
    proc = AutoImageProcessor.from_pretrained(str(folder), backend=backend)
    pix = proc(img, return_tensors="pt")["pixel_values"][0]
    check_hf_reference(f"{folder.name} {backend}", proc, img, pix)
    return pix


# --------------------------------------------------------------------------- timm


def build_timm(spec: TimmRepo) -> torch.nn.Module:
    torch.manual_seed(spec.seed)
    model = timm.create_model(spec.architecture, pretrained=False, **spec.model_args)
    assert_plain_timm_vit(model)
    embed = {"pos_embed"} | ({"cls_token"} if model.cls_token is not None else set())
    randomize_(model, spec.seed, embed)
    return model.eval()


@torch.no_grad()
def run_timm_named(model: torch.nn.Module, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """run_timm's activations under the hub_expected names, plus the pooled features."""
    acts = run_timm(model, x)
    named = {"logits": acts["logits"], "hidden_states.0": acts["embed"],
             "hidden_states_last": acts["norm"]}
    for i in range(len(model.blocks)):
        named[f"hidden_states.{i + 1}"] = acts[f"blocks.{i}"]
    if "fc_norm" in acts:  # hooked inside the forward: global_pool output, fc_norm output
        named["pooled"], named["pre_logits"] = acts["pooled"], acts["fc_norm"]
    else:  # token pooling and no fc_norm: the head reads the CLS token of the final norm
        assert model.global_pool == "token"
        named["pooled"] = named["pre_logits"] = _t(acts["norm"][:, 0])
    # allclose, not equal: a mean over a differently strided copy may round differently
    assert torch.allclose(model.forward_head(acts["norm"], pre_logits=True), named["pre_logits"],
                          atol=1e-6, rtol=1e-6)
    return named


def timm_fixture(spec: TimmRepo) -> None:
    folder = HUB / spec.repo
    model = build_timm(spec)
    save_for_hf(model, str(folder), model_config={"pretrained_cfg": {"tag": "test"}},
                data_config=spec.data_config, safe_serialization=True)
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]

    size = spec.model_args["img_size"]
    x = _input((2, 3, size, size))
    acts = run_timm_named(model, x)
    # the pooling the README describes: CLS token, or the mean over the patch tokens only
    feats, n_prefix = acts["hidden_states_last"], model.num_prefix_tokens
    by_hand = feats[:, 0] if model.global_pool == "token" else feats[:, n_prefix:].mean(dim=1)
    assert torch.allclose(by_hand, acts["pooled"], atol=1e-6, rtol=1e-6)
    meta = _versions() | {
        "repo": spec.repo,
        "library": "timm",
        "architecture": spec.architecture,
        "model_args": json.dumps(spec.model_args, sort_keys=True),
        "fc_norm": json.dumps(not isinstance(model.fc_norm, torch.nn.Identity)),
        "final_norm_is_identity": json.dumps(isinstance(model.norm, torch.nn.Identity)),
        "num_prefix_tokens": str(n_prefix),
        "global_pool": model.global_pool,
        "attention_impl": "fused_sdpa" if model.blocks[0].attn.fused_attn else "eager",
        "seed": str(spec.seed),
        "input_seed": str(SEED_INPUT),
        "hidden_states": HIDDEN_STATES_DOC
        + " (Identity when fc_norm is used); pooled = global_pool output; "
        "pre_logits = fc_norm(pooled), the head's input",
    }
    _save_safetensors({"input": x} | acts, EXPECTED / f"{_key(spec.repo)}.safetensors", meta)


def load_timm(repo: str) -> torch.nn.Module:
    """Stock timm, reading nothing but the repo folder (config.json + model.safetensors)."""
    return timm.create_model(f"local-dir:{HUB / repo}", pretrained=True).eval()


def timm_photo(model: torch.nn.Module, img: Image.Image) -> torch.Tensor:
    cfg = timm.data.resolve_data_config({}, model=model)
    return timm.data.create_transform(**cfg)(img)


# --------------------------------------------------------------------------- BERT (not a ViT)


def bert_fixture() -> None:
    folder = HUB / BERT_REPO
    cfg = BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=16, type_vocab_size=2)
    torch.manual_seed(SEED_BERT)  # BERT's own (seeded) init; the tensors only need to exist
    BertModel(cfg).save_pretrained(str(folder))
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]


# --------------------------------------------------------------------------- preprocessing


def reference_pixels(img: Image.Image, resize_hw, crop_hw, *, resample: int, engine: str,
                     crop_round: str, mean, std) -> torch.Tensor:
    """The pipelines as tests/fixtures/README.md describes them, with PIL or torch only.

    engine "pil": PIL Image.resize (uint8 in, uint8 out). engine "torch_uint8": F.interpolate
    on the uint8 tensor with antialias=True (what torchvision does on CPU for uint8).
    crop_round "floor" (transformers) or "round" (torchvision CenterCrop, Python's round).
    Then /255 in float32 and (x - mean) / std.
    """
    (h, w), (ch, cw) = resize_hw, crop_hw
    if engine == "pil":
        u8 = torch.from_numpy(np.array(img.resize((w, h), resample))).permute(2, 0, 1)
    else:
        mode = {2: "bilinear", 3: "bicubic"}[resample]
        src = torch.from_numpy(np.array(img)).permute(2, 0, 1).contiguous()[None]
        u8 = F.interpolate(src, size=(h, w), mode=mode, antialias=True, align_corners=False)[0]
    if crop_round == "floor":
        top, left = (h - ch) // 2, (w - cw) // 2
    else:
        top, left = int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0))
    x = u8[:, top : top + ch, left : left + cw].float() / 255
    mean, std = torch.tensor(mean).view(3, 1, 1), torch.tensor(std).view(3, 1, 1)
    return (x - mean) / std


def timm_resize_hw(img: Image.Image, size: int, crop_pct: float) -> tuple[int, int]:
    """torchvision Resize(int): the shortest edge becomes floor(size / crop_pct), the other
    int(short * long / short_old) (truncated)."""
    short = math.floor(size / crop_pct)
    w, h = img.size
    if w <= h:
        return int(short * h / w), short
    return short, int(short * w / h)


def _mad(a: torch.Tensor, b: torch.Tensor) -> tuple[float, float]:
    d = (a.double() - b.double()).abs()
    return d.mean().item(), d.max().item()


def _diff_text(a: torch.Tensor, b: torch.Tensor) -> str:
    mean, worst = _mad(a, b)
    return f"mean {mean:.3g} max {worst:.3g}"


def check_reference(name: str, got: torch.Tensor, want: torch.Tensor, atol: float) -> None:
    worst = _mad(got, want)[1]
    assert worst <= atol, f"{name}: README recipe differs from the library by {worst} (max)"


def check_hf_reference(name: str, proc, img: Image.Image, pix: torch.Tensor) -> None:
    """A transformers processor: resize to exactly `size`, floor-centred crop, normalise."""
    assert proc.backend in ("torchvision", "pil"), proc.backend
    size = proc.size
    crop = proc.crop_size if proc.do_center_crop else size
    ref = reference_pixels(
        img, (size.height, size.width), (crop.height, crop.width), resample=proc.resample,
        engine="torch_uint8" if proc.backend == "torchvision" else "pil", crop_round="floor",
        mean=proc.image_mean, std=proc.image_std)
    check_reference(name, pix, ref, 1e-5)


def preprocess_fixture() -> None:
    img = load_photo()
    tensors: dict[str, torch.Tensor] = {}
    meta = _versions() | {
        "photo": "tests/fixtures/photo.jpg",
        "photo_sha256": hashlib.sha256(PHOTO.read_bytes()).hexdigest(),
        "photo_source": PHOTO_SOURCE,
        "photo_license": PHOTO_LICENSE,
    }

    # transformers at 224: ViTImageProcessor / DeiTImageProcessor are the torchvision backend in
    # transformers 5; the *Pil classes are the PIL backend. Both are measured against the recipes.
    for name, cls, kw in (("hf_vit", ViTImageProcessor, HF_VIT_224),
                          ("hf_deit", DeiTImageProcessor, HF_DEIT_224)):
        proc = cls(**kw)
        pix = proc(img, return_tensors="pt")["pixel_values"][0]
        check_hf_reference(name, proc, img, pix)
        proc_pil = getattr(transformers, cls.__name__ + "Pil")(**kw)
        pix_pil = proc_pil(img, return_tensors="pt")["pixel_values"][0]
        check_hf_reference(name + " pil", proc_pil, img, pix_pil)
        tensors[name] = pix
        text = proc.to_json_string()
        (EXPECTED / f"preprocess_{name}.json").write_text(text)
        meta[f"config.{name}"] = text
        meta[f"pil_backend_diff.{name}"] = _diff_text(pix, pix_pil)

    # timm at 224, crop_pct 0.9
    cfg = timm.data.resolve_data_config({}, pretrained_cfg=dict(TIMM_CROP09))
    pix = timm.data.create_transform(**cfg)(img)
    ref = reference_pixels(img, timm_resize_hw(img, 224, 0.9), (224, 224), resample=3,
                           engine="pil", crop_round="round", mean=IMAGENET_MEAN, std=IMAGENET_STD)
    check_reference("timm_crop09", pix, ref, 1e-5)
    tensors["timm_crop09"] = pix
    text = _json_text(TIMM_CROP09)
    (EXPECTED / "preprocess_timm_crop09.json").write_text(text)
    meta["config.timm_crop09"] = text
    meta["resolved.timm_crop09"] = json.dumps(cfg, sort_keys=True)

    # every tiny repo: the photo through the library's own processor and model
    with torch.no_grad():
        for spec in HF_REPOS:
            folder, key = HUB / spec.repo, _key(spec.repo)
            pix = hf_photo(folder, img)
            tensors[f"pixels_{key}"] = pix
            pix_pil = hf_photo(folder, img, backend="pil")
            meta[f"pil_backend_diff.pixels_{key}"] = _diff_text(pix, pix_pil)
            model = getattr(transformers, spec.arch).from_pretrained(str(folder)).eval()
            out = model(pixel_values=pix[None])
            if spec.arch == "ViTModel":
                tensors[f"photo_last_hidden_state_{key}"] = out.last_hidden_state[0]
                tensors[f"photo_pooler_output_{key}"] = out.pooler_output[0]
            else:
                tensors[f"photo_logits_{key}"] = out.logits[0]
        for spec in TIMM_REPOS:
            key = _key(spec.repo)
            model = load_timm(spec.repo)
            pix = timm_photo(model, img)
            dc = spec.data_config
            ref = reference_pixels(
                img, timm_resize_hw(img, spec.model_args["img_size"], dc["crop_pct"]),
                (spec.model_args["img_size"],) * 2,
                resample={"bilinear": 2, "bicubic": 3}[dc["interpolation"]], engine="pil",
                crop_round="round", mean=dc.get("mean", HALF), std=dc.get("std", HALF))
            check_reference(key, pix, ref, 1e-5)
            tensors[f"pixels_{key}"] = pix
            tensors[f"photo_logits_{key}"] = model(pix[None])[0]
    _save_safetensors(tensors, EXPECTED / "preprocess.safetensors", meta)


# --------------------------------------------------------------------------- verification


@torch.no_grad()
def verify() -> None:
    img = load_photo()
    pre = load_file(str(EXPECTED / "preprocess.safetensors"))
    for spec in HF_REPOS:
        folder, key = HUB / spec.repo, _key(spec.repo)
        path = EXPECTED / f"{key}.safetensors"
        saved = load_file(str(path))
        with safe_open(str(path), "pt") as f:
            attn = f.metadata()["attn_implementation"]
        config = AutoConfig.from_pretrained(str(folder))
        assert config.architectures == [spec.arch], config.architectures
        model, info = getattr(transformers, spec.arch).from_pretrained(
            str(folder), attn_implementation=attn, output_loading_info=True)
        assert not any(info.values()), info  # no missing / unexpected / mismatched keys
        acts = run_hf(model.eval(), saved["input"])
        assert set(acts) | {"input"} == set(saved), (spec.repo, sorted(saved))
        for k, v in acts.items():
            assert torch.equal(v, saved[k]), (spec.repo, k)
        proc = AutoImageProcessor.from_pretrained(str(folder))
        assert type(proc) is spec.processor_class, (spec.repo, type(proc))
        pix = hf_photo(folder, img)
        assert torch.equal(pix, pre[f"pixels_{key}"]), spec.repo
        out = model(pixel_values=pix[None])
        if spec.arch == "ViTModel":
            assert torch.equal(out.pooler_output[0], pre[f"photo_pooler_output_{key}"])
        else:
            assert torch.equal(out.logits[0], pre[f"photo_logits_{key}"]), spec.repo
        print(f"ok  {spec.repo}: {len(acts)} outputs + photo pixels and outputs reproduced exactly")

    for spec in TIMM_REPOS:
        key = _key(spec.repo)
        saved = load_file(str(EXPECTED / f"{key}.safetensors"))
        model = load_timm(spec.repo)
        acts = run_timm_named(model, saved["input"])
        assert set(acts) | {"input"} == set(saved), (spec.repo, sorted(saved))
        for k, v in acts.items():
            assert torch.equal(v, saved[k]), (spec.repo, k)
        pix = timm_photo(model, img)
        assert torch.equal(pix, pre[f"pixels_{key}"]), spec.repo
        assert torch.equal(model(pix[None])[0], pre[f"photo_logits_{key}"]), spec.repo
        print(f"ok  {spec.repo}: {len(acts)} outputs + photo pixels and outputs reproduced exactly")

    config = AutoConfig.from_pretrained(str(HUB / BERT_REPO))
    assert config.model_type == "bert" and config.architectures == ["BertModel"]
    _, info = BertModel.from_pretrained(str(HUB / BERT_REPO), output_loading_info=True)
    assert not any(info.values()), info
    print(f"ok  {BERT_REPO}: loads as BertModel")


# --------------------------------------------------------------------------- main


def main() -> int:
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    _check_pillow_pin()
    for folder in (HUB, EXPECTED):  # both are written by this script alone
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
    make_photo()

    for spec in HF_REPOS:
        hf_fixture(spec)
    for spec in TIMM_REPOS:
        timm_fixture(spec)
    bert_fixture()
    preprocess_fixture()
    verify()

    total = 0
    for p in sorted([PHOTO, *HUB.rglob("*"), *EXPECTED.rglob("*")]):
        if p.is_file():
            p.chmod(0o644)
            total += p.stat().st_size
            print(f"{p.stat().st_size:>9}  {p.relative_to(FIXTURES)}")
    print(f"{total:>9}  total bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
