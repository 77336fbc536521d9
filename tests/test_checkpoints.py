"""Saving and loading our checkpoints, presets, and the errors a wrong file gives."""

import pytest
import torch
from safetensors.torch import save_file

from tests.support import SMALL, TEXT, randomised, rewrite_info
from vit_core import CheckpointError, ModelInfo, load_model, run_trace, save_checkpoint


@pytest.mark.parametrize("config", [SMALL, TEXT.replace(vocab=tuple(f"w{i}" for i in range(11)))])
def test_checkpoint_round_trip_gives_identical_logits(tmp_path, config):
    model = randomised(config)
    info = ModelInfo("tiny", "file", True, metrics={"top1": 0.5})
    path = save_checkpoint(model, tmp_path / "tiny.safetensors", info)
    (tmp_path / "tiny.md").write_text("# Tiny\n")
    loaded = load_model(str(path))
    x = torch.randn(1, 3, 32, 32)
    ids = [1, 2, 3] if config.has_text else None
    assert torch.equal(run_trace(model, x, ids).logits, run_trace(loaded, x, ids).logits)
    assert loaded.config == config
    assert loaded.info.metrics == {"top1": 0.5} and loaded.info.trained
    assert loaded.info.card == "# Tiny\n"


def test_presets_are_untrained_and_deterministic():
    a, b = load_model("vit-b16"), load_model("vit-b16")
    assert not a.info.trained and "untrained" in a.info.description
    assert torch.equal(a.pos_embed, b.pos_embed)
    state = torch.random.get_rng_state()
    load_model("vit-ti16")
    assert torch.equal(state, torch.random.get_rng_state())  # global RNG untouched


def test_unknown_name_lists_known_models():
    with pytest.raises(CheckpointError, match="Known models: vit-b16"):
        load_model("vit-h99")


def test_garbage_and_missing_files(tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"this is not a safetensors file")
    with pytest.raises(CheckpointError, match="not a readable safetensors file"):
        load_model(str(bad))
    with pytest.raises(CheckpointError, match="No file at"):
        load_model(str(tmp_path / "gone.safetensors"))
    plain = tmp_path / "plain.safetensors"
    save_file({"w": torch.zeros(2)}, str(plain))
    with pytest.raises(CheckpointError, match="no ViT Explainer config"):
        load_model(str(plain))


def test_truncated_file_is_refused(tmp_path):
    path = save_checkpoint(randomised(SMALL), tmp_path / "m.safetensors")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError):
        load_model(str(path))


def test_mismatched_weights_name_the_key(tmp_path):
    model = randomised(SMALL)
    path = save_checkpoint(model, tmp_path / "m.safetensors")
    from safetensors import safe_open
    with safe_open(str(path), "pt") as f:
        meta, state = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}
    state["blocks.1.mlp.fc1.weight"] = torch.zeros(7, 48)
    del state["norm.bias"]
    state["extra.thing"] = torch.zeros(1)
    save_file(state, str(path), metadata=meta)
    with pytest.raises(CheckpointError) as err:
        load_model(str(path))
    msg = str(err.value)
    assert "missing keys norm.bias" in msg and "unexpected keys extra.thing" in msg
    assert "blocks.1.mlp.fc1.weight: file (7, 48) vs model (192, 48)" in msg


@pytest.mark.parametrize("info,named", [
    ('{"name": "m", "trained": true, "wings": 2}', "unknown key 'wings'"),
    ('{"source": "/elsewhere"}', "unknown key 'source'"),  # never saved: the path is the source
    ('{"wings": 2, "tail": 1}', "unknown key 'wings' (and 1 more)"),
    ('[1, 2]', "not a JSON object (it is a list)"),
])
def test_unknown_info_metadata_is_refused_in_one_sentence(tmp_path, info, named):
    path = save_checkpoint(randomised(SMALL), tmp_path / "m.safetensors")
    rewrite_info(path, info)
    with pytest.raises(CheckpointError) as err:  # not a TypeError from ModelInfo(**info)
        load_model(str(path))
    msg = str(err.value)
    assert named in msg and "'m.safetensors'" in msg and "\n" not in msg
    assert msg.count(". ") == 0 and msg.endswith(".")  # one sentence


def test_known_info_metadata_still_loads(tmp_path):
    path = save_checkpoint(randomised(SMALL), tmp_path / "m.safetensors")
    rewrite_info(path, '{"name": "renamed", "trained": false, "description": "d", "metrics": {}}')
    info = load_model(str(path)).info
    assert (info.name, info.trained, info.description) == ("renamed", False, "d")
