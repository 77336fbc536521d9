"""Presenter mode's "Ask the class" answers are true for the model, mask and image shown.

Each test opens a stage's last step in AppTest, reveals its answers (tests/test_presenter.py's
`reveal`) and checks their words against numbers worked out here: both interventions run and
compared, the multiply-adds counted from the config, the pixel pairs counted by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.independent import SOS, pixels_of
from tests.support import open_app, reveal
from ui import keys
from vit_core import load_image, load_model, preprocess, run_trace
from vit_core.explain import interventions as iv

HUB = "tests/fixtures/hub"
DEIT = f"{HUB}/tiny-org/deit-distilled"
HEADLESS = f"{HUB}/tiny-org/vit-headless"
NOCLS = f"{HUB}/timm/vit_tiny_avg_nocls.test"
CAUSAL = {"mask": "causal"}


def read_out(model, tr) -> torch.Tensor:
    """What the model's output is read from: its logits, or (headless with CLS) the final CLS
    vector, or (headless without) the final patch tokens' mean."""
    c = model.config
    if c.num_classes:
        return tr.logits.double()
    final = tr["ln_final"].double()
    return final[0] if c.class_token else final[c.num_prefix_tokens:].mean(0)


def other_pixels(at, model) -> torch.Tensor:
    """Another sample picture than the one shown, preprocessed for `model`."""
    from ui.selection.inputs import sample_bytes, sample_seeds

    shown = at.session_state[keys.INPUT].data
    data = next(sample_bytes(s) for s in sample_seeds() if sample_bytes(s) != shown)
    return preprocess(load_image(data), model.config)


# ---------------------------------------------------------------- 1. experiments, causal
@pytest.mark.parametrize("name", ["shapes-classifier", "vit-ti16", DEIT, HEADLESS, NOCLS])
def test_the_positions_experiments_answer_under_a_causal_mask_matches_both_runs(name):
    answers, at = reveal("experiments", name, CAUSAL)
    model = load_model(name)
    c, pre = model.config, model.config.num_prefix_tokens
    pixels = pixels_of(at, model)
    plain = iv.without_positions(model, pixels, mask="causal")
    shuffled, perm = iv.shuffle_patches(model, pixels, seed=3, positions=False, mask="causal")
    same = float((read_out(model, plain) - read_out(model, shuffled)).abs().max())
    # the patch tokens, the shuffled run's put back in the picture's order, do differ
    back = torch.empty_like(perm)
    back[perm] = torch.arange(len(perm))
    tokens = plain["ln_final"][pre:pre + c.num_patches].double()
    moved = shuffled["ln_final"][pre:pre + c.num_patches].double()[back]
    assert float((tokens - moved).abs().max()) > 1e-4
    text = answers[-1]  # the stage's last question: the shuffle without positions
    if name == NOCLS:  # the mean of the patch tokens: the order reaches the output
        assert same > 1e-4
        assert "they need not" in text and "order matters even without positions" in text
        return
    assert same == 0.0  # read from CLS (and DIST), which see no patch
    other = other_pixels(at, model)  # ... for any picture
    assert torch.equal(read_out(model, iv.without_positions(model, other, mask="causal")),
                       read_out(model, plain))
    assert "need not" not in text
    assert "exactly the same" in text and "any image" in text
    assert "CLS sees only itself" in text
    assert ("DIST only CLS and itself" in text) == c.dist_token
    assert "patch tokens themselves do differ" in text


# ---------------------------------------------------------------- 2. embeddings, causal
@pytest.mark.parametrize("name", ["shapes-classifier", DEIT, HEADLESS, NOCLS])
def test_what_positions_do_under_a_causal_mask_is_said_from_the_output(name):
    answers, at = reveal("embeddings", name, CAUSAL)
    model = load_model(name)
    a, b = pixels_of(at, model), other_pixels(at, model)
    outs = [read_out(model, run_trace(model, p, mask="causal", positions=pos))
            for p in (a, b) for pos in (True, False)]
    text = answers[1]
    if name == NOCLS:
        assert float((outs[0] - outs[2]).abs().max()) > 1e-4  # the picture reaches the output
        assert "the order still reaches the model through the mask" in text
        return
    # the output is the same for both pictures, with positions and without
    assert torch.equal(outs[0], outs[2]) and torch.equal(outs[1], outs[3])
    assert "still reaches the model" not in text
    assert "same for every image" in text and "stay so without positions" in text


# ---------------------------------------------------------------- 3. patches, captioner
def test_the_captioners_patch_answer_says_it_counts_the_image_tokens():
    name = "shapes-captioner-causal"
    answers, at = reveal("patches", name)
    model = load_model(name)
    c = model.config
    pixels = pixels_of(at, model)
    s = run_trace(model, pixels)["embed"].shape[0]  # the image tokens alone
    writing = run_trace(model, pixels, text_ids=[SOS])["embed"].shape[0]
    assert writing == s + 1  # every text token lengthens the sequence
    s2 = (c.img_size // (c.patch_size // 2)) ** 2 + c.num_prefix_tokens
    text = answers[0]
    assert f"the image tokens grow from {s:,} to {s2:,}" in text
    assert f"{s2 * s2 / (s * s):.1f}× bigger" in text
    assert f"S = {s:,} + T tokens, or {s2:,} + T" in text
    assert f"the sequence grows from S = {s:,}" not in text


# ---------------------------------------------------------------- 4. shapes: the costliest step
def macs_by_hand(c) -> dict[str, tuple[int, bool]]:
    """Multiply-adds of one pass per step, and whether the step runs in every block."""
    N, D, F_, L, H = c.num_patches, c.embed_dim, c.mlp_hidden, c.depth, c.num_heads
    S, cpp, dk = c.num_image_tokens, c.in_chans * c.patch_size ** 2, c.head_dim
    out = {"patch embedding": (N * cpp * D, False), "Q, K, V": (L * S * D * 3 * D, True),
           "scores": (L * H * S * dk * S, True), "A V": (L * H * S * S * dk, True),
           "W_O": (L * S * D * D, True), "MLP up": (L * S * D * F_, True),
           "MLP down": (L * S * F_ * D, True)}
    if c.num_classes:
        out["class head"] = ((2 if c.dist_token else 1) * D * c.num_classes, False)
    if c.seg_classes:
        out["segmentation head"] = (N * D * c.seg_classes * c.seg_upsample ** 2, False)
    return out


@pytest.mark.parametrize("name", ["shapes-classifier", NOCLS])
def test_the_costliest_step_names_every_tie_and_counts_layers_only_for_blocks(name):
    answers, _ = reveal("shapes", name)
    c = load_model(name).config
    macs = macs_by_hand(c)
    most = max(m for m, _ in macs.values())
    tops = [s for s, (m, _) in macs.items() if m == most]
    text = answers[0]
    assert text.startswith(" and ".join(tops))
    if len(tops) > 1:  # MLP up and MLP down: S·D·F each per block
        assert tops == ["MLP up", "MLP down"] and "tied" in text and "each" in text
    in_blocks = macs[tops[0]][1]
    assert (f"over their {c.depth} layers" in text or f"over its {c.depth} layers" in text) == (
        in_blocks and c.depth > 1)
    if not in_blocks:
        assert "layer" not in text and "once per pass" in text
    assert "1 layers" not in text


# ---------------------------------------------------------------- 5. segmentation edges
def labels_by_hand(model, pixels) -> np.ndarray:
    """The class per pixel: each patch's r×r cell scores on the grid, bilinear, argmax."""
    c = model.config
    s = run_trace(model, pixels)["seg_logits"]
    g, r = c.grid, c.seg_upsample
    grid = torch.zeros(c.seg_classes, g * r, g * r, dtype=s.dtype)
    for n in range(g * g):
        pr, pc = divmod(n, g)
        grid[:, pr * r:(pr + 1) * r, pc * r:(pc + 1) * r] = s[n]
    return F.interpolate(grid[None], size=(c.img_size,) * 2, mode="bilinear",
                         align_corners=False)[0].argmax(0).numpy()


@pytest.mark.parametrize(("link", "above"), [({"sample": "1000000540"}, False),
                                           ({"scene": "ball_blue_snow_right_97_129_0_45"}, True)],
                         ids=["sample-1000000540", "scene-ball_blue_snow_right"])
def test_class_edges_are_weighed_against_pairs_counted_by_hand(link, above):
    name = "shapes-classifier"
    answers, at = reveal("segmentation", name, link)
    model = load_model(name)
    P, size = model.config.patch_size, model.config.img_size
    lab = labels_by_hand(model, pixels_of(at, model))
    row_pairs = size - 1  # pairs (x, x + 1) along one row
    row_cuts = sum(1 for x in range(1, size) if x % P == 0)  # of them straddling a border
    pairs, cuts = 2 * size * row_pairs, 2 * size * row_cuts
    chance = cuts / pairs
    h, v = lab[:, 1:] != lab[:, :-1], lab[1:, :] != lab[:-1, :]
    border = np.arange(1, size) % P == 0
    changes, on = int(h.sum() + v.sum()), int(h[:, border].sum() + v[border, :].sum())
    share = on / changes
    text = answers[1]
    assert f"{on:,} of the {changes:,} neighbouring pixel pairs" in text
    assert f"Of all {pairs:,} neighbouring pairs, {cuts:,} do" in text
    assert f"about 1 in {round(pairs / cuts)}" in text and f"1 in {P} " not in text
    ratio = share / chance
    assert share < 0.5 and (ratio >= 2) == above  # 0.9× and 5× what random edges give
    if ratio >= 2:
        assert f"{ratio:.0f}× as often as edges placed at random would" in text
        assert "the grid still shows" in text
    else:
        assert f"({ratio:.1f}×)" in text or f"only {ratio:.1f}×" in text


# ---------------------------------------------------------------- 6. small ones
@pytest.mark.parametrize("name", ["shapes-classifier", DEIT])
def test_under_a_causal_mask_no_head_map_is_asked_about(name):
    """CLS sees only itself (and DIST only CLS and itself): the every-head step's maps colour
    no patch, so it asks nothing; the other questions remain."""
    answers, at = reveal("attention", name, CAUSAL)
    model = load_model(name)
    c = model.config
    tr = run_trace(model, pixels_of(at, model), mask="causal")
    row = tr[f"blocks.{c.depth - 1}.attn.pattern"].double()[:, 0].mean(0)  # CLS is token 0
    assert float(row[1:].abs().sum()) == 0.0 and float(row[0]) == pytest.approx(1.0)
    assert not any("shared scale" in a for a in answers), answers
    assert len(answers) == 2  # how evenly, how far


@pytest.mark.parametrize("name", ["shapes-classifier", DEIT])
def test_the_brightest_patch_of_the_heads_maps_is_read_off_the_trace(name):
    """The CLS row of the layer shown, over the patches, in every head, worked out here: the
    brightest cell of all the maps (one scale) and each head's brightest patch."""
    answers, at = reveal("attention", name)
    model = load_model(name)
    c = model.config
    layer, pre = int(at.session_state[keys.LAYER]), c.num_prefix_tokens
    tr = run_trace(model, pixels_of(at, model))
    rows = tr[f"blocks.{layer}.attn.pattern"].double()[:, 0, pre:pre + c.num_patches]
    text = next(a for a in answers if "the top of the maps' shared scale" in a)
    top = int(rows.max(0).values.argmax())
    assert text.startswith(f"Patch {top} ({top // c.grid},{top % c.grid}): head "), text
    fav = [int(r.argmax()) for r in rows]
    for h, j in enumerate(fav):
        assert f"head {h} → patch {j} (" in text
    shared = max(fav.count(j) for j in fav)
    assert text.endswith("All the heads share it." if shared == c.num_heads else
                         f"{shared} of the {c.num_heads} heads share a brightest patch."
                         if shared > 1 else "No two heads share a brightest patch."), text


def test_the_headless_cls_answer_reads_without_a_stray_comma():
    answers, at = reveal("embeddings", HEADLESS)
    model = load_model(HEADLESS)
    pixels = pixels_of(at, model)
    a = iv.without_positions(model, pixels)
    b, _ = iv.shuffle_patches(model, pixels, seed=1, positions=False)
    assert float((a["ln_final"][0] - b["ln_final"][0]).abs().max()) < 1e-5  # CLS: same
    assert "and the CLS token would come out the same" in answers[1]
    assert "token, would" not in answers[1]


def test_a_probability_below_one_is_never_shown_as_100_percent():
    """At T = 0.5 the first word's drawn probability is 99.95 %: not printed as 100.0 %."""
    name = "shapes-captioner-causal"
    at = open_app(model=name, params={"page": "logits"}, state={keys.TEMPERATURE: 0.5})
    for t in [t for t in at.toggle if str(t.key).startswith(keys.REVEAL_PREFIX)]:
        t.set_value(True)
    at.run()
    assert not at.exception
    answers = [i.value for i in at.info if i.icon == ":material/lightbulb:"]
    model = load_model(name)
    z = run_trace(model, pixels_of(at, model), text_ids=[SOS]).logits[-1].double()
    best = int(z.argmax())
    p = float((z / 0.5).softmax(-1)[best])
    assert 0.9995 <= p < 1  # rounds to 100.0 % with one decimal
    assert "100.0%" not in answers[0], answers
    assert f"“{model.config.vocab[best]}”, gets >99.9%;" in answers[0], answers[0]
