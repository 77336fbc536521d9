"""The facts the Training, Logits and MAE stages say, as vit_core.explain computes them
(explain/training.py, logit_facts.py, readout.py, mae_facts.py), against references worked out
here: float64 loops over plain Python numbers, math.exp and math.log, pixel-by-pixel sums, and
a masked-autoencoder pass whose errors are recomputed patch by patch."""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from vit_core.config import ViTConfig
from vit_core.explain import logit_facts as lf
from vit_core.explain import mae_facts as mf
from vit_core.explain import readout
from vit_core.explain import training as tx
from vit_core.mae import MAE, MAEConfig
from vit_core.model import ViT


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def softmax_by_hand(row, T: float = 1.0) -> list[float]:
    z = [float(v) / T for v in row]
    top = max(z)
    e = [math.exp(v - top) for v in z]
    return [v / sum(e) for v in e]


# ---------------------------------------------------------------- training
def test_grid_steps_count_rows_and_columns():
    g = 5
    where = {p: (p // g, p % g) for p in range(g * g)}  # (row, column) of each patch
    for a in range(g * g):
        for b in range(g * g):
            (ra, ca), (rb, cb) = where[a], where[b]
            assert tx.grid_steps(a, b, g) == abs(ra - rb) + abs(ca - cb)


def test_local_blocks_and_spread_are_the_blocks_with_a_close_head():
    d = rng(1).uniform(10, 60, size=(6, 4))
    baseline, share = 50.0, 0.5
    want = [i for i in range(6) if any(float(v) < share * baseline for v in d[i])]
    assert tx.local_blocks(d, baseline, share) == want
    flat = [float(v) for v in d.reshape(-1)]
    assert tx.spread(d) == (min(flat), max(flat))


def test_the_cls_row_is_the_heads_mean_of_cls_to_the_patches():
    H, pre, N = 3, 2, 9
    rows = torch.rand(H, pre, pre + N + 1, generator=torch.Generator().manual_seed(2))
    got = tx.cls_patch_row(rows, pre, N)
    for p in range(N):
        want = sum(float(rows[h, 0, pre + p]) for h in range(H)) / H
        assert abs(float(got[p]) - want) < 1e-12
    assert got.dtype == torch.float64 and got.shape == (N,)


def test_the_object_ratio_is_the_share_on_object_pixels_over_the_object_share():
    """Each patch's attention spread evenly over its pixels, summed over the object's pixels,
    over the object's share of all pixels, pixel by pixel; and the scene world's own ratio."""
    from vit_core.scenes.evaluate import object_attention_ratio

    g, P = 4, 3
    mask = np.zeros((g * P, g * P), dtype=np.int64)
    mask[2:8, 3:10] = 1
    cls = rng(3).uniform(0, 1, size=g * g)
    on = total = 0.0
    for y in range(g * P):
        for x in range(g * P):
            a = cls[(y // P) * g + x // P] / (P * P)
            total += a
            on += a if mask[y, x] else 0.0
    object_share = mask.sum() / mask.size
    want = (on / total) / object_share
    cover = tx.object_cover(mask, g, P)
    assert tx.object_ratio(cls, cover) == pytest.approx(want, rel=1e-12)
    world = float(object_attention_ratio(torch.tensor(cls)[None], torch.tensor(mask)[None], g)[0])
    assert tx.object_ratio(cls, cover) == pytest.approx(world, rel=1e-6)
    facts = tx.object_attention(cls, cover)
    assert facts["cover"] == pytest.approx(object_share)
    assert facts["on_object"] == pytest.approx(on / total, rel=1e-12)
    assert tx.object_ratio(cls, np.zeros(g * g)) is None  # no object pixel
    assert tx.object_ratio(np.zeros(g * g), cover) is None  # no attention


def test_attention_shares_sum_to_one_and_the_top_is_within_the_tie():
    cls = np.array([0.1, 0.3, 0.29, 0.2, 0.0])  # shares 0.337 and 0.326 on top
    total = sum(cls)
    best = max(v / total for v in cls)
    for tie, want in ((0.02, (1,)), (0.04, (1, 2))):  # within 2 %, 4 % of the best share
        share, top = tx.attention_shares(cls, tie=tie)
        assert [float(s) for s in share] == pytest.approx([v / total for v in cls])
        assert top == tuple(i for i, v in enumerate(cls) if v / total >= best - tie * best)
        assert top == want
    assert tx.attention_shares(np.zeros(3), 0.01)[1] == ()


def test_softmax64_and_the_prediction_curve():
    steps = [0, 10, 100, 1000]
    logits = torch.tensor([[0.0, 0.0, 0.0], [1.0, 0.5, 0.0], [0.0, 2.0, 0.1], [0.2, 3.0, 1.0]])
    probs = [tx.softmax64(z) for z in logits]
    for z, p in zip(logits, probs, strict=True):
        assert list(p) == pytest.approx(softmax_by_hand(z), abs=1e-15)
    curve = tx.prediction_curve(steps, probs)
    assert curve.final == 1  # the last step's top class
    assert curve.curve == pytest.approx([softmax_by_hand(z)[1] for z in logits])
    assert curve.since == 100  # on top at 100 and 1000, not at 10 (class 0 there)
    assert list(curve.start) == pytest.approx(softmax_by_hand(logits[0]))


def test_log_facts_count_the_scenes_seen_one_new_batch_per_step():
    rows = [{"step": s, "loss": 2.0 - s / 100} for s in (10, 20, 30)]
    log = SimpleNamespace(final_step=30, recipe={"batch": 64}, steps=(0, 30), train=rows,
                          held_out=[], snapshots=[], seconds=600.0, snapshot=lambda s: None,
                          snapshot_eval={"n": 5})
    f = tx.log_facts(log, 20)
    assert (f["seen"], f["seen_all"], f["minutes"]) == (20 * 64, 30 * 64, 10.0)
    assert f["row"] == rows[1] and f["end_row"] == rows[2]
    assert f["loss"] == ([10, 20, 30], [1.9, 1.8, 1.7])


# ---------------------------------------------------------------- logits
def test_tempered_top_and_order_by_hand():
    z = torch.tensor([0.5, -1.0, 2.0, 1.9])
    for T in (0.5, 1.0, 3.0):
        assert list(lf.tempered(z, T)) == pytest.approx(softmax_by_hand(z, T), abs=1e-6)
    assert lf.top_of([0.1, 0.7, 0.2]) == (1, pytest.approx(0.7))
    o = lf.logit_order(z.double().numpy())
    ranked = sorted(range(4), key=lambda k: -float(z[k]))
    assert (o.lo, o.hi, o.first, o.second) == (-1.0, 2.0, ranked[0], ranked[1])
    assert lf.logit_order(np.array([1.5])).second is None


def test_live_words_and_caption_scores():
    assert lf.live_words(np.array([0.5, 0.0, 0.25, 0.25, 0.0])) == 3
    s = lf.caption_scores(["a", "red", "ball"], [0.9, 0.05, 0.3], doubted=0.1)
    assert (s.low, s.high, s.doubted) == (("red", 0.05), ("a", 0.9), ["red"])
    assert lf.caption_scores([], [], 0.1) is None


@pytest.mark.parametrize("kind, ahead", [("full", True), ("causal", False), ("prefix", False)])
def test_a_text_position_sees_the_words_after_it_only_under_the_full_mask(kind, ahead):
    assert lf.sees_ahead(kind, 4) is ahead


def test_distribution_and_lens_summary_give_the_sums_and_the_maximum_entropy():
    p = torch.tensor([0.5, 0.2, 0.2, 0.1])
    d = readout.distribution(p, 3)
    assert d["together"] == pytest.approx(0.5 + 0.2 + 0.2)
    P = torch.tensor([[0.3, 0.3, 0.4], [0.1, 0.6, 0.3]])
    s = readout.lens_summary(P)
    assert s["max_entropy"] == pytest.approx(math.log(3))
    assert s["p_max_even"] == pytest.approx(0.6 * 3)


def test_lens_at_is_the_lens_of_the_classifier_at_a_temperature():
    """Row 0: the final LayerNorm and head on the CLS token after the embedding; row l + 1:
    after block l; float64 by hand (the lens_by_hand of tests/test_stage_logits.py)."""
    from vit_core import load_model, run_trace

    model = load_model("shapes-classifier")
    c = model.config
    tr = run_trace(model, torch.rand(1, 3, c.img_size, c.img_size,
                                     generator=torch.Generator().manual_seed(4)))
    rows = [tr["embed"][0]] + [tr[f"blocks.{i}.resid_post"][0] for i in range(c.depth)]
    x = torch.stack(rows).double()
    x = (x - x.mean(-1, keepdim=True)) / (x.var(-1, unbiased=False, keepdim=True)
                                          + model.norm.eps).sqrt()
    x = x * model.norm.weight.double() + model.norm.bias.double()
    z = x.detach() @ model.head.weight.detach().double().T + model.head.bias.detach().double()
    T = 2.0
    got = lf.lens_at(model, tr, T)
    want = torch.stack([torch.tensor(softmax_by_hand(r, T)) for r in z])
    assert np.abs(got.probs - want.numpy()).max() < 1e-4
    final = [int(k) for k in np.argsort(-lf.tempered(tr.logits, T))[:3]]
    assert got.drawn[:3] == final


# ---------------------------------------------------------------- the masked autoencoder
def tiny_mae(norm_pix: bool) -> MAE:
    torch.manual_seed(0)
    enc = ViT(ViTConfig(img_size=16, patch_size=4, embed_dim=16, depth=1, num_heads=2,
                        num_classes=0))
    model = MAE(enc, MAEConfig(decoder_dim=8, decoder_depth=1, decoder_heads=2,
                               norm_pix_loss=norm_pix))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not p.requires_grad:
                continue
            p.copy_(torch.randn_like(p) * 0.3 + (1.0 if "norm" in name and "weight" in name
                                                 else 0.0))
    return model.eval()


@pytest.mark.parametrize("norm_pix", [True, False])
def test_measure_gives_each_patchs_error_the_loss_and_the_flat_guess(norm_pix):
    model = tiny_mae(norm_pix)
    c, N, P = model.encoder.config, 16, 4
    x = torch.rand(1, 3, 16, 16, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        out = model(x, noise=torch.rand(1, N, generator=torch.Generator().manual_seed(7)),
                    n_visible=5)
    f = mf.measure(out, x, c, model.config, "random", 0.7)
    hidden = sorted(int(i) for i in torch.nonzero(out.mask[0]).flatten())
    visible = [i for i in range(N) if i not in hidden]
    patches = []  # (row, column, channel) order, float64
    for i in range(N):
        r, col = divmod(i, 4)
        patches.append(x[0, :, P * r:P * r + P, P * col:P * col + P].double()
                       .permute(1, 2, 0).reshape(-1))
    targets = [(t - t.mean()) / (t.var(unbiased=True) + 1e-6).sqrt() if norm_pix else t
               for t in patches]
    err = [float(((out.pred[0, i].double() - targets[i]) ** 2).mean()) for i in range(N)]
    if norm_pix:  # the flat guess: 0 for every normalised value
        flat = [float((targets[i] ** 2).mean()) for i in range(N)]
    else:  # the visible patches' mean colour in every pixel
        colour = sum(patches[i].view(-1, 3).mean(0) for i in visible) / len(visible)
        flat = [float(((patches[i].view(-1, 3) - colour) ** 2).mean()) for i in range(N)]
    assert list(f.hidden) == hidden and sorted(f.visible) == visible
    assert list(f.error) == pytest.approx(err, abs=1e-5)
    loss = sum(err[i] for i in hidden) / len(hidden)
    flat_loss = sum(flat[i] for i in hidden) / len(hidden)
    assert f.loss == pytest.approx(loss, rel=1e-5)
    assert f.flat == pytest.approx(flat_loss, rel=1e-5)
    assert f.flat_times == pytest.approx(flat_loss / loss, rel=1e-5)
    assert f.below_flat == pytest.approx(1 - loss / flat_loss, rel=1e-4)
    worst = max(hidden, key=lambda i: err[i])
    assert f.hardest == worst and f.easiest == min(hidden, key=lambda i: err[i])
    assert f.hardest_times == pytest.approx(err[worst] / loss, rel=1e-5)
    assert (f.S_enc, f.S_dec, f.P2C) == (6, 17, 48)
    assert (f.enc_scores, f.full_scores) == (36, 289)
    assert f.shapes == ((16, 48), (6, 16), (6, 16), (17, 8), (17, 8), (16, 48))
    assert f.exact_visible == math.floor(16 * (1 - 0.7) + 1e-9)


# ---------------------------------------------------------------- shares through the formatter
HAND_PERCENT = re.compile(r"\{[^{}]*:[^{}]*%\}")  # an f-string field formatted as a percent


def test_these_stages_print_no_share_by_hand():
    """Every share in the Training, Logits and MAE stages goes through ui/numbers (pct,
    percent): no `{x:.1%}` of their own."""
    root = Path(__file__).resolve().parents[1] / "ui" / "stages"
    found = [f"{path.relative_to(root)}:{n}: {line.strip()}"
             for pkg in ("training", "logits", "mae") for path in sorted((root / pkg).glob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if HAND_PERCENT.search(line)]
    assert not found, "\n".join(found)
    assert HAND_PERCENT.search('text=[f"{probs[i]:.1%}" for i in order]')  # the check sees one


def test_a_headless_models_final_cls_and_the_patches_that_point_like_it():
    from vit_core import run_trace

    torch.manual_seed(8)
    model = ViT(ViTConfig(img_size=16, patch_size=4, embed_dim=16, depth=1, num_heads=2,
                          num_classes=0)).eval()
    tr = run_trace(model, torch.rand(1, 3, 16, 16, generator=torch.Generator().manual_seed(9)))
    x = tr["ln_final"].double()
    cls = [float(v) for v in x[0]]
    cos = []
    for p in range(16):
        v = [float(t) for t in x[1 + p]]
        dot = sum(a * b for a, b in zip(v, cls, strict=True))
        cos.append(dot / math.sqrt(sum(a * a for a in v) * sum(b * b for b in cls)))
    s = readout.headless_summary(tr)
    assert s["token"] == "CLS" and s["norm"] == pytest.approx(math.sqrt(sum(a * a for a in cls)))
    assert list(s["similarity"]) == pytest.approx(cos, abs=1e-5)
    assert (s["sim_lo"], s["sim_hi"]) == pytest.approx((min(cos), max(cos)), abs=1e-5)
    assert [p for p, _ in s["nearest"]] == sorted(range(16), key=lambda p: -cos[p])[:3]
