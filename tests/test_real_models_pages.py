"""Every page, for one model of each ViT family, opened by a shared link `?model=hf:ORG/NAME` on a
machine that fetched them once and is now offline: no exception, no error, and the page really
shows that model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from safetensors.torch import save_file
from streamlit.testing.v1 import AppTest

from tests.hub_server import HubStandIn, point_hf_at
from tests.test_app import APP
from tests.test_model import randomised
from ui import keys
from vit_core import ViTConfig
from vit_core.io import hub as vhub

FIXTURES = Path(__file__).parent / "fixtures"
PAGES = ["overview", "patches", "embeddings", "qkv", "attention", "masks", "mlp", "logits",
         "shapes", "segmentation", "experiments"]
FAMILIES = {  # repo -> what makes it a family of its own
    "tiny-org/vit-cls": "CLS classifier (transformers)",
    "tiny-org/vit-headless": "headless encoder, no classifier (ViTModel, like DINO)",
    "tiny-org/deit-distilled": "CLS + DIST tokens, two heads averaged",
    "tiny-org/vit-1block-1head-p14": "1 block, 1 head, patch 14",
    "timm/vit_tiny_avg_fcnorm.test": "average pooling + fc_norm, with CLS (timm)",
    "timm/vit_tiny_avg_nocls.test": "average pooling, no CLS (timm)",
    "made-here/vit-p32-384-in1k": "384 input, patch 32, 1000 ImageNet classes (timm format)",
}


def write_timm_repo(folder: Path) -> None:
    """A timm-format repo at 384 px with patch 32 and a 1000-class head (random weights)."""
    config = ViTConfig(img_size=384, patch_size=32, embed_dim=48, depth=2, num_heads=3,
                       num_classes=1000)
    state = {k: v.contiguous() for k, v in randomised(config).state_dict().items()}
    folder.mkdir(parents=True)
    save_file(state, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({
        "architecture": "vit_tiny_patch32_384", "num_classes": 1000, "global_pool": "token",
        "model_args": {"num_heads": 3},
        "pretrained_cfg": {"input_size": [3, 384, 384], "interpolation": "bicubic",
                           "crop_pct": 1.0, "mean": [0.5] * 3, "std": [0.5] * 3}}))


@pytest.fixture(scope="module")
def fetched(tmp_path_factory):
    """Fetch every family once through the Hub stand-in, then take the Hub away."""
    tmp = tmp_path_factory.mktemp("real-models")
    root = tmp / "hub-root"
    shutil.copytree(FIXTURES / "hub", root)
    write_timm_repo(root / "made-here" / "vit-p32-384-in1k")
    mp = pytest.MonkeyPatch()
    with HubStandIn(root) as server:
        point_hf_at(mp, server.url, tmp / "hf-home")
        for repo in FAMILIES:
            vhub.fetch(repo)
    # the server is stopped now: everything below runs offline
    yield
    mp.undo()


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("repo", list(FAMILIES))
def test_every_page_works_offline_for_every_family(fetched, repo, page):
    name = f"hf:{repo}"
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params[keys.MODEL] = name
    at.query_params["page"] = page
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[keys.MODEL] == name  # the link really opened this model
    assert not at.error, [e.value for e in at.error]
    assert at.title, "the page drew its title"
