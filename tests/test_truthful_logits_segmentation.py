"""The logits and segmentation pages say only what is true for the model, mask and image shown.

Each test drives a page in AppTest and checks its words against numbers worked out here, from
the model itself (float64 formulas, a second picture, a perturbed patch, a changed word), not
from the helpers the page calls.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from streamlit.testing.v1 import AppTest

from tests.support import HUB, arr, charts, open_app, softmax64
from tests.support import chart_titled as chart
from tests.support import page_text as text
from ui import keys
from ui.drawing import figures
from vit_core import load_image, load_model, preprocess, run_trace
from vit_core.io.text import Tokenizer

PHOTO = (Path(__file__).parent / "fixtures" / "photo.jpg").read_bytes()

DEIT, NOCLS = str(HUB / "tiny-org/deit-distilled"), str(HUB / "timm/vit_tiny_avg_nocls.test")


def open_page(page: str, model: str = "shapes-classifier", mask: str | None = None):
    return open_app(page, model, mask, no_error=True)  # fails if it ran another model


def open_photo(page: str, model: str = "shapes-classifier") -> AppTest:
    """`page` on the real photo (tests/fixtures/photo.jpg), uploaded through the sidebar state."""
    at = open_app(page, model, state={keys.UPLOAD: ("photo.jpg", PHOTO)})
    assert at.session_state[keys.INPUT].label == "upload: photo.jpg"
    return at


def pixels_of(at, model) -> torch.Tensor:
    return preprocess(load_image(at.session_state[keys.INPUT].data), model.config)


def another_picture(at) -> bytes:
    from ui.selection.inputs import sample_bytes, sample_seeds

    return next(sample_bytes(s) for s in sample_seeds()
                if sample_bytes(s) != at.session_state[keys.INPUT].data)


def lens_by_hand(model, tr) -> np.ndarray:
    """[L + 1, K] logit-lens probabilities of a CLS-token model, float64: LayerNorm the CLS row
    after the embedding and after each block with the final norm, apply the head, softmax."""
    rows = [tr["embed"][0]] + [tr[f"blocks.{i}.resid_post"][0] for i in range(model.config.depth)]
    x = torch.stack(rows).double().numpy()
    ln, head = model.norm, model.head
    x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + ln.eps)
    x = x * ln.weight.detach().double().numpy() + ln.bias.detach().double().numpy()
    return softmax64(x @ head.weight.detach().double().numpy().T
                     + head.bias.detach().double().numpy())


def lens_caption(at) -> str:
    return next(c.value for c in at.caption if "Lines: the" in c.value)


# ---------------------------------------------------------------- 1. the logit lens's lines
@pytest.mark.parametrize("model_name", ["vit-ti16", "shapes-classifier"])
def test_the_lens_caption_names_every_leader_it_does_not_draw(model_name):
    at = open_page("logits", model_name)
    model = load_model(model_name)
    tr = run_trace(model, pixels_of(at, model))
    c = model.config
    names = list(c.class_names) or [f"class {k}" for k in range(c.num_classes)]
    P = lens_by_hand(model, tr)
    top2 = np.sort(P, axis=1)[:, -2:]
    assert (top2[:, 1] - top2[:, 0] > 1e-6).all()  # no near-tie: the leaders are well defined
    leaders = list(dict.fromkeys(int(k) for k in P.argmax(1)))
    drawn = {d["name"] for d in chart(at, "P(class) if the network stopped")["data"]}
    missing = [k for k in leaders if names[k] not in drawn]
    caption = lens_caption(at)
    where = ["the embedding"] + [f"block {i}" for i in range(c.depth)]
    if missing:
        assert "every class that is on top" not in caption
        assert "any class that is on top" not in caption
        assert (f"{len(leaders) - len(missing)} of the {len(leaders)} classes that are on top "
                f"at some depth") in caption
        for k in missing:  # each left-out leader is named, with a depth where it leads
            first = int(np.argmax(P.argmax(1) == k))
            assert f"{names[k]} (on top after {where[first]})" in caption
    else:
        assert "every class that is on top at some depth" in caption
    if model_name == "vit-ti16":
        assert len(leaders) > 6  # the case the audit found: more leaders than the old 6 lines
    top3 = {names[k] for k in np.argsort(-P[-1])[:3]}
    assert top3 <= drawn


# ---------------------------------------------------------------- 2. scored caption, full mask
def test_a_scored_caption_under_the_full_mask_is_not_called_a_next_word_score():
    model_name = "shapes-captioner-causal"
    model = load_model(model_name)
    tok = Tokenizer(model.config.vocab)
    caption = "a red ball on the grass"
    ids = [tok.sos_id] + [tok.index[w] for w in caption.split()]
    other = ids[:-1] + [tok.index["snow"]]  # the last word changed
    for mask, sees_ahead in (("full", True), (None, False)):
        at = open_page("logits", model_name, mask=mask)
        x = pixels_of(at, model)
        a = run_trace(model, x, text_ids=ids, mask=mask).logits.double()
        b = run_trace(model, x, text_ids=other, mask=mask).logits.double()
        # does position 0 ([SOS], predicting "a") read the words after it? Measured, not assumed
        assert (float((a[0] - b[0]).abs().max()) > 1e-4) == sees_ahead
        df = at.dataframe[0].value
        column = df.columns[1]
        p = softmax64(a.numpy())
        targets = ids[1:] + [tok.eos_id]
        assert list(df.iloc[:, 1]) == [f"{p[t, targets[t]]:.2%}" for t in range(len(targets))]
        said = text(at)
        if sees_ahead:
            assert column != "P(word | image, words before)" and "whole caption" in column
            assert "after the words before them" not in said
            assert "agrees with this caption" not in said
            assert "every word but [EOS] is scored by a position that can read that very word" \
                in said
            assert "Under the full mask every text position also sees the words after it" \
                in text(at)
        else:
            assert column == "P(word | image, words before)"
            assert "whole caption" not in text(at)


# ---------------------------------------------------------------- 3. CLS head under causal
@pytest.mark.parametrize("model_name", ["shapes-classifier", DEIT, NOCLS],
                         ids=lambda v: Path(v).name)
def test_a_prediction_that_ignores_the_image_says_so(model_name):
    at = open_page("logits", model_name, mask="causal")
    model = load_model(model_name)
    c = model.config
    names = list(c.class_names) or [f"class {k}" for k in range(c.num_classes)]
    here = run_trace(model, pixels_of(at, model), mask="causal").logits.double()
    there = run_trace(model, preprocess(load_image(another_picture(at)), c),
                      mask="causal").logits.double()
    gap = float((here - there).abs().max())
    p = softmax64(here.numpy())
    shown = said = text(at)
    assert f"**{names[int(p.argmax())]}** with {p.max():.1%}" in shown
    if c.global_pool == "avg":  # reads the patches: the last one sees all of them
        assert gap > 1e-3
        assert "same for every picture" not in shown
    else:  # reads CLS (and DIST), which see only the prefix tokens
        assert gap < 1e-5
        assert "so this prediction is the same for every picture" in shown
        assert "the same for every picture, so it says nothing about this one" in said
        assert "confident" not in said and "leans to" not in said
        assert ("DIST only to CLS and itself" in shown) == c.dist_token
    # without the causal mask the same model is told as usual (the image matters there)
    plain = open_page("logits", model_name)
    assert "same for every picture" not in text(plain)


# ---------------------------------------------------------------- 4. "confident"
EVEN_SPLIT = "arrow_black_sand_left_106_71_3_1"  # a composed scene the classifier is torn on


def test_an_even_split_is_not_called_confident():
    from ui.selection.inputs import composed_bytes

    at = open_app("logits", "shapes-classifier", params={"scene": EVEN_SPLIT}, no_error=True)
    assert at.session_state[keys.INPUT].data == composed_bytes(EVEN_SPLIT)
    model = load_model("shapes-classifier")
    names = list(model.config.class_names)
    p = softmax64(run_trace(model, pixels_of(at, model)).logits.numpy())
    first, second = np.argsort(-p)[:2]
    assert 0.5 <= p[first] < 0.6 and p[second] > 0.3  # the scene: arrow 55 % against moon 32 %
    said = text(at)
    assert "confident" not in said
    assert f"the runner-up, {names[second]}, has {p[second]:.1%}" in said
    assert f"the top class, {names[first]}, has {p[first]:.1%}" in said


# ---------------------------------------------------------------- 5. top-k caption
def test_the_top_k_caption_counts_the_words_at_zero():
    model_name = "shapes-captioner-causal"
    at = open_page("logits", model_name)
    at.number_input(key=keys.TOP_K).set_value(3).run()
    model = load_model(model_name)
    tok = Tokenizer(model.config.vocab)
    z = run_trace(model, pixels_of(at, model), text_ids=[tok.sos_id]).logits[-1].double().numpy()
    keep = np.argsort(-z)[:3]
    p = np.zeros_like(z)
    p[keep] = softmax64(z[keep])
    bars = chart(at, "P(word 1 | image, words before)")["data"][0]
    x = arr(bars["x"])
    assert len(x) == 8
    live = int((x > 0).sum())
    assert live == 3 and sorted(x[x > 0]) == pytest.approx(sorted(p[keep]), abs=1e-6)
    caption = next(c.value for c in at.caption if "next words" in c.value)
    assert "The 8 most likely next words" not in caption
    assert f"The {live} most likely next words (and {8 - live} words at 0 %)" in caption
    assert "only the 3 most likely words keep any probability" in caption


# ---------------------------------------------------------------- 6. segmentation's reach
@pytest.mark.parametrize("model_name,mask,sees_all", [
    ("shapes-captioner-causal", None, False), ("shapes-classifier", "causal", False),
    ("shapes-classifier", None, True)])
def test_the_segmentation_page_says_what_each_cell_has_seen(model_name, mask, sees_all):
    at = open_page("segmentation", model_name, mask=mask)
    model = load_model(model_name)
    c = model.config
    x = pixels_of(at, model)
    y = x.clone()
    P, N = c.patch_size, c.num_patches
    y[..., -P:, -P:] += torch.randn(y[..., -P:, -P:].shape, generator=torch.Generator()
                                    .manual_seed(0))  # the last patch only
    a = run_trace(model, x, mask=mask)["ln_final"].double()
    b = run_trace(model, y, mask=mask)["ln_final"].double()
    pre = c.num_prefix_tokens
    # does patch 0's final token depend on the last patch? Measured on the model
    assert (float((a[pre] - b[pre]).abs().max()) > 1e-4) == sees_all
    assert float((a[pre + N - 1] - b[pre + N - 1]).abs().max()) > 1e-4  # the last sees itself
    shown = text(at)
    if sees_all:
        assert "every cell has already seen the whole image through attention" in shown
    else:
        assert "seen the whole image through attention" not in shown
        assert ("under the causal mask patch i has seen only CLS and patches 0 to i (in reading "
                f"order), so patch 0 has seen no other patch and only the last, patch {N - 1}, "
                "has seen the whole image") in shown


# ---------------------------------------------------------------- 7. small shares
def pct(s: float, digits: int) -> str:
    """A share as the page should print it: below the last digit shown, "<" that digit."""
    if 0 < s < 0.5 * 10.0 ** -(digits + 2):
        return f"<{10.0 ** -digits:g}%"
    return f"{s:.{digits}%}"


def test_a_small_class_share_is_not_printed_as_zero(monkeypatch):
    legends = []
    real = figures.with_legend

    def spy(img, entries, *a, **k):
        legends.append([label for label, _ in entries])
        return real(img, entries, *a, **k)

    monkeypatch.setattr(figures, "with_legend", spy)
    at = open_photo("segmentation")
    model = load_model("shapes-classifier")
    c = model.config
    s = run_trace(model, pixels_of(at, model))["seg_logits"].double()
    g, r = c.grid, c.seg_upsample
    grid = torch.zeros(c.seg_classes, g * r, g * r, dtype=torch.float64)
    for n in range(g * g):
        pr, pc = divmod(n, g)
        grid[:, pr * r:(pr + 1) * r, pc * r:(pc + 1) * r] = s[n]
    labels = F.interpolate(grid[None], size=(c.img_size,) * 2, mode="bilinear",
                           align_corners=False)[0].argmax(0).numpy()
    names = ["background"] + list(c.class_names)
    shares = {names[k]: float((labels == k).mean()) for k in np.unique(labels)}
    assert any(0 < v < 0.0005 for v in shares.values())  # the photo: a sliver of one class
    df = at.dataframe[0].value
    table = dict(zip(df["class"], df["share of the image"], strict=True))
    assert table == {n: pct(v, 1) for n, v in shares.items()}
    assert "0.0%" not in table.values()
    # the class map's legend (the edges picture has one too)
    class_map = [ls for ls in legends if not ls[0].startswith("class edge")][-1]
    assert sorted(class_map) == sorted(f"{n} {pct(v, 0)}" for n, v in shares.items())


# ---------------------------------------------------------------- 8. named category axes
def y_title(spec: dict) -> str:
    t = spec["layout"].get("yaxis", {}).get("title")
    return (t.get("text") if isinstance(t, dict) else t) or ""


def test_the_logits_page_bar_charts_name_their_category_axis():
    at = open_page("logits")
    names = set(load_model("shapes-classifier").config.class_names)
    for starts in ("top 5 of 10 classes", "the raw logits"):
        spec = chart(at, starts)
        assert set(spec["data"][0]["y"]) <= names  # the bars are named by class ...
        assert y_title(spec) == "class"  # ... and the axis says so
    cap = open_page("logits", "shapes-captioner-causal")
    spec = chart(cap, "P(word 1 | image, words before)")
    assert set(spec["data"][0]["y"]) <= set(load_model("shapes-captioner-causal").config.vocab)
    assert y_title(spec) == "word"


@pytest.mark.parametrize("page", ["overview", "masks"])
def test_the_other_pages_top_k_bars_still_render(page):
    at = open_page(page)
    bars = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    bars = [s for s in bars if s["data"] and s["data"][0].get("type") == "bar"
            and s["data"][0].get("orientation") == "h"]
    assert bars, list(charts(at))
    names = set(load_model("shapes-classifier").config.class_names)
    for spec in bars:
        if set(spec["data"][0]["y"]) <= names:
            assert y_title(spec) == "class"
