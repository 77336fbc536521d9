"""Fetching real-format ViTs by name through the local Hub stand-in (tests/hub_server.py):
every family's fixture repo fetches, loads with the library's outputs, loads again with the Hub
gone, and every failure is one sentence with nothing half-loaded."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from ui.selection.models import fetch_progress
from vit_core import CheckpointError, load_model
from vit_core.io import hub as vhub

FIXTURES = Path(__file__).parent / "fixtures"
FAMILIES = ["tiny-org/vit-cls", "tiny-org/vit-headless", "tiny-org/deit-cls",
            "tiny-org/deit-distilled", "tiny-org/vit-1block-1head-p14", "timm/vit_tiny_cls.test",
            "timm/vit_tiny_avg_fcnorm.test", "timm/vit_tiny_avg_nocls.test"]


@pytest.fixture
def sleeps(monkeypatch) -> list:
    """The client's retry waits, recorded instead of slept."""
    asked = []
    monkeypatch.setattr(time, "sleep", asked.append)
    return asked


def expected(repo: str) -> dict:
    return load_file(FIXTURES / "hub_expected" / f"{repo.replace('/', '__')}.safetensors")


@pytest.mark.parametrize("repo", FAMILIES)
def test_each_family_fetches_then_loads_offline_with_the_librarys_outputs(hub, repo):
    assert vhub.local_folder(repo) is None
    with pytest.raises(CheckpointError, match="not on this machine"):
        load_model(f"hf:{repo}", local_files_only=True)  # nothing is fetched when told not to
    assert hub.count("GET", "/resolve/") == 0
    folder = vhub.fetch(f"hf:{repo}")
    assert vhub.local_folder(repo) == folder
    hub.stop()  # the Hub is gone: the class is offline
    model = load_model(f"hf:{repo}")
    assert model.info.name == f"hf:{repo}" and model.info.source == f"hf:{repo}"
    e = expected(repo)
    with torch.no_grad():
        out = model(e["input"])
    key = "logits" if model.config.num_classes else "last_hidden_state"
    torch.testing.assert_close(out, e[key], atol=1e-5, rtol=1e-5)


def test_only_what_a_vit_needs_is_fetched_and_a_second_fetch_downloads_nothing(hub):
    repo = "tiny-org/deit-distilled"
    (hub.root_dir / repo / "pytorch_model.bin").write_bytes(b"0" * 50_000)  # a second format
    (hub.root_dir / repo / "README.md").write_text("# card\n")
    folder = vhub.fetch(repo)
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json", "model.safetensors", "preprocessor_config.json"]
    gets = hub.count("GET", "/resolve/")
    assert gets == 3
    vhub.fetch(repo)
    assert hub.count("GET", "/resolve/") == gets  # nothing downloaded again


def test_progress_reports_rise_to_the_files_size(hub, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 16 * 1024)  # see more than one step
    repo = "tiny-org/deit-distilled"
    weights = (hub.root_dir / repo / "model.safetensors").stat().st_size
    configs = sum((hub.root_dir / repo / f).stat().st_size
                  for f in ("config.json", "preprocessor_config.json"))
    seen = []
    vhub.fetch(repo, progress=seen.append)
    assert len(seen) > 3
    assert all(p.total == weights + configs for p in seen)
    done = [p.done for p in seen]
    assert done == sorted(done) and done[-1] >= weights  # rises to the size
    assert all(0 < p.done <= p.total for p in seen)
    total = weights + configs
    assert fetch_progress(seen[-1]) == (1.0, f"{total / 1e6:.1f} of {total / 1e6:.1f} MB")


def test_progress_without_sizes_from_the_hub_says_what_has_arrived(hub, monkeypatch):
    """A Hub (or mirror) that lists the files without their sizes: the reports count the bytes
    that arrived, with no total, and the bar says '… MB so far' (it said '0.0 of 0.0 MB')."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 16 * 1024)
    hub.sizes = False
    repo = "tiny-org/deit-distilled"
    size = sum((hub.root_dir / repo / f).stat().st_size
               for f in ("config.json", "preprocessor_config.json", "model.safetensors"))
    seen = []
    vhub.fetch(repo, progress=seen.append)
    assert len(seen) > 3 and all(p.total is None and p.left_s is None for p in seen)
    done = [p.done for p in seen]
    assert done == sorted(done) and done[-1] == size
    shown = [fetch_progress(p) for p in seen]
    assert shown[-1] == (0.0, f"{size / 1e6:.1f} MB so far (the Hub did not give the size)")
    assert all(fill == 0.0 and " of " not in words for fill, words in shown)


def test_an_unknown_repo_is_one_sentence(hub):
    with pytest.raises(vhub.FetchError) as e:
        vhub.fetch("tiny-org/no-such-model")
    assert str(e.value) == ("There is no model 'tiny-org/no-such-model' on the Hugging Face Hub "
                            "(or it is private).")
    assert vhub.local_folder("tiny-org/no-such-model") is None


def test_a_repo_that_is_not_a_vit_is_refused_before_its_weights(hub):
    with pytest.raises(vhub.FetchError, match="'tiny-org/bert-not-vit' is a 'bert' model, not a "
                                             "Vision Transformer"):
        vhub.fetch("tiny-org/bert-not-vit")
    assert hub.count("GET", "bert-not-vit/resolve/main/model.safetensors") == 0
    assert hub.count("GET", "model.safetensors") == 0


def test_a_server_that_is_down_is_one_sentence_after_one_request_and_no_retry(hub, sleeps):
    """Given up after the model-info request, with no retry: a download's backoff would wait
    more than 10 s (tests/test_hub_server.py), recorded here instead of slept."""
    hub.stop()
    with pytest.raises(vhub.FetchError, match="Could not reach the Hugging Face Hub"):
        vhub.fetch("tiny-org/vit-cls")
    assert sleeps == []
    assert vhub.local_folder("tiny-org/vit-cls") is None


def test_a_cut_download_leaves_no_model_and_a_retry_succeeds(hub, sleeps):
    repo = "tiny-org/vit-cls"
    hub.truncate("vit-cls/resolve/main/model.safetensors", 40_000)  # every try is cut
    with pytest.raises(vhub.FetchError, match="interrupted"):
        vhub.fetch(repo)
    assert vhub.local_folder(repo) is None
    with pytest.raises(CheckpointError, match="not on this machine"):
        load_model(f"hf:{repo}", local_files_only=True)
    hub.clear_faults()
    assert vhub.fetch(repo) == vhub.local_folder(repo)
    assert load_model(f"hf:{repo}").config.num_classes == 5


def test_names_that_are_not_hub_names_are_refused():
    for bad in ("hf:", "hf:justone", "hf:a/b/c", "hf:a /b"):
        with pytest.raises(vhub.FetchError, match="not a Hugging Face model name"):
            vhub.repo_id(bad)


@pytest.mark.slow  # a child process or a whole app session: the full suite runs it
def test_the_fetch_command_says_where_and_how_big_and_then_works_offline(hub, tmp_path):
    env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf-home"),
           "HF_HUB_DISABLE_TELEMETRY": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "vit_core.fetch", "tiny-org/deit-distilled"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    size = (FIXTURES / "hub/tiny-org/deit-distilled/model.safetensors").stat().st_size
    assert "tiny-org/deit-distilled: " in out.stdout and str(tmp_path / "hf-home") in out.stdout
    assert f"{size / 1e6:.1f} MB" in out.stdout or "0.3 MB" in out.stdout
    assert "loads offline as hf:tiny-org/deit-distilled" in out.stdout
    hub.stop()
    code = ("from vit_core import load_model; m = load_model('hf:tiny-org/deit-distilled'); "
            "print(m.config.prefix_names)")
    off = subprocess.run([sys.executable, "-c", code], env={**env, "HF_HUB_OFFLINE": "1"},
                         capture_output=True, text=True, timeout=120)
    assert off.stdout.strip() == "('CLS', 'DIST')", off.stderr
    listing = subprocess.run([sys.executable, "-m", "vit_core.fetch", "--list"], env=env,
                             capture_output=True, text=True, timeout=120)
    assert "facebook/deit-tiny-patch16-224" in listing.stdout and "≈  23 MB" in listing.stdout
