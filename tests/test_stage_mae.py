"""Stage 12, masked patches (MAE), under AppTest on the fixture ViTMAE (tests/fixtures/
hf_vit_mae_tiny, as a loaded folder): every number said is recomputed here, from the MAE run
again on the session's image with masking built here (noise by hand, errors in float64)."""

from __future__ import annotations

import re

import pytest
import torch

import ui.stages.mae as stage
from tests.support import arr, chart_titled, note, open_app, page_text
from ui import keys
from vit_core import load_image, load_mae, preprocess

MAE = "tests/fixtures/hf_vit_mae_tiny"  # 16 px, 4 px patches: N = 16; norm_pix_loss
N = 16


def hand_pass(at, hidden: list[int]) -> dict:
    """The MAE on the session's image with exactly `hidden` hidden, and every number the stage
    says, computed here: noise 2 + u for hidden patches and u for visible ones (u random), so
    the visible ones come first in a random order; errors and means in float64."""
    mae = load_mae(MAE)
    c = mae.encoder.config
    pixels = preprocess(load_image(at.session_state[keys.INPUT].data), c)
    u = torch.rand(1, N, generator=torch.Generator().manual_seed(123))
    noise = u + 2.0 * torch.isin(torch.arange(N), torch.tensor(hidden)).float()
    with torch.no_grad():
        out = mae(pixels, noise=noise, n_visible=N - len(hidden))
    assert sorted(torch.nonzero(out.mask[0]).flatten().tolist()) == sorted(hidden)
    x = pixels[0].double()
    err = []
    for i in range(N):  # each patch by hand, (row, col, channel), normalised (norm_pix_loss)
        r, col = divmod(i, 4)
        t = x[:, 4 * r:4 * r + 4, 4 * col:4 * col + 4].permute(1, 2, 0).flatten()
        t = (t - t.mean()) / (t.var(unbiased=True) + 1e-6).sqrt()
        err.append(((out.pred[0, i].double() - t) ** 2).mean().item())
    visible = [i for i in range(N) if i not in hidden]
    loss = sum(err[i] for i in hidden) / len(hidden)
    worst = max(hidden, key=lambda i: err[i])
    return {"err": err, "loss": loss, "worst": worst,
            "visible": sum(err[i] for i in visible) / len(visible), "all": sum(err) / N}


def random_hidden(ratio: float, seed: int) -> list[int]:
    """What the stage hides at random: the N − ⌊N (1 − r)⌋ patches of largest noise, the noise
    torch.rand(1, N) seeded `seed` (the stage's masking)."""
    noise = torch.rand(1, N, generator=torch.Generator().manual_seed(seed))[0]
    keep = int(N * (1 - ratio) + 1e-9)
    return sorted(noise.argsort()[keep:].tolist())


def number_after(text: str, before: str) -> float:
    """The number printed right after `before` (4 decimals: compared to 5e-5, so a pass in
    another token order, equal to float rounding, cannot flip the last digit into a failure)."""
    m = re.search(re.escape(before) + r"(-?[0-9][0-9.,]*)", text)
    assert m, (before, text)
    return float(m.group(1).rstrip(".").replace(",", ""))


def near(text: str, before: str, value: float) -> bool:
    return abs(number_after(text, before) - value) <= 5e-5 + 1e-7


def test_the_steps_say_this_images_numbers_at_the_mae_s_own_ratio():
    at = open_app("mae", MAE, no_error=True)
    hidden = random_hidden(0.75, 0)
    h = hand_pass(at, hidden)
    text = note(at)
    assert "12 of the 16 patches are hidden and the encoder reads the other 4" in text
    assert "N_vis = ⌊N (1 − r)⌋ = ⌊16 × 0.25⌋ = 4" in text
    assert "S = 1 + 4 = 5 tokens instead of 17" in text and "5×5 = 25 instead of 289" in text
    assert "adds 12 copies of one learned [MASK] vector" in text and "S_dec = 1 + 16 = 17" in text
    assert near(text, "L = ", h["loss"])
    assert near(text, "Counted over all 16 patches it would be ", h["all"])
    w = h["worst"]
    assert f"The hardest hidden patch is patch {w} (row {w // 4}, column {w % 4})" in text
    assert near(text, f"column {w % 4}): error ", h["err"][w])
    assert near(text, "(mean error ", h["visible"])
    # the error map holds every patch's error, its colour bar says what the colour is
    spec = chart_titled(at, "Error per patch")
    z = arr(spec["data"][0]["z"]).ravel()
    assert all(abs(a - b) < 1e-4 for a, b in zip(z, h["err"], strict=True))
    assert "squared error" in spec["data"][0]["colorbar"]["title"]["text"]
    # the loss chart's bars are the hidden patches' errors, its line their mean
    bars = chart_titled(at, "The loss")
    y = arr(bars["data"][0]["y"])
    assert len(y) == 12 and abs(y.mean() - h["loss"]) < 1e-5


def test_patches_hidden_by_hand_are_the_ones_measured():
    hidden = [0, 5, 10]
    at = open_app("mae", MAE, no_error=True,
                  state={keys.MAE_MODE: "click", keys.MAE_HIDDEN: hidden})
    h = hand_pass(at, hidden)
    text = note(at)
    assert "You hid 3 of the 16 patches (19%); the encoder reads the other 13." in text
    assert "S = 1 + 13 = 14 tokens instead of 17" in text
    assert near(text, "L = ", h["loss"]) and "|M| = 3 hidden patches" in text
    assert "P²C = 4×4×3 = 48 values" in text


@pytest.mark.slow  # two AppTest runs; the quick tier keeps the MAE's own ratio
@pytest.mark.parametrize("ratio", [0.5, 0.9])
def test_another_ratio_hides_another_count(ratio):
    at = open_app("mae", MAE, no_error=True, state={keys.MAE_RATIO: ratio})
    keep = int(N * (1 - ratio) + 1e-9)  # 8 at 0.5; 1.6 -> 1 at 0.9
    assert f"{N - keep} of the 16 patches are hidden and the encoder reads the other {keep}" \
        in note(at)
    h = hand_pass(at, random_hidden(ratio, 0))
    assert near(note(at), "L = ", h["loss"])


@pytest.mark.slow  # an AppTest run; the quick tier keeps the stage's main runs
def test_another_session_model_is_told_the_stage_runs_the_mae(monkeypatch):
    from ui.stages import choices

    monkeypatch.setattr(choices, "DEFAULT_MAE", MAE)
    at = open_app("mae", "shapes-classifier", no_error=True)
    assert ("The sidebar's model, shapes-classifier, is not a masked autoencoder, so this stage "
            f"runs the MAE {MAE} on the same image.") in note(at)
    assert re.search(r"12 of the 16 patches are hidden", note(at))


@pytest.mark.slow  # an AppTest run; the quick tier keeps the stage's main runs
def test_without_any_mae_the_stage_says_how_to_get_one(monkeypatch):
    from vit_core.io.mae_files import bundled_maes

    if bundled_maes():
        pytest.skip("a bundled MAE ships: the stage runs it")
    from ui.stages import choices

    monkeypatch.setattr(choices, "DEFAULT_MAE", "no-such-mae")
    at = open_app("mae", "shapes-classifier", no_error=True)
    assert stage.NO_MAE in note(at)
    assert "the first step says how to get one" in page_text(at)
