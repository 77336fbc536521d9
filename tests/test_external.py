"""Bring your own ViT: timm, Hugging Face and plain-PyTorch checkpoints through load_model, against
the fixtures made by timm 1.0.31 and transformers 5.23 (see tests/fixtures/README.md)."""

import importlib.util
import json
import os
import pickle
import shutil
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from vit_core import CheckpointError, load_model, run_trace
from vit_core.io.external import imagenet_class_names, infer_config, resample_pos_embed

FIXTURES = Path(__file__).parent / "fixtures"
TOL = dict(rtol=1e-5, atol=1e-5)


def read(name: str) -> tuple[dict, dict]:
    """(bare timm state dict, every other tensor) of a committed fixture."""
    with safe_open(str(FIXTURES / name), "pt") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    state = {k.removeprefix("state."): v for k, v in tensors.items() if k.startswith("state.")}
    return state, {k: v for k, v in tensors.items() if not k.startswith("state.")}


def assert_matches_timm(model, expected: dict):
    """Every block output, the final norm and the logits, image by image, to 1e-5."""
    for i in range(expected["input"].shape[0]):
        tr = run_trace(model, expected["input"][i : i + 1])
        torch.testing.assert_close(tr["embed"], expected["embed"][i], **TOL)
        for layer in range(model.config.depth):
            torch.testing.assert_close(tr[f"blocks.{layer}.resid_post"],
                                       expected[f"blocks.{layer}"][i], **TOL)
        torch.testing.assert_close(tr["ln_final"], expected["norm"][i], **TOL)
        torch.testing.assert_close(tr.logits, expected["logits"][i], **TOL)


def write(tmp_path: Path, fmt: str, state: dict) -> Path:
    """The state dict the way a training script might have saved it."""
    if fmt == "safetensors":
        save_file(state, str(tmp_path / "m.safetensors"))
        return tmp_path / "m.safetensors"
    if fmt == "wrapped.pth":  # the committed DDP-style {"model": {"module.<k>": ...}, "epoch": 3}
        return FIXTURES / "timm_vit_tiny_wrapped.pth"
    obj = {"bin": state, "state_dict.pt": {"state_dict": state, "epoch": 1},
           "compiled.pt": {"model_state": {f"_orig_mod.{k}": v for k, v in state.items()}}}[fmt]
    path = tmp_path / ("m." + fmt.rsplit(".", 1)[-1])
    torch.save(obj, path)
    return path


# ---------------------------------------------------------------- timm


@pytest.mark.parametrize("fmt", ["safetensors", "wrapped.pth", "bin", "state_dict.pt",
                                 "compiled.pt"])
def test_timm_checkpoint_in_every_format_matches_timm(tmp_path, fmt):
    state, expected = read("timm_vit_tiny.safetensors")
    path = write(tmp_path, fmt, state)
    model = load_model(str(path), num_heads=3)
    c = model.config
    assert (c.img_size, c.patch_size, c.embed_dim, c.depth, c.num_classes) == (32, 8, 48, 2, 5)
    assert c.class_token and c.global_pool == "token" and not c.fc_norm and c.norm_eps == 1e-6
    assert model.info.name == path.name and model.info.source == str(path)
    assert model.info.description == "timm checkpoint" and model.info.trained
    assert not model.training
    assert_matches_timm(model, expected)


def test_timm_avg_pool_with_fc_norm(tmp_path):
    state, expected = read("timm_vit_tiny_avgpool.safetensors")
    save_file(state, str(tmp_path / "avg.safetensors"))
    model = load_model(str(tmp_path / "avg.safetensors"), num_heads=2)
    c = model.config
    assert not c.class_token and c.global_pool == "avg" and c.fc_norm and c.grid == 3
    assert_matches_timm(model, expected)


def test_a_wrong_shape_is_named(tmp_path):
    state, _ = read("timm_vit_tiny.safetensors")
    state["blocks.1.attn.proj.weight"] = torch.zeros(48, 40)
    save_file(state, str(tmp_path / "bad.safetensors"))
    with pytest.raises(CheckpointError, match=r"blocks\.1\.attn\.proj\.weight: file \(48, 40\)"):
        load_model(str(tmp_path / "bad.safetensors"), num_heads=3)


def test_a_resnet_is_not_a_vit(tmp_path):
    state = {"conv1.weight": torch.zeros(64, 3, 7, 7), "bn1.weight": torch.ones(64),
             "layer1.0.conv1.weight": torch.zeros(64, 64, 3, 3), "fc.weight": torch.zeros(10, 512)}
    torch.save({"state_dict": state}, tmp_path / "resnet.pth")
    with pytest.raises(CheckpointError, match="does not look like a ViT") as err:
        load_model(str(tmp_path / "resnet.pth"))
    assert "conv1.weight" in str(err.value) and "resnet.pth" in str(err.value)


# ---------------------------------------------------------------- heads


def test_heads_must_be_given_when_the_width_does_not_say(tmp_path):
    state, expected = read("timm_vit_tiny.safetensors")
    save_file(state, str(tmp_path / "m.safetensors"))
    path = str(tmp_path / "m.safetensors")
    with pytest.raises(CheckpointError, match="D=48 is not a multiple of 64.*pass num_heads"):
        load_model(path)  # the d_k = 64 rule cannot apply
    with pytest.raises(CheckpointError, match="split evenly into 5 heads"):
        load_model(path, num_heads=5)
    assert_matches_timm(load_model(path, num_heads=3), expected)
    wrong = load_model(path, num_heads=4)  # loads (the weights cannot tell), computes otherwise
    with torch.inference_mode():
        assert not torch.allclose(wrong(expected["input"]), expected["logits"], **TOL)


def test_the_default_head_rule_is_d_over_64():
    state = {"patch_embed.proj.weight": torch.zeros(128, 3, 16, 16),
             "pos_embed": torch.zeros(1, 5, 128), "cls_token": torch.zeros(1, 1, 128),
             "blocks.0.mlp.fc1.weight": torch.zeros(512, 128),
             "head.weight": torch.zeros(1000, 128)}
    c = infer_config(state)
    assert (c.num_heads, c.img_size, c.depth, c.mlp_ratio, c.mean) == (2, 32, 1, 4.0, (0.5,) * 3)
    assert c.class_names == imagenet_class_names() and c.class_names[:2] == ("tench", "goldfish")
    assert len(set(c.class_names)) == 1000
    assert infer_config(state, mean=(0.485, 0.456, 0.406)).mean == (0.485, 0.456, 0.406)


def test_options_are_only_for_external_checkpoints():
    with pytest.raises(CheckpointError, match="only for checkpoints from other libraries"):
        load_model("vit-ti16", num_heads=3)


# ---------------------------------------------------------------- Hugging Face


@pytest.mark.parametrize("folder", ["hf_vit_tiny", "hf_vit_tiny_bin"])
def test_hf_folder_matches_transformers(folder):
    model = load_model(str(FIXTURES / folder))  # heads, eps and labels come from config.json
    _, expected = read("hf_vit_tiny_expected.safetensors")
    c = model.config
    assert c.class_names == ("cat", "dog", "bird", "fish", "frog")
    assert c.norm_eps == 1e-12 and c.num_heads == 3
    assert model.info.description == "Hugging Face checkpoint" and model.info.name == folder
    for i in range(2):
        tr = run_trace(model, expected["input"][i : i + 1])
        torch.testing.assert_close(tr["embed"], expected["hidden.0"][i], **TOL)
        for layer in range(c.depth):
            torch.testing.assert_close(tr[f"blocks.{layer}.resid_post"],
                                       expected[f"hidden.{layer + 1}"][i], **TOL)
        torch.testing.assert_close(tr["ln_final"], expected["final"][i], **TOL)
        torch.testing.assert_close(tr.logits, expected["logits"][i], **TOL)


def test_hf_heads_conflict_is_an_error():
    with pytest.raises(CheckpointError, match="config.json says 3 heads"):
        load_model(str(FIXTURES / "hf_vit_tiny"), num_heads=4)


def test_hf_vit_model_without_prefix_and_with_a_pooler(tmp_path):
    """ViTModel: no `vit.` prefix, no classifier, a pooler that is ignored (with a warning)."""
    hf = {}
    with safe_open(str(FIXTURES / "hf_vit_tiny" / "model.safetensors"), "pt") as f:
        for k in f.keys():
            if not k.startswith("classifier."):
                hf[k.removeprefix("vit.")] = f.get_tensor(k)
    hf["pooler.dense.weight"], hf["pooler.dense.bias"] = torch.zeros(48, 48), torch.zeros(48)
    folder = tmp_path / "vit_model"
    folder.mkdir()
    save_file(hf, str(folder / "model.safetensors"))
    cfg = json.loads((FIXTURES / "hf_vit_tiny" / "config.json").read_text())
    cfg.pop("id2label"), cfg.pop("label2id")
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.warns(UserWarning, match="pooler"):
        model = load_model(str(folder))
    assert model.config.num_classes == 0 and model.config.class_names == ()
    _, expected = read("hf_vit_tiny_expected.safetensors")
    tr = run_trace(model, expected["input"][:1])
    torch.testing.assert_close(tr["ln_final"], expected["final"][0], **TOL)


def test_hf_keys_in_a_bare_file_are_mapped(tmp_path):
    """A lone HF state dict (no config.json): keys are recognised, eps is HF's 1e-12."""
    shutil.copyfile(FIXTURES / "hf_vit_tiny" / "model.safetensors", tmp_path / "hf.safetensors")
    model = load_model(str(tmp_path / "hf.safetensors"), num_heads=3)
    assert model.config.norm_eps == 1e-12 and model.info.description == "Hugging Face checkpoint"
    _, expected = read("hf_vit_tiny_expected.safetensors")
    with torch.inference_mode():
        torch.testing.assert_close(model(expected["input"]), expected["logits"], **TOL)


# ---------------------------------------------------------------- image size


def test_resample_pos_embed_equals_timm():
    with safe_open(str(FIXTURES / "pos_resample.safetensors"), "pt") as f:
        call = json.loads(f.metadata()["call"])
        t = {k: f.get_tensor(k) for k in f.keys()}
    for src, dst in (("posemb_in", "posemb_out"), ("posemb_in_noprefix", "posemb_out_noprefix")):
        args = call[src]
        assert args["interpolation"] == "bicubic" and args["antialias"] and args["old_size"] is None
        out = resample_pos_embed(t[src], tuple(args["new_size"]), args["num_prefix_tokens"])
        torch.testing.assert_close(out, t[dst], rtol=1e-6, atol=1e-6)


def test_another_image_size_resamples_positions():
    path = str(FIXTURES / "timm_vit_tiny_wrapped.pth")
    base = load_model(path, num_heads=3)
    model = load_model(path, num_heads=3, img_size=48)  # 4x4 grid -> 6x6
    assert model.config.img_size == 48 and model.pos_embed.shape == (1, 37, 48)
    torch.testing.assert_close(model.pos_embed.data,
                               resample_pos_embed(base.pos_embed.data, (6, 6), 1))
    assert torch.equal(model.pos_embed[:, 0], base.pos_embed[:, 0])  # CLS position unchanged
    tr = run_trace(model, torch.randn(1, 3, 48, 48))
    assert tr["embed"].shape == (37, 48) and tr["blocks.1.attn.pattern"].shape == (3, 37, 37)
    assert tr.logits.shape == (5,) and torch.isfinite(tr.logits).all()
    with pytest.raises(CheckpointError, match="patch size 8 must divide the image size 36"):
        load_model(path, num_heads=3, img_size=36)


# ---------------------------------------------------------------- unsafe and broken files


class Payload:
    """Unpickling this runs `touch <marker>`: what a malicious checkpoint would do."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch '{self.marker}'",))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # torch, on pickle.dump's file
@pytest.mark.parametrize("how", ["torch.save", "pickle.dump"])
def test_a_pickle_that_runs_code_is_refused_and_never_run(tmp_path, how):
    marker = tmp_path / "pwned"
    obj = {"model": {"w": torch.zeros(2), "x": Payload(marker)}}
    path = tmp_path / "evil.pth"
    if how == "torch.save":
        torch.save(obj, path)
    else:
        with open(path, "wb") as f:
            pickle.dump(obj, f)
    with pytest.raises(CheckpointError, match="evil.pth.*(refused|cannot be read safely)"):
        load_model(str(path))
    assert not marker.exists()
    if how == "torch.save":  # control: the payload is live, an unsafe load would have run it
        with pytest.raises(CheckpointError, match="refused: it asks to run posix.system"):
            load_model(str(path))
        torch.load(path, weights_only=False)
        assert marker.exists()


@pytest.mark.parametrize("name", ["random.pth", "random.bin", "random.safetensors"])
def test_random_bytes_are_refused(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(torch.randint(0, 256, (4096,), dtype=torch.uint8,
                                   generator=torch.Generator().manual_seed(0)).numpy().tobytes())
    with pytest.raises(CheckpointError, match=name):
        load_model(str(path))


def test_truncated_files_are_refused(tmp_path):
    data = (FIXTURES / "timm_vit_tiny_wrapped.pth").read_bytes()
    (tmp_path / "cut.pth").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="cut.pth.*truncated or corrupt"):
        load_model(str(tmp_path / "cut.pth"), num_heads=3)
    folder = tmp_path / "hf_cut"
    shutil.copytree(FIXTURES / "hf_vit_tiny", folder)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) - 1000])
    with pytest.raises(CheckpointError, match="model.safetensors.*not a readable safetensors"):
        load_model(str(folder))
    (folder / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="no model.safetensors or pytorch_model.bin"):
        load_model(str(folder))


# ---------------------------------------------------------------- timm: names


@pytest.mark.skipif(importlib.util.find_spec("timm") is not None,
                    reason="timm is installed here; this checks the message without it")
def test_timm_names_without_timm_say_so():
    with pytest.raises(CheckpointError, match="timm is not installed.*pip install timm"):
        load_model("timm:vit_base_patch16_224")
