"""The library behaves like the field's: `load_model("hf:ORG/NAME")` fetches on first use (as
`from_pretrained` and `timm.create_model(pretrained=True)` do) with huggingface_hub's own
progress bars; offline or told `local_files_only=True` it downloads nothing and says in one
sentence how to fetch; the app never fetches for a student's link; and `pip install .` is the
library without the app's stack. The Hub is the local stand-in (tests/hub_server.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from vit_core import CheckpointError, load_model
from vit_core.io import hub as vhub

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
APP_ONLY = {"streamlit", "plotly", "matplotlib", "segno"}
# what only the app installs: matplotlib comes with the library too, as Captum (its attribution
# methods, vit_core/explain/attribution) requires it; no vit_core module imports it on import
APP_INSTALLS = APP_ONLY - {"matplotlib"}


def expected_output(repo: str, model) -> tuple[torch.Tensor, torch.Tensor]:
    """(the model's output on the fixture's input, the reference made by transformers/timm)."""
    ref = load_file(FIXTURES / "hub_expected" / f"{repo.replace('/', '__')}.safetensors")
    with torch.no_grad():
        out = model(ref["input"])
    return out, ref["logits" if model.config.num_classes else "last_hidden_state"]


# ---- fetch on first use ----

@pytest.mark.parametrize("repo", ["tiny-org/deit-distilled", "timm/vit_tiny_cls.test"])
def test_load_model_fetches_on_first_use_with_the_hubs_own_bars(hub, repo, capfd, monkeypatch):
    monkeypatch.setenv("TQDM_POSITION", "-1")  # huggingface_hub draws bars on a terminal only
    assert vhub.local_folder(repo) is None  # an empty cache
    model = load_model(f"hf:{repo}")
    weights = f"{repo}/resolve/main/model.safetensors"
    assert hub.count("GET", weights) == 1 and vhub.local_folder(repo) is not None
    out, ref = expected_output(repo, model)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    bars = capfd.readouterr().err
    assert "model.safetensors" in bars and "100%" in bars  # huggingface_hub's tqdm, per file
    hub.stop()  # fetched once: from now on it loads with no network
    again = load_model(f"hf:{repo}")
    torch.testing.assert_close(expected_output(repo, again)[0], ref, atol=1e-5, rtol=1e-5)


def test_a_first_use_that_cannot_fetch_is_one_sentence(hub):
    with pytest.raises(CheckpointError) as e:
        load_model("hf:tiny-org/no-such-model")
    assert str(e.value) == ("There is no model 'tiny-org/no-such-model' on the Hugging Face Hub "
                            "(or it is private).")
    with pytest.raises(CheckpointError, match="is a 'bert' model, not a Vision Transformer"):
        load_model("hf:tiny-org/bert-not-vit")
    assert hub.count("GET", "bert-not-vit/resolve/main/model.safetensors") == 0


# ---- no fetch: offline, or local_files_only ----

MISSING = ("tiny-org/vit-cls is not on this machine; fetch it with "
           "`.venv/bin/python -m vit_core.fetch tiny-org/vit-cls`.")


@pytest.mark.slow  # a child process or a whole app session: the full suite runs it
def test_offline_with_an_empty_cache_is_one_sentence_naming_the_fetch_command(hub, tmp_path):
    code = ("from vit_core import CheckpointError, load_model\n"
            "try:\n    load_model('hf:tiny-org/vit-cls')\n"
            "except CheckpointError as e:\n    print(e)\n")
    env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.stdout.strip() == MISSING, out.stderr
    assert hub.count() == 0 and vhub.local_folder("tiny-org/vit-cls") is None  # nothing asked


def test_local_files_only_downloads_nothing_and_says_the_same(hub):
    with pytest.raises(CheckpointError) as e:
        load_model("hf:tiny-org/vit-cls", local_files_only=True)
    assert str(e.value) == MISSING
    with pytest.raises(CheckpointError, match="would be downloaded by timm"):
        load_model("timm:vit_tiny_patch16_224", local_files_only=True)
    assert hub.count() == 0
    assert load_model("vit-ti16", local_files_only=True).info.source == "preset"  # others load


@pytest.mark.slow  # a child process or a whole app session: the full suite runs it
def test_the_fetch_command_named_in_the_sentence_runs_from_the_repository(hub, tmp_path):
    command = MISSING.split("`")[1].split()
    venv_python = ROOT / command[0]
    if not venv_python.exists():
        pytest.skip("no .venv in this checkout")
    env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf-home"),
           "HF_HUB_DISABLE_TELEMETRY": "1", "PATH": "/usr/bin:/bin"}  # no venv activated
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "loads offline as hf:tiny-org/vit-cls" in out.stdout


# ---- the app: only the teacher fetches ----

def test_a_students_link_on_a_network_server_downloads_nothing(hub, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from ui import keys
    from ui.selection import models

    monkeypatch.setattr("sys.argv", ["app.py"])  # no --allow-fetch
    # the class's network
    monkeypatch.setattr("ui.selection.models.listen_address", lambda: "0.0.0.0")
    models.server_args.clear()
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
        at.query_params[keys.MODEL] = "hf:tiny-org/vit-cls"
        at.query_params["page"] = "overview"
        at.run()
        offered = [b for b in at.sidebar.button if b.key == keys.FETCH_BUTTON]
        for button in offered:  # the student presses whatever the page offers
            button.click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert not any("/resolve/" in r.path for r in hub.log), hub.log  # no file requested
        assert vhub.local_folder("tiny-org/vit-cls") is None
        assert at.session_state[keys.MODEL] != "hf:tiny-org/vit-cls" and not offered
    finally:
        models.server_args.clear()


def test_the_apps_model_loader_never_fetches(hub):
    from ui.serving import state

    try:
        with pytest.raises(CheckpointError, match="is not on this machine"):
            state.get_model("hf:tiny-org/vit-cls")
        assert hub.count("GET", "/resolve/") == 0
    finally:
        # nothing of this test's Hub stays cached for the next one (an st.cache_resource, or a
        # function over the shared byte cache)
        getattr(state.get_model, "clear", state.shared_cache().clear)()


# ---- packaging ----

def would_install(tmp_path: Path, target: str) -> dict[str, str]:
    """{name: version} that `pip install TARGET` resolves into an empty environment (a dry run:
    pip reads the dependencies and installs nothing). Only pyproject.toml decides them, so the
    project is copied without its code, and its metadata is built with this environment's
    setuptools (no isolated build environment: half the time of the run)."""
    project = tmp_path / "project"
    (project / "vit_core").mkdir(parents=True, exist_ok=True)
    (project / "vit_core" / "__init__.py").touch()
    shutil.copy(ROOT / "pyproject.toml", project)
    (project / "README.md").write_text("vit-explainer\n")
    report = tmp_path / f"{target}.json"
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
                          "--ignore-installed", "--no-build-isolation", "--report", str(report),
                          str(project) + target],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return {i["metadata"]["name"].lower().replace("_", "-"): i["metadata"]["version"]
            for i in json.loads(report.read_text())["install"]}


@pytest.mark.slow
def test_pip_install_dot_is_the_library_and_the_app_extra_adds_the_app(tmp_path):
    core = would_install(tmp_path, "")
    assert core["torch"].startswith("2.13.0") and core["huggingface-hub"] == "2.4.0"
    assert {"safetensors", "numpy", "pillow"} <= set(core)
    assert not APP_INSTALLS & set(core), APP_INSTALLS & set(core)
    assert not [n for n in core if n.startswith("nvidia")]  # the CPU torch, not CUDA's
    app = would_install(tmp_path, "[app]")
    assert APP_ONLY <= set(app) and app["streamlit"] == "1.65.0"
    assert "captum" in core  # the library's attribution methods
    assert app["torch"] == core["torch"]


@pytest.mark.slow  # a child process or a whole app session: the full suite runs it
def test_no_module_of_vit_core_imports_the_apps_stack():
    code = ("import importlib, pkgutil, sys, vit_core\n"
            "for m in pkgutil.walk_packages(vit_core.__path__, 'vit_core.'):\n"
            "    importlib.import_module(m.name)\n"
            f"print(sorted({set(APP_ONLY)!r} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stderr
