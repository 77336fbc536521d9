"""The library's layout: importing it changes nothing, nothing imports in a circle, the public API
is what docs/library.md documents, and the package installs with the pinned requirements."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch

import vit_core
from tests.imports import cycles, import_graph
from tests.support import SMALL, randomised
from vit_core import ViTConfig, run_trace
from vit_core.config import SCENE_TEXT_LEN, SCENE_VOCAB

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, os, sys, threading
env, threads = dict(os.environ), {t.name for t in threading.enumerate()}
import %s
print(json.dumps({
    "env_changed": sorted(k for k in set(env) | set(os.environ) if env.get(k) != os.environ.get(k)),
    "new_threads": sorted({t.name for t in threading.enumerate()} - threads),
    "modules": sorted(m for m in sys.modules if m.split(".")[0] in ("streamlit", "ui")
                      or m.startswith("vit_core.scenes")),
    "file": sys.modules[%r].__file__,
}))
"""


def probe(module: str, cwd: Path) -> dict:
    """Import `module` in a fresh interpreter started in `cwd` and report what the import did.

    The child gets a minimal environment, not this one: this process has imported the library
    already, so a variable it set would look unchanged in a child that inherited it."""
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd)}
    out = subprocess.run([sys.executable, "-c", PROBE % (module, module)], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # a child process or a whole app session: the full suite runs it
def test_importing_vit_core_outside_the_repository_changes_nothing(tmp_path):
    seen = probe("vit_core", tmp_path)
    assert Path(seen["file"]).parent == ROOT / "vit_core"  # the installed (editable) package
    assert seen["env_changed"] == []
    assert seen["new_threads"] == []
    assert seen["modules"] == []  # no streamlit, no ui, no scene world or training


@pytest.mark.slow  # a child process or a whole app session: the full suite runs it
def test_importing_the_app_state_module_starts_no_thread_and_sets_nothing():
    seen = probe("ui.serving.state", ROOT)
    assert seen["new_threads"] == []
    assert [k for k in seen["env_changed"] if k == "OMP_WAIT_POLICY"] == []
    assert not any(m.startswith("vit_core.scenes.t") for m in seen["modules"])  # no training


@pytest.mark.slow  # a child process or a whole app session: the full suite runs it
def test_the_app_tunes_its_own_process_before_torch_loads():
    code = ("import os, sys; from ui.serving import process; r = process.tune(); "
            "import torch; print(r, os.environ['OMP_WAIT_POLICY'])")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.split() == ["True", "PASSIVE"], out.stderr


# ---- the import graph of the repository's own modules (tests/imports.py) ----

def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_of_the_repository_imports_in_a_circle():
    graph = import_graph()
    assert "vit_core.io.base" in graph and graph["vit_core.io.checkpoints"]  # the scan sees them
    assert "vit_core.io.external" in graph["vit_core.io.checkpoints"]
    assert cycles(graph) == []


def test_the_layers_point_one_way():
    """The model knows nothing of io, explain or scenes; io/base is a leaf; only scenes and tests
    may import the scene world; vit_core never imports the app."""
    graph = import_graph()
    model = ("vit_core.config", "vit_core.model", "vit_core.hooks", "vit_core.hooked",
             "vit_core.trace", "vit_core.recompute", "vit_core.masks", "vit_core.patches")
    for name in model:
        assert {m for m in graph[name] if m.startswith("vit_core.")} <= set(model), name
    assert {m for m in graph["vit_core.io.base"] if m.startswith("vit_core")} == set()
    for name, deps in graph.items():
        if name.startswith("vit_core"):
            assert not any(d.split(".")[0] in ("ui", "pages", "app") for d in deps), name
        if not name.startswith(("vit_core.scenes", "tests", "tools")):
            assert not any(d.startswith("vit_core.scenes.t") for d in deps), (name, deps)


# ---- the public API ----

def documented_signature(name: str) -> str:
    text = (ROOT / "docs" / "library.md").read_text()
    m = re.search(rf"^vit_core\.{name}(\(.*?\)) ->", text, re.M)
    assert m, f"docs/library.md documents vit_core.{name}"
    return m.group(1)


@pytest.mark.parametrize("name", ["generate", "segment", "run_trace", "run_with_hooks",
                                  "load_model", "at_size", "input_sizes", "training_log"])
def test_public_functions_have_the_signatures_the_docs_document(name):
    fn = getattr(vit_core, name)
    assert inspect.isfunction(fn), f"vit_core.{name} is a {type(fn).__name__}, not a function"
    params = []
    for p in inspect.signature(fn).parameters.values():  # names and defaults, not annotations
        star = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        params.append(star + p.name + ("" if p.default is p.empty else f"={p.default!r}"))
    assert "(" + ", ".join(params) + ")" == documented_signature(name)


def test_every_name_in_all_is_importable():
    for name in vit_core.__all__:
        assert getattr(vit_core, name) is not None


# ---- resid_pre ----

@pytest.mark.parametrize("config, mask", [
    (SMALL, None),
    (ViTConfig(img_size=32, patch_size=8, embed_dim=32, depth=3, num_heads=2, num_classes=0,
               class_token=False, global_pool="avg", vocab_size=9, max_text_len=4), "prefix"),
    (ViTConfig(img_size=32, patch_size=8, embed_dim=32, depth=3, num_heads=2, num_classes=0,
               vocab_size=9, max_text_len=4), "causal"),
])
def test_resid_pre_is_the_block_input_exactly(config, mask):
    model = randomised(config)
    text = torch.tensor([1, 5, 6]) if config.has_text else None
    tr = run_trace(model, torch.randn(1, 3, 32, 32), text_ids=text, mask=mask)
    assert torch.equal(tr["blocks.0.resid_pre"], tr["embed"])
    for layer in range(1, config.depth):
        assert torch.equal(tr[f"blocks.{layer}.resid_pre"], tr[f"blocks.{layer - 1}.resid_post"])
    # and it is what the block really read: LN1 of it is the traced ln1
    block = model.blocks[config.depth - 1]
    with torch.no_grad():
        ln = block.norm1(tr[f"blocks.{config.depth - 1}.resid_pre"])
    torch.testing.assert_close(ln, tr[f"blocks.{config.depth - 1}.ln1"], rtol=0, atol=0)


def test_shared_memory_is_counted_once_in_a_traces_size():
    tr = run_trace(randomised(SMALL), torch.randn(1, 3, 32, 32), lean=False)  # holds every name
    distinct = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tr.values()}
    assert tr.nbytes() == sum(distinct.values())
    naive = sum(t.numel() * t.element_size() for t in tr.values())
    resid_pre = sum(tr[f"blocks.{i}.resid_pre"].nbytes for i in range(SMALL.depth))
    assert tr.nbytes() <= naive - resid_pre


# ---- the text preset and the scene world speak the same words ----

def test_the_text_presets_vocabulary_is_the_scene_worlds():
    from vit_core.io.text import Tokenizer
    from vit_core.scenes.world import MAX_CAPTION_WORDS, VOCAB

    assert SCENE_VOCAB == Tokenizer(VOCAB).vocab
    assert SCENE_TEXT_LEN == MAX_CAPTION_WORDS + 1
    assert vit_core.PRESETS["vit-b16-text"].vocab == SCENE_VOCAB


# ---- installable ----

def test_pyproject_declares_the_pinned_requirements():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text()
            .splitlines()]
    pins = [p for p in pins if p and not p.startswith("-")]
    library, app = project["dependencies"], project["optional-dependencies"]["app"]
    assert sorted(library + app) == sorted(pins)
    assert not {p.split("==")[0] for p in library} & {"streamlit", "plotly", "matplotlib", "segno"}
    assert all("==" in p for p in pins)  # never an unpinned torch
    assert project["requires-python"] == ">=3.11"
    assert (ROOT / "requirements.txt").read_text().rstrip().splitlines()[-1] == "-e .[app]"
