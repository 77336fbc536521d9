"""Loading a checkpoint from the app: bad paths keep the previous model, good ones switch.
(Loading from a server path is the teacher's action: these tests run as on a server that listens
on localhost; tests/test_real_models_ui.py checks that a network-facing one offers no path
box.)"""

import pytest
from streamlit.testing.v1 import AppTest

from tests.support import open_app, randomised, rewrite_info
from ui.selection.models import LOAD_OTHER
from vit_core import ModelInfo, ViTConfig, save_checkpoint

TINY = ViTConfig(img_size=64, patch_size=16, embed_dim=48, depth=2, num_heads=3, num_classes=3,
                 class_names=("cat", "dog", "cow"))


@pytest.fixture(autouse=True)
def as_teacher(monkeypatch):
    """The server listens on this machine only: its browser may load from server paths."""
    monkeypatch.setattr("ui.selection.models.listen_address", lambda: "localhost")


def open_picker() -> AppTest:
    at = open_app(model="vit-ti16")
    at.sidebar.selectbox(key="model").set_value(LOAD_OTHER).run()
    assert not at.exception
    assert at.sidebar.selectbox(key="model").value == "vit-ti16"  # still working meanwhile
    return at


def test_a_bad_path_says_why_in_one_line_and_keeps_the_model(tmp_path):
    at = open_picker()
    garbage = tmp_path / "broken.safetensors"
    garbage.write_bytes(b"\x00" * 100)
    for path in (str(tmp_path / "missing.pth"), str(garbage), f"{garbage}@0px"):
        at.sidebar.text_input(key="checkpoint_path").set_value(path).run()
        at.sidebar.button(key="checkpoint_load").click().run()
        assert not at.exception
        errors = [e.value for e in at.sidebar.error]
        assert len(errors) == 1 and "\n" not in errors[0], errors
        assert errors[0].startswith("Could not load that checkpoint")
        assert at.session_state["model"] == "vit-ti16"
        assert at.title[0].value == "From pixels to logits, in one pass"
    # a malformed name (vit_core.io.ref.ModelRef): the sentence that says which part is wrong
    assert "asks for an input size in pixels of '0', which is not a whole number" in errors[0]


def test_a_good_checkpoint_becomes_the_model(tmp_path):
    path = save_checkpoint(randomised(TINY), tmp_path / "mine.safetensors",
                           ModelInfo("mine", "file", True))
    at = open_picker()
    at.sidebar.text_input(key="checkpoint_path").set_value(str(path)).run()
    at.sidebar.button(key="checkpoint_load").click().run()
    assert not at.exception and not at.sidebar.error
    assert at.session_state["model"] == str(path)
    assert at.sidebar.selectbox(key="model").value == str(path)
    shapes = {r["tensor"]: r["shape"] for _, r in at.dataframe[0].value.iterrows()}
    assert shapes["embed"] == "17 × 48"  # (64/16)^2 + CLS tokens of width 48
    assert any("cat, dog, cow" in m.value for m in at.sidebar.markdown)


def test_weights_argument_opens_the_app_on_that_checkpoint(tmp_path, monkeypatch):
    from ui.selection import models

    path = save_checkpoint(randomised(TINY), tmp_path / "given.safetensors")
    monkeypatch.setattr("sys.argv", ["app.py", "--weights", str(path)])
    models.server_args.clear()
    try:
        at = open_app()
        assert at.sidebar.selectbox(key="model").value == str(path)
        assert "file: given.safetensors" in at.sidebar.selectbox(key="model").options
    finally:
        monkeypatch.undo()
        models.server_args.clear()


def test_a_timm_checkpoint_with_a_heads_count_loads_in_the_app():
    from pathlib import Path

    wrapped = Path(__file__).parent / "fixtures" / "timm_vit_tiny_wrapped.pth"
    at = open_picker()
    at.sidebar.text_input(key="checkpoint_path").set_value(str(wrapped)).run()
    at.sidebar.button(key="checkpoint_load").click().run()
    assert "num_heads" in at.sidebar.error[0].value or "heads" in at.sidebar.error[0].value
    at.sidebar.number_input(key="checkpoint_heads").set_value(3).run()
    at.sidebar.button(key="checkpoint_load").click().run()
    assert not at.exception and not at.sidebar.error
    assert at.session_state["model"] == f"{wrapped}?heads=3"
    shapes = {r["tensor"]: r["shape"] for _, r in at.dataframe[0].value.iterrows()}
    assert shapes["blocks.0.attn.q"] == "3 × 17 × 16"


def test_a_checkpoint_with_unknown_info_metadata_says_which_key(tmp_path):
    path = save_checkpoint(randomised(TINY), tmp_path / "odd.safetensors")
    rewrite_info(path, '{"name": "odd", "wings": 2}')
    at = open_picker()
    at.sidebar.text_input(key="checkpoint_path").set_value(str(path)).run()
    at.sidebar.button(key="checkpoint_load").click().run()
    assert not at.exception
    errors = [e.value for e in at.sidebar.error]
    assert len(errors) == 1 and "unknown key 'wings'" in errors[0], errors
    assert at.session_state["model"] == "vit-ti16"
