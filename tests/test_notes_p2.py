"""Attention, masks, logits, shape trace and segmentation pages: every number they show against an
independent computation from the raw trace tensors (numpy, float64, hand formulas, torch's FLOP
counter), and every computed note on two inputs where its wording must differ. (Every page on
every model family without an exception: test_every_page.py.)"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image
from streamlit.testing.v1 import AppTest
from torch.utils.flop_counter import FlopCounterMode

from tests.support import HUB, arr, charts, note, open_app, softmax64
from tests.support import chart_titled as chart
from tests.support import page_text as text
from ui import keys
from ui.drawing import figures
from ui.stages.logits.keys import GEN_NEXT
from vit_core import ViT, ViTConfig, allowed_keys, load_image, load_model, preprocess, run_trace
from vit_core.io.base import ModelInfo
from vit_core.io.checkpoints import save_checkpoint
from vit_core.io.text import Tokenizer

DEIT, AVG_FC, NOCLS, HEADLESS, ONE = (str(HUB / r) for r in (
    "tiny-org/deit-distilled", "timm/vit_tiny_avg_fcnorm.test", "timm/vit_tiny_avg_nocls.test",
    "tiny-org/vit-headless", "tiny-org/vit-1block-1head-p14"))


# ---------------------------------------------------------------- driving the pages
def open_page(page: str, model: str = "shapes-classifier", mask: str | None = None,
              upload: bytes | None = None) -> AppTest:
    """Open `page` on `model` (a name or a checkpoint path) and check it really ran that model."""
    return open_app(page, model, mask, no_error=True,
                    upload=None if upload is None else ("photo.png", upload, "image/png"))


def traced(at, model_name: str, mask=None, text_ids=None):
    """The trace of the page's image, run here (not read from the app's cache)."""
    model = load_model(model_name)
    pixels = preprocess(load_image(at.session_state[keys.INPUT].data), model.config)
    return model, run_trace(model, pixels, mask=mask, text_ids=text_ids)


def png(colour=(128, 128, 128), size=300) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (size, size), colour).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def local_model(tmp_path_factory) -> str:
    """A constructed model whose every patch attends to itself: zero patch embedding, random
    positions, W_Q = W_K = 10 I, and sublayers that write nothing back (so both layers agree)."""
    c = ViTConfig(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=3,
                  class_names=("a", "b", "c"))
    m = ViT(c)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        m.patch_embed.proj.weight.zero_()
        m.patch_embed.proj.bias.zero_()
        m.pos_embed.copy_(torch.randn(m.pos_embed.shape, generator=g))
        for b in m.blocks:
            b.attn.qkv.weight.zero_()
            b.attn.qkv.bias.zero_()
            b.attn.qkv.weight[:32] = 10 * torch.eye(32)
            b.attn.qkv.weight[32:64] = 10 * torch.eye(32)
            b.attn.proj.weight.zero_()
            b.mlp.fc2.weight.zero_()
    m.info = ModelInfo("local", "file", True, "every patch attends to itself")
    return str(save_checkpoint(m, tmp_path_factory.mktemp("local") / "local.safetensors"))


# ---------------------------------------------------------------- attention page
def np_distance(P: np.ndarray, g: int, ps: int, pre: int) -> np.ndarray:
    """[H, S, S] -> [H] mean attention distance, patch block re-normalised, by hand."""
    N = g * g
    xy = np.array([((r + 0.5) * ps, (c + 0.5) * ps) for r in range(g) for c in range(g)])
    D = np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1))
    A = P[:, pre:pre + N, pre:pre + N].astype(np.float64)
    A = A / A.sum(-1, keepdims=True)
    return (A * D).sum(-1).mean(-1)


def np_baseline(g: int, ps: int, causal: bool) -> float:
    """Even spread over the patches a patch query may see (causal: patches up to itself)."""
    N = g * g
    xy = np.array([((r + 0.5) * ps, (c + 0.5) * ps) for r in range(g) for c in range(g)])
    D = np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1))
    vis = np.tril(np.ones((N, N))) if causal else np.ones((N, N))
    return float(((D * vis).sum(-1) / vis.sum(-1)).mean())


def np_entropy(P: np.ndarray) -> np.ndarray:
    P = P.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(P > 0, P * np.log(np.where(P > 0, P, 1)), 0.0)
    return -plogp.sum(-1).mean(-1)


@pytest.mark.parametrize("model_name,mask", [("shapes-classifier", None),
                                             ("shapes-classifier", "causal"), (DEIT, None),
                                             (NOCLS, "causal")], ids=lambda v: Path(str(v)).name)
def test_mean_distance_and_its_baseline_by_hand(model_name, mask):
    at = open_page("attention", model_name, mask=mask)
    model, tr = traced(at, model_name, mask=mask)
    c = model.config
    spec = chart(at, "Mean attention distance")
    heads = {d["name"]: arr(d["y"]) for d in spec["data"] if d["name"].startswith("head")}
    dashed = [d for d in spec["data"] if d["name"].startswith("spread evenly")][0]
    expected = np.stack([np_distance(tr[f"blocks.{i}.attn.pattern"].numpy(), c.grid,
                                     c.patch_size, c.num_prefix_tokens) for i in range(c.depth)])
    for h in range(c.num_heads):
        np.testing.assert_allclose(heads[f"head {h}"], expected[:, h], rtol=1e-4)
    base = np_baseline(c.grid, c.patch_size, causal=mask == "causal")
    assert dashed["y"][0] == pytest.approx(base, rel=1e-6)
    assert dashed["line"]["dash"] == "dash" and f"{base:.1f} px" in dashed["name"]
    said = note(at)
    assert f"would give {base:.1f} px" in said
    assert f"{expected.min():.0f}–{expected.max():.0f} px" in said
    if model_name == "shapes-classifier" and mask is None:
        assert "115.5 px" in said  # 7 × 7 patches of 32 px, the number


def test_the_even_spread_baseline_for_a_2x2_grid_by_hand():
    from vit_core.explain.attention import uniform_distance

    # corners of a 2 x 2 grid of 10 px patches: distances 0, 10, 10, 10√2 from each
    assert uniform_distance(2, 10) == pytest.approx((20 + 10 * math.sqrt(2)) / 4)
    # causal over patches 0..3: patch 0 sees itself (0), 1 sees {0, 1} (5), 2 sees {0,1,2}
    # ((10 + 10√2) / 3), 3 sees all (same as full)
    allowed = allowed_keys("causal", 5)  # CLS + 4 patches
    expected = (0 + 5 + (10 + 10 * math.sqrt(2)) / 3 + (20 + 10 * math.sqrt(2)) / 4) / 4
    assert uniform_distance(2, 10, allowed, prefix=1) == pytest.approx(expected)


@pytest.mark.parametrize("model_name,mask,kind", [
    ("shapes-classifier", None, "full"), ("shapes-classifier", "causal", "causal"),
    ("shapes-captioner-prefix", None, "prefix")])
def test_entropy_and_its_maximum_under_each_mask(model_name, mask, kind):
    at = open_page("attention", model_name, mask=mask)
    model, tr = traced(at, model_name, mask=mask)
    c = model.config
    S = c.num_image_tokens
    spec = chart(at, "Attention entropy")
    shown = arr(spec["data"][0]["z"]).astype(np.float64)
    expected = np.stack([np_entropy(tr[f"blocks.{i}.attn.pattern"].numpy())
                         for i in range(c.depth)])
    np.testing.assert_allclose(shown, expected, rtol=1e-4, atol=1e-5)
    # causal: query i sees i + 1 keys; full and prefix without text: all S keys
    top = (np.mean([math.log(i + 1) for i in range(S)]) if kind == "causal" else math.log(S))
    assert spec["layout"]["title"]["text"].endswith(f"max for the {kind} mask = {top:.2f})")
    assert f"({kind} mask) gives {top:.2f} nats" in note(at)


def test_max_entropy_of_the_prefix_mask_with_text_by_hand():
    from vit_core.explain.attention import max_entropy

    n_img, n_txt = 50, 7  # image rows see the 50 image tokens; text row t sees 50 + t + 1
    hand = (n_img * math.log(n_img) + sum(math.log(n_img + t + 1) for t in range(n_txt)))
    assert max_entropy(allowed_keys("prefix", n_img, n_txt)) == pytest.approx(
        hand / (n_img + n_txt))
    causal = sum(math.log(i + 1) for i in range(n_img + n_txt)) / (n_img + n_txt)
    assert max_entropy(allowed_keys("causal", n_img, n_txt)) == pytest.approx(causal)


def np_rollout(patterns: list[np.ndarray]) -> np.ndarray:
    S = patterns[0].shape[-1]
    joint = np.eye(S)
    for P in patterns:
        a = 0.5 * np.eye(S) + 0.5 * P.astype(np.float64).mean(0)
        a = a / a.sum(-1, keepdims=True)
        joint = a @ joint
    return joint


@pytest.mark.parametrize("model_name", ["shapes-classifier", DEIT, NOCLS],
                         ids=lambda v: Path(v).name)
def test_rollout_numbers_by_hand(model_name):
    at = open_page("attention", model_name)
    model, tr = traced(at, model_name)
    c = model.config
    pre, N = c.num_prefix_tokens, c.num_patches
    R = np_rollout([tr[f"blocks.{i}.attn.pattern"].numpy() for i in range(c.depth)])
    shown = text(at)
    if pre:
        row = R[0] / R[0].sum()
        for i, n in enumerate(c.prefix_names):
            assert f"{row[i]:.1%} on the {n} input" in shown
        assert f"{row[pre:].sum():.1%} on the {N} patches" in shown
        assert f"its 5 strongest patches give {np.sort(row[pre:])[::-1][:5].sum():.1%}" in shown
    else:
        row = R.mean(0) / R.mean(0).sum()
        assert f"5 strongest input patches give {np.sort(row)[::-1][:5].sum():.1%}" in shown


def test_attention_notes_differ_between_everywhere_and_local_heads(local_model):
    everywhere = note(open_page("attention", "vit-ti16"))
    local = note(open_page("attention", local_model))
    assert "look everywhere" in everywhere and "look locally" not in everywhere
    assert "look locally" in local and "look everywhere" not in local
    assert "spreads its attention almost evenly" in everywhere
    assert "most focused head" in local and "almost evenly" not in local
    assert "≈ 1 key." in local  # every patch attends to itself alone


def test_cls_and_dist_are_named_on_the_attention_matrix():
    deit = open_page("attention", DEIT)
    spec = chart(deit, "Layer 1, head 0")
    ticks = spec["layout"]["xaxis"]["ticktext"]
    assert ticks[:2] == ["CLS", "DIST"] and "p0" in ticks  # 18 tokens: every one named
    lines = sorted({s["x0"] for s in spec["layout"]["shapes"] if s.get("xref") == "x"})
    assert lines == [0.5, 1.5]  # DIST starts at token 1, the patches at token 2
    shown = text(deit)
    assert "CLS is token 0 and DIST is token 1" in shown
    assert "Bright = where the DIST token reads from" in shown
    big = open_page("attention", "vit-ti16")
    ticks = chart(big, "Layer 11, head 0")["layout"]["yaxis"]["ticktext"]
    assert ticks[0] == "CLS" and "p0" not in ticks and "p14" in ticks  # p0 would cover CLS
    nocls = open_page("attention", NOCLS)
    assert "CLS" not in chart(nocls, "Layer 0, head 0")["layout"]["xaxis"]["ticktext"]
    assert "CLS attention" not in text(nocls)  # no step of CLS maps: it has no CLS
    assert "Layer 0 (the only one: this model has 1 block)" in text(nocls)


@pytest.mark.parametrize("model_name", ["shapes-classifier", DEIT], ids=["cls", "cls+dist"])
def test_blocked_keys_are_described_as_each_view_draws_them(model_name):
    """Under the causal mask a blocked key has weight 0 in A but a score of -inf, which the
    score views leave blank; CLS (and DIST) come before every patch, so their maps are dark."""
    at = open_page("attention", model_name, mask="causal")
    model, tr = traced(at, model_name, mask="causal")
    c = model.config
    S, L, pre = tr["embed"].shape[0], c.depth - 1, c.num_prefix_tokens
    blocked = int((~allowed_keys("causal", S, 0)).sum())  # S (S - 1) / 2
    shown = text(at)
    assert "blocked keys get weight 0" in shown and "left blank" not in shown
    for i, tok in enumerate(c.prefix_names):
        seen = " and ".join(c.prefix_names[:i + 1])
        assert f"the {tok} token sees no patch, only {seen}, so no map colours the image" in shown
        share = float(tr[f"blocks.{L}.attn.pattern"][:, i, :pre].double().sum(-1).mean())
        assert f"{share:.0%} on {seen}." in shown
    assert "Bright = where the CLS token" not in shown and "of its 1 keys" not in shown
    at.radio(key=keys.ATTN_VIEW).set_value("raw scores q·k").run()
    z = arr(chart(at, f"Layer {L}, head 0: raw scores")["data"][0]["z"]).astype(float)
    assert int(np.isnan(z).sum()) == blocked  # -inf is drawn as a gap
    shown = text(at)
    assert "blocked keys score −∞ and are left blank" in shown and "get weight 0" not in shown


def test_a_one_head_model_gets_single_values_not_ranges_by_head():
    at = open_page("attention", ONE)
    model, tr = traced(at, ONE)
    c = model.config
    assert (c.depth, c.num_heads) == (1, 1)
    pattern = tr["blocks.0.attn.pattern"][0].double()
    pre, share = c.num_prefix_tokens, None
    share = float(pattern[pre:, :pre].sum(-1).mean())  # what patch queries put on CLS
    shown = text(at)
    assert f"Left out: the {share:.1%} of their attention" in shown
    assert "(by head)" not in shown and not re.search(r"layer 0: (\d+)–\1\b", shown)
    assert "this head look" in shown and "these heads" not in shown and "(layer 0, head 0)" not in (
        shown)


TEXT_FREE = "This page shows the pass over the image alone, with no text fed."


@pytest.mark.parametrize("page", ["qkv", "attention", "mlp", "segmentation"])
def test_a_captioner_under_the_full_mask_says_its_blocks_show_a_text_free_pass(page):
    """Under the full mask image tokens read the text, so the image-only pass these pages draw
    differs inside the blocks from the passes that write the caption; under the trained causal
    mask it does not, and the page says nothing."""
    name = "shapes-captioner-causal"
    at = open_page(page, name, mask="full")
    model, alone = traced(at, name, mask="full")
    _, fed = traced(at, name, mask="full", text_ids=[1, 4, 5])  # [SOS] and two words
    n_img, last = model.config.num_image_tokens, f"blocks.{model.config.depth - 1}.resid_post"
    assert not torch.allclose(alone[last], fed[last][:n_img])  # the words reach the image
    assert TEXT_FREE in text(at)
    quiet = open_page(page, name)  # trained: causal
    _, alone = traced(quiet, name)
    _, fed = traced(quiet, name, text_ids=[1, 4, 5])
    assert torch.equal(alone[last], fed[last][:n_img])  # image tokens never see the text
    assert TEXT_FREE not in text(quiet)


def test_a_long_deit_sequence_prints_one_tick_for_cls_and_dist():
    labels = figures.token_labels(ViTConfig(dist_token=True))  # 198 tokens
    ticks, tick_text = figures.prefix_ticks(labels, 14, ("CLS", "DIST"))
    assert ticks[0] == "CLS" and "DIST" not in ticks and tick_text == {"CLS": "CLS, DIST"}
    fig = figures.matrix_heatmap(np.zeros((198, 198)), "t", x_title="k", y_title="q",
                                 value_name="v", row_labels=labels, col_labels=labels,
                                 row_ticks=ticks, col_ticks=ticks, tick_text=tick_text)
    assert fig.layout.xaxis.ticktext[0] == "CLS, DIST"


# ---------------------------------------------------------------- logits page
def test_top_k_under_temperature_by_hand():
    at = open_page("logits")
    at.slider(key=keys.CLASS_TEMPERATURE).set_value(2.5).run()
    model, tr = traced(at, "shapes-classifier")
    names = list(model.config.class_names)
    p = softmax64(tr.logits.numpy() / 2.5)
    bars = chart(at, "top 5 of 10 classes at T = 2.5")["data"][0]
    order = np.argsort(-p)[:5][::-1]
    assert bars["y"] == [names[i] for i in order]
    np.testing.assert_allclose(arr(bars["x"]), p[order], rtol=1e-5)
    assert bars["text"] == [f"{p[i]:.1%}" for i in order]
    best = int(np.argmax(p))
    assert f"**{names[best]}** with {p[best]:.1%} at T = 2.5" in text(at)
    h = -(p * np.log(p)).sum()
    assert f"the entropy is {h:.2f} nats of a possible {math.log(10):.2f}" in text(at)


@pytest.mark.parametrize("model_name,k", [("shapes-classifier", 10), ("vit-ti16", 15)])
def test_raw_logits_are_named_by_class(model_name, k):
    at = open_page("logits", model_name)
    model, tr = traced(at, model_name)
    K = model.config.num_classes
    names = list(model.config.class_names) or [f"class {i}" for i in range(K)]
    z = tr.logits.double().numpy()
    bars = chart(at, "the raw logits")["data"][0]
    order = np.argsort(-z)[:k][::-1]
    assert bars["y"] == [names[i] for i in order]
    np.testing.assert_allclose(arr(bars["x"]), z[order], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model_name", ["shapes-classifier", AVG_FC, NOCLS, DEIT],
                         ids=lambda v: Path(v).name)
def test_logit_lens_last_row_equals_the_logits_on_the_page(model_name):
    at = open_page("logits", model_name)
    model, tr = traced(at, model_name)
    c = model.config
    names = list(c.class_names) or [f"class {i}" for i in range(c.num_classes)]
    p = softmax64(tr.logits.numpy())
    lens = chart(at, "P(class) if the network stopped")["data"]
    bars = chart(at, "top ")["data"][0]
    on_page = dict(zip(bars["y"], arr(bars["x"]), strict=True))
    top3 = {names[i] for i in np.argsort(-p)[:3]}
    assert top3 <= {line["name"] for line in lens}  # and any class that led on the way
    for line in lens:
        y = arr(line["y"])
        assert len(y) == c.depth + 1
        assert y[-1] == pytest.approx(p[names.index(line["name"])], abs=1e-5)
        if line["name"] in on_page:  # the top-5 bars
            assert y[-1] == pytest.approx(on_page[line["name"]], abs=1e-5)
    reads = {"shapes-classifier": "Only the final CLS token is used",
             AVG_FC: "(CLS is left out), the mean goes through one more LayerNorm (fc_norm)",
             NOCLS: "final patch tokens are averaged, the mean goes through",
             DEIT: "the final DIST token (after the final LayerNorm) each go through"}
    assert reads[model_name] in text(at)
    if model_name == NOCLS:
        assert "CLS is left out" not in text(at)


def test_the_lens_note_by_hand():
    """The lens of a CLS model worked out here: LayerNorm the CLS row of each block's output
    with the final norm's weights, apply the head, softmax; the note's numbers come from it."""
    at = open_page("logits")
    model, tr = traced(at, "shapes-classifier")
    names = list(model.config.class_names)
    rows = [tr["embed"][0]] + [tr[f"blocks.{i}.resid_post"][0] for i in range(6)]
    x = torch.stack(rows).double().numpy()
    ln, head = model.norm, model.head
    x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + ln.eps)
    x = x * ln.weight.detach().double().numpy() + ln.bias.detach().double().numpy()
    P = softmax64(x @ head.weight.detach().double().numpy().T
                  + head.bias.detach().double().numpy())
    said = text(at)
    first, final = int(P[0].argmax()), int(P[-1].argmax())
    assert f"the top guess is {names[first]} at {P[0, first]:.0%}" in said
    lead = max(i for i in range(7) if P[i].argmax() != final) + 1
    where = ["the embedding"] + [f"block {i}" for i in range(6)]
    assert f"{names[final]} leads from {where[lead]} on and ends at {P[-1, final]:.0%}" in said
    rivals = list(dict.fromkeys(int(P[i].argmax()) for i in range(lead) if P[i].argmax() != final))
    for k in rivals[:3]:  # every class on top on the way: where, and its highest share there
        rows = [i for i in range(lead) if P[i].argmax() == k]
        peak = max(P[i, k] for i in rows)
        if len(rows) == 1:
            assert f"{names[k]} is on top after {where[rows[0]]} ({peak:.0%})" in said, said
        else:
            assert f"{names[k]} is on top after " in said and f"(up to {peak:.0%})" in said, said
    assert said.count(" is on top after ") == min(len(rivals), 3), said
    lines = {d["name"]: arr(d["y"]) for d in chart(at, "P(class) if the network")["data"]}
    for name, y in lines.items():
        np.testing.assert_allclose(y, P[:, names.index(name)], atol=1e-5)


def test_logit_lens_by_hand_for_an_average_pool_model():
    """Row l of the lens: block l's output, LayerNorm'd and averaged as the model's head does."""
    model = load_model(AVG_FC)
    tr = run_trace(model, torch.randn(1, 3, 48, 48, generator=torch.Generator().manual_seed(1)))
    from vit_core.explain.lens import logit_lens

    lens = logit_lens(model, tr).double()
    x = tr["blocks.0.resid_post"].double()[1:].mean(0)  # patches only, CLS left out
    ln = model.fc_norm
    x = (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + ln.eps) * ln.weight.double() + \
        ln.bias.double()
    torch.testing.assert_close(lens[1], x @ model.head.weight.double().T + model.head.bias,
                               atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(lens[-1], tr.logits.double(), atol=1e-5, rtol=1e-5)


def test_logits_notes_differ_between_a_trained_and_a_random_model():
    trained, random = text(open_page("logits")), text(open_page("logits", "vit-ti16"))
    assert "the model is confident" in trained and "close to uniform (1/" not in trained
    assert "close to uniform (1/1000 = 0.1% each)" in random
    assert "Every read-out is close to uniform" in random
    assert "leads from" in trained or "stays on top at every depth" in trained


def test_a_headless_model_shows_its_final_cls_vector():
    at = open_page("logits", HEADLESS)
    model, tr = traced(at, HEADLESS)
    shown = text(at)
    assert "has no class head, so there are no class logits" in shown
    strip = chart(at, "the final CLS vector (36 dimensions)")["data"][0]
    v = tr["ln_final"][0].double().numpy()
    np.testing.assert_allclose(arr(strip["z"]).ravel(), v, rtol=1e-5, atol=1e-6)
    assert f"Its norm is {np.linalg.norm(v):.2f}" in shown
    patches = tr["ln_final"][1:].double().numpy()
    cos = patches @ v / (np.linalg.norm(patches, axis=1) * np.linalg.norm(v))
    assert f"patch {int(np.argmax(cos))} ({cos.max():.2f})" in shown


def test_captioner_temperature_and_top_k_by_hand():
    at = open_page("logits", "shapes-captioner-prefix")
    at.slider(key=keys.TEMPERATURE).set_value(0.7).run()
    at.number_input(key=keys.TOP_K).set_value(3).run()
    at.button(key=GEN_NEXT).click().run()
    first = [h.value for h in at.subheader if h.value.startswith("[SOS]")][0].split()[1]
    model = load_model("shapes-captioner-prefix")
    tok = Tokenizer(model.config.vocab)
    ids = [tok.sos_id, tok.index[first]]
    _, tr = traced(at, "shapes-captioner-prefix", text_ids=ids)
    z = tr.logits[-1].double().numpy()
    keep = np.argsort(-z)[:3]
    p = np.zeros_like(z)
    p[keep] = softmax64(z[keep] / 0.7)
    bars = chart(at, "P(word 2 | image, words before) at T = 0.7")["data"][0]
    shown = dict(zip(bars["y"], arr(bars["x"]), strict=True))
    for i in np.argsort(-p)[:8]:
        assert shown[tok.vocab[i]] == pytest.approx(p[i], abs=1e-6)
    assert "Top-k = 3: only the 3 most likely words keep any probability" in text(at)


def test_a_cut_caption_does_not_score_eos():
    at = open_page("logits", "shapes-captioner-prefix")
    long = "a red ball on the grass at the top on the left and more"
    at.text_input(key=keys.CAPTION).set_value(long).run()
    df = at.dataframe[0].value
    model = load_model("shapes-captioner-prefix")
    T = model.config.max_text_len
    words = long.split()[:T - 1]
    assert list(df.iloc[:, 0]) == words  # no [EOS]: the caption goes on after the cut
    tok = Tokenizer(model.config.vocab)
    ids = [tok.sos_id] + [tok.index[w] for w in words]
    _, tr = traced(at, "shapes-captioner-prefix", text_ids=ids)
    p = softmax64(tr.logits.numpy())
    expected = [f"{p[t, ids[t + 1]]:.2%}" for t in range(len(words))]
    assert list(df.iloc[:, 1]) == expected
    assert any("[EOS] is not scored" in w.value for w in at.warning)
    at.text_input(key=keys.CAPTION).set_value("a red ball").run()  # fits: [EOS] is scored
    assert list(at.dataframe[0].value.iloc[:, 0]) == ["a", "red", "ball", "[EOS]"]


def test_caption_notes_differ_between_a_fitting_and_a_wrong_caption():
    at = open_page("logits", "shapes-captioner-prefix")
    assert "the model agrees with this caption" in text(at)  # the sample is a red ball
    at.text_input(key=keys.CAPTION).set_value("a blue star on the snow").run()
    said = text(at)
    assert "the model doubts" in said and "“blue”" in said and "agrees" not in said


def test_greedy_ids_use_the_tokenizers_ids(monkeypatch):
    from vit_core.explain import generation

    class Tok:
        sos_id, eos_id, pad_id = 5, 7, 9

    seen = []

    def fake_logits(model, pixels, ids, mask=None):
        seen.append(ids.clone())
        out = torch.zeros(ids.shape[0], 10)
        out[0, 7] = 1  # image 0 ends at once; image 1 writes word 3 and then ends
        out[1, 3 if ids.shape[1] == 1 else 7] = 1
        return out

    monkeypatch.setattr(generation, "tokenizer_for", lambda model: Tok())
    monkeypatch.setattr(generation, "next_token_logits", fake_logits)
    model = type("M", (), {"config": ViTConfig(num_classes=0, vocab_size=10, max_text_len=5)})()
    out = generation.greedy_ids(model, torch.zeros(2, 3, 4, 4))
    assert (seen[0][:, 0] == 5).all()  # [SOS] from the tokenizer
    assert out.tolist() == [[7, 9], [3, 7]]  # stops at its [EOS]; [PAD] after it


# ---------------------------------------------------------------- masks page
def subplot_titles(spec: dict) -> list[str]:
    """A figure's subplot titles (its annotations placed on the paper), in order."""
    return [a["text"] for a in spec["layout"].get("annotations", [])
            if a.get("xref") == "paper" and a.get("yref") == "paper"]


def test_mask_figures_name_their_tokens_and_count_visible_keys_by_hand():
    at = open_page("masks")
    spec = chart(at, "Three masks")  # full, causal, prefix: one figure, three subplots
    assert subplot_titles(spec) == ["full: 57×57", "causal: 57×57", "prefix: 57×57"]
    S = 57
    for n, kind in enumerate(("full", "causal", "prefix"), start=1):
        z = arr(spec["data"][n - 1]["z"]).reshape(S, S)
        np.testing.assert_array_equal(z, allowed_keys(kind, 50, 7).numpy())
        assert spec["data"][n - 1].get("xaxis", "x") == ("x" if n == 1 else f"x{n}")
    ticks = spec["layout"]["xaxis2"]["ticktext"]
    where = spec["layout"]["xaxis2"]["tickvals"]
    assert ticks[0] == "CLS" and "[SOS]" in ticks and "p0" not in ticks
    assert where[ticks.index("[SOS]")] == 50  # token 50: the first text token
    assert min(np.diff(where)) >= 4  # 57 tokens in ~190 px: no two ticks print over each other
    assert spec["layout"]["xaxis2"]["title"]["text"].startswith("key token")
    assert spec["layout"]["yaxis2"]["title"]["text"].startswith("query token")
    visible = chart(at, "How many keys")
    words = visible["layout"]["xaxis"]["ticktext"]
    assert words[-7:] == ["[SOS]", "a", "red", "ball", "on", "the", "grass"]  # the wide chart
    lines = {d["name"]: arr(d["y"]).tolist() for d in visible["data"]}
    n_img, S = 50, 57
    assert lines["causal mask"] == [i + 1 for i in range(S)]
    assert lines["prefix mask"] == [n_img] * n_img + [n_img + t + 1 for t in range(S - n_img)]


@pytest.mark.parametrize("model_name", ["shapes-classifier", DEIT, NOCLS, AVG_FC],
                         ids=lambda v: Path(v).name)
def test_the_classifier_under_a_causal_mask_is_described_truly(model_name):
    at = open_page("masks", model_name)
    model, tr = traced(at, model_name, mask="causal")
    c = model.config
    names = list(c.class_names) or [f"class {i}" for i in range(c.num_classes)]
    p = softmax64(tr.logits.numpy())
    label = f"file: {Path(model_name).name}" if "/" in model_name else model_name
    bars = chart(at, f"{label}: the same weights")  # full attention, then the causal mask
    assert subplot_titles(bars)[1] == f"{label}, causal mask"
    np.testing.assert_allclose(sorted(arr(bars["data"][1]["x"])), sorted(np.sort(p)[::-1][:5]),
                               rtol=1e-5)
    # the same model on another picture: the page says whether the image still matters
    from ui.selection.inputs import sample_bytes, sample_seeds

    other = next(sample_bytes(s) for s in sample_seeds()
                 if sample_bytes(s) != at.session_state[keys.INPUT].data)
    tr2 = run_trace(model, preprocess(load_image(other), c), mask="causal")
    gap = float((tr2.logits - tr.logits).abs().max())
    shown = text(at)
    if c.global_pool == "avg":  # the head reads the patches: the last one sees everything
        assert gap > 1e-3
        assert "still depends on the image" in shown and "for any picture" not in shown
        assert f"different (by up to {gap:.2f})" in shown
        assert ("This model has no CLS token" in shown) == (not c.class_token)
    else:  # the head reads CLS (and DIST), which see only the prefix tokens
        assert gap < 1e-5
        assert f"**{names[int(np.argmax(p))]}** ({p.max():.1%}) for any picture" in shown
        assert "the same (largest difference" in shown
        assert ("DIST only CLS and itself" in shown) == c.dist_token


def test_masks_page_counts_words_names_unknown_ones_and_says_as_trained_only_if_trained():
    at = open_page("masks")
    at.text_input(key=keys.MASK_CAPTION).set_value("zebra").run()
    shown = text(at)
    assert "[SOS] + 1 word) = S = **52**" in shown and "1 words" not in shown
    assert "in order, [UNK] (where" in shown  # what the model read, as on the axes
    assert chart(at, "How many keys")["layout"]["xaxis"]["ticktext"][-2:] == ["[SOS]", "[UNK]"]
    words = [df.value["word"].tolist() for df in at.dataframe]
    assert words and all(w[0] == "zebra (unknown → [UNK])" for w in words)
    assert subplot_titles(chart(at, "shapes-classifier: the same weights"))[0].endswith(
        "full attention (as trained)")
    untrained = open_page("masks", "vit-ti16")
    titles = subplot_titles(chart(untrained, "vit-ti16"))
    assert titles[0].endswith("full attention") and not any("as trained" in t for t in titles)


def test_masks_page_uses_the_bundled_classifier_for_a_headless_model():
    at = open_page("masks", HEADLESS)
    assert "has no class head, so this part uses shapes-classifier" in text(at)


# ---------------------------------------------------------------- shape trace page
def torch_flops(config: ViTConfig) -> int:
    with torch.device("meta"):
        model = ViT(config)
        x = torch.empty(1, config.in_chans, config.img_size, config.img_size)
    with FlopCounterMode(display=False) as counter:
        model(x)
    return counter.get_total_flops()


def parse_si(s: str) -> float:
    m = re.fullmatch(r"([0-9.]+)(?: ([kMGT]))?", s)
    return float(m.group(1)) * {None: 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m.group(2)]


@pytest.mark.parametrize("model_name", ["vit-ti16", "shapes-classifier", DEIT, AVG_FC, NOCLS],
                         ids=lambda v: Path(v).name)
def test_macs_and_flops_against_torchs_counter_and_hand_formulas(model_name):
    at = open_page("shapes", model_name)
    c = load_model(model_name).config
    flops = torch_flops(c)
    metrics = {m.label: m.value for m in at.metric}
    label = next(k for k in metrics if k.endswith("FLOPs (2 × MACs)") and "ViT-B" not in k)
    assert parse_si(metrics[label]) == pytest.approx(flops, rel=5e-3)
    macs = next(v for k, v in metrics.items() if k.endswith("(MACs)") and "ViT-B" not in k)
    assert parse_si(macs) == pytest.approx(flops / 2, rel=5e-3)
    assert metrics["ViT-B/16 multiply-adds (MACs)"] == "17.6 G"  # the literature's number
    assert metrics["ViT-B/16 FLOPs (2 × MACs)"] == "35.1 G"
    cost = next(d.value for d in at.dataframe
                if "MACs (all layers)" in d.value.columns).set_index("step")
    L, S, D, H, dk = c.depth, c.num_image_tokens, c.embed_dim, c.num_heads, c.head_dim
    hand = {"Q, K, V": L * S * D * 3 * D, "scores": L * H * S * S * dk,
            "A V": L * H * S * S * dk, "W_O": L * S * D * D,
            "MLP up": L * S * D * c.mlp_hidden, "MLP down": L * S * c.mlp_hidden * D,
            "patch embedding": c.num_patches * c.in_chans * c.patch_size**2 * D,
            "class head": (2 if c.dist_token else 1) * D * c.num_classes}
    for step, n in hand.items():
        assert parse_si(cost.loc[step, "MACs (all layers)"]) == pytest.approx(n, rel=5e-3), step
        assert parse_si(cost.loc[step, "FLOPs = 2 × MACs"]) == pytest.approx(2 * n, rel=5e-3)
    assert parse_si(cost.loc["MLP up", "ViT-B/16 MACs"]) == pytest.approx(
        12 * 197 * 768 * 3072, rel=5e-3)


def test_flop_totals_equal_torchs_counter_for_every_family():
    from vit_core.explain.flops import total_flops, total_macs, total_params

    for name in (DEIT, AVG_FC, NOCLS, ONE, HEADLESS):
        c = load_model(name).config
        assert total_flops(c) == torch_flops(c) == 2 * total_macs(c), name
        assert total_params(c) == sum(p.numel() for p in ViT(c).parameters()), name


def test_shape_notes_differ_with_the_patch_sizes_a_model_allows():
    ti = text(open_page("shapes", "vit-ti16"))
    deit = text(open_page("shapes", DEIT))
    c = load_model("vit-ti16").config

    def share(c):  # Q Kᵀ and A V multiply-adds over all of them, torch's count halved
        return 2 * c.depth * c.num_heads * c.num_image_tokens**2 * c.head_dim / (
            torch_flops(c) / 2)

    assert f"at P = 16 the quadratic part (QKᵀ and AV) is {share(c):.1%}" in ti
    assert f"at P = 8 it is {share(c.replace(patch_size=8)):.1%}" in ti
    assert "at P = 8 the quadratic part" in deit and "; at P =" not in deit  # 8 is its smallest
    # a model with a segmentation head: the sentence gives the chart's share, which leaves the
    # head out (the chart's title says so), as the chart draws it
    seg = load_model("shapes-classifier").config
    assert seg.seg_classes
    drawn = seg.replace(seg_classes=0)
    assert f"at P = {seg.patch_size} the quadratic part (QKᵀ and AV) is {share(drawn):.1%}" in \
        text(open_page("shapes", "shapes-classifier"))


# ---------------------------------------------------------------- segmentation page
def np_boundary_counts(labels: np.ndarray, P: int) -> tuple[int, int]:
    """(class changes between neighbouring pixels, of which across a patch boundary), by loops
    over the columns and rows."""
    H, W = labels.shape
    changes = on = 0
    for x in range(W - 1):
        d = int((labels[:, x] != labels[:, x + 1]).sum())
        changes += d
        on += d if (x + 1) % P == 0 else 0
    for y in range(H - 1):
        d = int((labels[y] != labels[y + 1]).sum())
        changes += d
        on += d if (y + 1) % P == 0 else 0
    return changes, on


def share_text(x: float) -> str:
    """A share as the app prints one: one decimal under 10 % and from 99.5 % (below 100 %),
    none between."""
    return f"{x:.1%}" if x < 0.1 or 0.995 <= x < 1 else f"{x:.0%}"


def test_segmentation_boundary_statistic_and_pca_by_hand():
    at = open_page("segmentation")
    model, tr = traced(at, "shapes-classifier")
    c = model.config
    g, r, K = c.grid, c.seg_upsample, c.seg_classes
    s = tr["seg_logits"].double()  # [N, K, r, r] -> [K, g r, g r], cell (i, j) of patch (pr, pc)
    grid = torch.zeros(K, g * r, g * r, dtype=torch.float64)
    for n in range(g * g):
        pr, pc = divmod(n, g)
        grid[:, pr * r:(pr + 1) * r, pc * r:(pc + 1) * r] = s[n]
    up = F.interpolate(grid[None], size=(c.img_size,) * 2, mode="bilinear", align_corners=False)
    labels = up[0].argmax(0).numpy()
    changes, on = np_boundary_counts(labels, c.patch_size)
    said = text(at)
    assert f"Of the {changes:,} neighbouring-pixel pairs where the class changes, {on:,} " \
           f"({share_text(on / changes)}) straddle a patch boundary and {changes - on:,} lie " \
           f"inside" in said
    chance = (2 * c.img_size * (g - 1)) / (2 * c.img_size * (c.img_size - 1))
    assert f"only {share_text(chance)} of all pixel pairs straddle one" in said
    df = at.dataframe[0].value
    names = ["background"] + list(c.class_names)
    shares = {names[k]: f"{(labels == k).mean():.1%}" for k in np.unique(labels)}
    assert dict(zip(df["class"], df["share of the image"], strict=True)) == shares
    x = tr["ln_final"][1:].double().numpy()
    sv = np.linalg.svd(x - x.mean(0), compute_uv=False) ** 2
    v = sv[:3] / sv.sum()
    assert (f"explain {share_text(v[0])}, {share_text(v[1])} and {share_text(v[2])} of the "
            f"variance") in text(at)


def test_segmentation_notes_differ_between_a_scene_and_a_plain_image():
    scene = text(open_page("segmentation"))
    plain = text(open_page("segmentation", upload=png((255, 255, 255))))
    assert "most edges cut through patches" in scene and "single class" not in scene
    assert "single class here" in plain


def test_the_boundary_note_says_when_edges_follow_the_grid():
    from ui.stages.segmentation import boundary_words
    from vit_core.explain.segmentation import boundary_stats

    blocky = torch.zeros(32, 32, dtype=torch.long)
    blocky[8:24, 8:16] = 1  # whole 8 px patches
    stats = boundary_stats(blocky, 8)
    assert (stats["changes"], stats["on_boundary"]) == np_boundary_counts(blocky.numpy(), 8)
    assert stats["changes"] == stats["on_boundary"] == 2 * 16 + 2 * 8
    assert "the edges do follow the patch grid" in boundary_words(stats)
    disc = torch.zeros(32, 32, dtype=torch.long)
    yy, xx = torch.meshgrid(torch.arange(32), torch.arange(32), indexing="ij")
    disc[(yy - 13.3) ** 2 + (xx - 13.3) ** 2 < 30] = 1
    assert "most edges cut through patches" in boundary_words(boundary_stats(disc, 8))


def test_the_class_map_legend_shows_each_class_colour():
    img = Image.new("RGB", (240, 240), "white")
    palette = figures.class_palette(10)
    out = np.asarray(figures.with_legend(img, [("background 70%", tuple(palette[0])),
                                               ("ball 30%", tuple(palette[1]))]))
    assert out.shape[0] > 240  # the legend sits under the map
    legend = out[240:].reshape(-1, 3)
    for colour in palette[:2]:
        assert (legend == colour).all(1).sum() >= 64  # a swatch (at least 8 x 8) of that colour


def test_close_to_uniform_is_said_only_where_little_probability_is_off_uniform():
    """40.6 % on one of five classes has 93 % of the maximum entropy, but is twice the uniform
    share: not close to uniform. A thousand classes within a few hundredths of a percent of
    0.1 % are. The expectation is computed here: entropy and total variation in numpy."""
    from ui.stages.logits import distribution_words as distribution_note

    def close(p):
        p = np.asarray(p, dtype=np.float64)
        h = -(p * np.log(p)).sum()
        return h >= 0.9 * np.log(p.size) and 0.5 * np.abs(p - 1 / p.size).sum() <= 0.15

    skewed = np.array([0.406] + [0.1485] * 4)
    rng = np.random.default_rng(0)
    flat = np.exp(rng.normal(0, 0.15, 1000))
    flat /= flat.sum()
    for p in (skewed, flat):
        names = [f"class {i}" for i in range(p.size)]
        said = distribution_note(torch.tensor(p), names, 1.0)
        assert ("close to uniform" in said) == close(p), said
    assert "close to uniform" not in distribution_note(torch.tensor(skewed), list("abcde"), 1.0)
    assert "no class gets half the probability" in distribution_note(
        torch.tensor(skewed), list("abcde"), 1.0)


def test_the_residual_chart_does_not_stack_norms_that_need_not_add_up():
    """The MLP page's caption says what each sublayer adds need not add up (vectors in different
    directions); stacked bars would draw them adding up. The bars must stand side by side, and
    their heights are the norms of attn_out and mlp_out computed here from the trace."""
    from vit_core import load_image, preprocess, run_trace

    at = open_page("mlp")
    fig = next(f for title, f in charts(at).items() if "the norm of what each sublayer" in title)
    patch = int(re.match(r"patch (\d+) ", fig["layout"]["title"]["text"]).group(1))
    assert fig["layout"].get("barmode") != "stack"
    assert "need not add up" in text(at)
    model = load_model("shapes-classifier")
    tr = run_trace(model, preprocess(load_image(at.session_state[keys.INPUT].data), model.config))
    bars = [t for t in fig["data"] if t["type"] == "bar"]
    for bar, name in zip(bars, ("attn_out", "mlp_out"), strict=True):
        want = [float(tr[f"blocks.{b}.{name}"][1 + patch].norm())  # after CLS
                for b in range(model.config.depth)]
        np.testing.assert_allclose(arr(bar["y"]), want, rtol=1e-4)


def test_the_lens_note_names_every_class_that_led_on_the_way():
    """A lens where two classes lead before the final one: both are named, each where it was on
    top (a note that named only the highest said 'cross leads on the way' while heart had led
    after block 0)."""
    from ui.stages.logits import lens_words as lens_note

    P = torch.tensor([[0.3, 0.2, 0.5], [0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.7, 0.1],
                      [0.1, 0.1, 0.8], [0.1, 0.1, 0.8]])
    said = lens_note(P, ["cross", "heart", "ball"])
    assert "cross is on top after block 0 (60%)" in said, said
    assert "heart is on top after blocks 1–2 (up to 70%)" in said, said
    assert "ball leads from block 3 on and ends at 80%" in said, said


@pytest.mark.parametrize("model_name", ["shapes-classifier", "vit-ti16"])
def test_every_heads_cls_map_shares_one_scale(model_name):
    """The per-head CLS maps are compared, so they share one scale, from 0 to the largest weight
    any head gives a patch (computed here from the page's image): a random head whose weights
    all sit near 1/N is drawn dark, not stretched to full contrast."""
    at = open_page("attention", model_name)
    model, tr = traced(at, model_name)
    layer, N = at.session_state[keys.LAYER], model.config.num_patches
    top = float(tr[f"blocks.{layer}.attn.pattern"][:, 0, 1:1 + N].max())
    said = text(at)
    assert f"every map has the same scale, from 0 to {top:.1%}" in said, said
    assert "scaled on its own" not in said


@pytest.mark.parametrize("model_name", ["shapes-classifier", "shapes-captioner-prefix"])
def test_the_position_note_names_the_most_alike_pairs_when_they_are_not_neighbours(model_name):
    """The map's brightest pairs, found here in numpy from the model's position embeddings: the
    classifier's three most alike pairs are 4-6 steps apart at cosine ~0.96 while neighbours
    average 0.26, and the note must say so; a captioner's most alike pairs are neighbours."""
    at = open_page("embeddings", model_name)
    model = load_model(model_name)
    c, said = model.config, text(at)
    e = model.pos_embed.detach().double().numpy().reshape(-1, c.embed_dim)[
        c.num_prefix_tokens:c.num_prefix_tokens + c.num_patches]
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    sim, g = e @ e.T, c.grid
    i, j = np.triu_indices(len(e), 1)
    best = np.argsort(-sim[i, j], kind="stable")[:3]
    steps = [abs(i[k] // g - j[k] // g) + abs(i[k] % g - j[k] % g) for k in best]
    if min(steps) >= 3:
        for k, d in zip(best, steps, strict=True):
            a, b = int(i[k]), int(j[k])
            assert (f"{a} ({a // g},{a % g}) and {b} ({b // g},{b % g}): {d} steps, "
                    f"{sim[a, b]:.2f}") in said, said
    else:
        assert "most alike pairs" not in said, said
    assert (min(steps) >= 3) == (model_name == "shapes-classifier")


@pytest.mark.parametrize("model_name,upload,said", [
    ("vit-ti16", True, True), ("shapes-classifier", False, True),
    ("shapes-captioner-prefix", True, False)])
def test_the_masks_page_says_when_its_captioners_are_other_models(model_name, upload, said):
    """The Masks page always shows the bundled captioners; when the chosen model is not one of
    them, it says so, and on a photo it says those captioners know only the generated scenes."""
    from tests.support import photo_bytes

    at = open_page("masks", model_name, upload=photo_bytes() if upload else None)
    words = text(at)
    others = "shapes-captioner-prefix and shapes-captioner-causal are not "
    assert (others in words) == said, words
    assert ("know only" in words or "trained only on this repository's generated scenes" in words
            ) == (said and upload)
