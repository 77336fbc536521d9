"""Training snapshots: the training CLI keeps them, vit_core loads them, the sidebar runs every
stage at one of them, and a link carries the step.

References are independent of the code under test: the snapshot files are read with
safetensors directly, top-1 is counted here from the scenes and labels, and the app's numbers
are compared with softmax over logits this test computes from the snapshot's own weights."""

import math

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from tests.support import open_app
from ui import keys, stages
from vit_core import CheckpointError, load_model, training_log
from vit_core.io.checkpoints import BUNDLED_DIR
from vit_core.scenes.world import SceneDataset, heldout_seeds

NAME = "shapes-classifier"


@pytest.fixture(scope="module")
def log():
    found = training_log(NAME)
    assert found is not None, f"{NAME} ships without its training log"
    return found


def test_the_classifier_was_kept_at_about_eight_log_spaced_steps(log):
    steps = log.steps
    assert steps[0] == 0 and steps[-1] == log.final_step == log.recipe["steps"]
    assert 7 <= len(steps) <= 10, steps
    ratios = [b / a for a, b in zip(steps[1:], steps[2:], strict=False)]  # log-spaced
    assert max(ratios) / min(ratios) < 2.0, ratios
    snap_dir = BUNDLED_DIR / f"{NAME}.snapshots"
    files = sorted(snap_dir.glob("*.safetensors"))
    assert {f.name for f in files} == {f"step-{s}.safetensors" for s in steps}
    assert sum(f.stat().st_size for f in files) <= 30 * 2**20  # the budget
    for f in files:  # float16, the shipped model's tensor names
        with safe_open(str(f), framework="pt") as g:
            assert {g.get_tensor(k).dtype for k in g.keys()} == {torch.float16}


def test_the_last_snapshot_is_the_shipped_classifier(log):
    shipped = load_file(str(BUNDLED_DIR / f"{NAME}.safetensors"))
    last = load_file(str(BUNDLED_DIR / f"{NAME}.snapshots" / f"step-{log.final_step}.safetensors"))
    assert shipped.keys() == last.keys()
    for k in shipped:  # the same weights, rounded to float16
        torch.testing.assert_close(last[k].float(), shipped[k].half().float(), rtol=0, atol=0)
    final = load_model(NAME)
    snap = load_model(NAME, step=log.final_step)  # the last step is the shipped model itself
    x = torch.stack([SceneDataset(heldout_seeds(4, 11))[i]["pixels"] for i in range(4)])
    with torch.no_grad():
        a, b = final(x), snap(x)
    assert torch.equal(a, b)
    from vit_core.io.checkpoints import load_checkpoint

    half = load_checkpoint(BUNDLED_DIR / f"{NAME}.snapshots" / f"step-{log.final_step}.safetensors")
    with torch.no_grad():
        c = half.eval()(x)
    assert torch.equal(a.argmax(-1), c.argmax(-1))
    assert (a - c).abs().max() < 0.05  # float16 rounding of the weights only


def test_steps_load_and_bad_steps_are_one_sentence(log):
    first = load_model(NAME, step=0)
    later = load_model(NAME, step=log.steps[3])
    assert first.info.name == f"{NAME}@step0"
    assert not torch.equal(first.pos_embed, later.pos_embed)
    with pytest.raises(CheckpointError, match=r"kept at training steps .*not at step 1\.$"):
        load_model(NAME, step=1)
    with pytest.raises(CheckpointError, match="no training snapshots"):
        load_model("vit-b16", step=0)
    assert training_log("vit-b16") is None and training_log("shapes-captioner-prefix") is None


@pytest.mark.slow  # 200 scenes through eight models
def test_each_snapshots_held_out_top1_is_what_the_log_says(log):
    ev = log.snapshot_eval
    data = SceneDataset(heldout_seeds(ev["n"], ev["seed"]))
    items = [data[i] for i in range(len(data))]
    x = torch.stack([it["pixels"] for it in items])
    y = torch.tensor([it["label"] for it in items])
    for step in log.steps:
        model = load_model(NAME, step=step)
        with torch.no_grad():
            pred = torch.cat([model(x[i:i + 50]).argmax(-1) for i in range(0, len(x), 50)])
        top1 = float((pred == y).float().mean())
        assert abs(top1 - log.snapshot(step)["top1"]) <= 0.02, (step, top1)


def test_the_log_is_a_consistent_record(log):
    train = log.train
    assert [r["step"] for r in train] == list(range(10, log.final_step + 1, 10))
    w = log.recipe["seg_weight"]
    for r in train[:: max(1, len(train) // 50)]:
        assert math.isclose(r["loss"], r["cls"] + w * r["seg"], rel_tol=1e-5)
    assert [r["step"] for r in log.held_out][-1] == log.final_step
    # the network learned: the last 100 steps' loss is far below the first 100 steps'
    first, last = (np.mean([r["loss"] for r in rows]) for rows in (train[:10], train[-10:]))
    assert last < 0.5 * first, (first, last)
    assert log.snapshot(0)["top1"] < 0.3 < log.snapshot(log.final_step)["top1"]


def _top_line(at) -> str:
    return next(c.value for c in at.sidebar.caption if c.value.startswith("fingerprint"))


def _shows_top(at, model) -> bool:
    """Does the sidebar's 'top: LABEL P%' say what this model computes on the session's sample?"""
    c = model.config
    x = SceneDataset([at.session_state[keys.SAMPLE]], mean=c.mean, std=c.std)[0]["pixels"][None]
    with torch.no_grad():
        p = model(x).double().softmax(-1)[0]
    k = int(p.argmax())
    shown = _top_line(at).split("top: ")[1]
    label, _, share = shown.rpartition(" ")
    if label != c.class_names[k]:
        return False
    if share.startswith(">"):
        return float(p[k]) > float(share[1:-1]) / 100
    if share.startswith("<"):
        return float(p[k]) < float(share[1:-1]) / 100
    return abs(100 * float(p[k]) - float(share[:-1])) <= 0.5 + 1e-9


def test_a_link_opens_every_page_at_a_training_step(log):
    at = open_app("logits", params={keys.TRAIN_STEP: "0"})
    assert at.session_state[keys.TRAIN_STEP] == 0
    assert at.query_params[keys.TRAIN_STEP] == ["0"] or at.query_params[keys.TRAIN_STEP] == "0"
    assert _shows_top(at, load_model(NAME, step=0)), _top_line(at)
    assert "Training step" in [s.label for s in at.sidebar.select_slider]
    # moving the slider to the end runs the shipped model and drops the step from the link
    at.sidebar.select_slider(key=keys.TRAIN_STEP).set_value(log.final_step).run()
    assert _shows_top(at, load_model(NAME)), _top_line(at)
    assert keys.TRAIN_STEP not in at.query_params


def test_a_step_the_model_was_not_kept_at_is_one_sentence():
    at = open_app("overview", params={keys.TRAIN_STEP: "123"})
    warned = [w.value for w in at.sidebar.warning]
    assert len(warned) == 1 and "123" in warned[0] and "final weights" in warned[0]
    assert at.session_state[keys.TRAIN_STEP] == training_log(NAME).final_step


def test_a_model_without_snapshots_has_no_step_picker():
    at = open_app("overview", "vit-b16", params={keys.TRAIN_STEP: "0"}, same_model=False)
    assert "Training step" not in [s.label for s in at.sidebar.select_slider]
    assert any("not kept at earlier training steps" in w.value for w in at.sidebar.warning)
    assert keys.TRAIN_STEP not in at.query_params


@pytest.mark.slow  # every stage, twice
@pytest.mark.parametrize("slug", list(stages.BY_SLUG))
def test_every_stage_opens_at_the_start_and_at_the_end(slug, log):
    for step in (0, log.final_step):
        at = open_app(slug, params={keys.TRAIN_STEP: str(step)}, no_error=True)
        assert at.session_state[keys.TRAIN_STEP] == step
        assert _shows_top(at, load_model(NAME, step=step)), (slug, step, _top_line(at))


def test_pip_install_ships_the_snapshots_and_the_log():
    """Every file under vit_core/bundled matches a package-data glob of pyproject.toml."""
    import fnmatch
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["vit_core"]
    for f in BUNDLED_DIR.rglob("*"):
        if f.is_file():
            rel = f.relative_to(root / "vit_core").as_posix()
            assert any(fnmatch.fnmatchcase(rel, g) and rel.count("/") == g.count("/")
                       for g in globs), rel
