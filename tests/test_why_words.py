"""The Why stage's step "A caption's words": the facts (vit_core.explain.why_word_facts) against
a computation done by hand here, and the page under AppTest against the same hand computation.

The hand computation greys patches by slicing the normalised image (grey = (0.5 − mean) / std),
writes captions with a plain greedy loop over model(pixels, ids), reads probabilities with a
float64 softmax and ranks a map's patches with numpy's stable argsort. It calls neither
why_word_facts, baselines nor generation, which the step uses; the word's map is the library's
public attribution.attribute (the maps themselves are tested in tests/test_attribution.py).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from tests.support import open_app, softmax64
from ui import keys
from ui.stages.why.keys import WHY_OPEN, WHY_WORD, WHY_WORD_FIGURE, WHY_WORD_K, WHY_WORD_METHOD
from vit_core import load_image, load_model, preprocess
from vit_core.explain import attribution, why_word_facts
from vit_core.explain.targets import word_targets
from vit_core.scenes import world

OPEN = {WHY_OPEN: True}  # alone, the steps after the guess shown (as after "Skip guessing")

CAPTIONERS = ("shapes-captioner-causal", "shapes-captioner-prefix")


# ---------------------------------------------------------------- by hand
def grey_by_hand(x: torch.Tensor, config, patches) -> torch.Tensor:
    x = x.clone()
    P, g = config.patch_size, config.grid
    for c in range(x.shape[1]):
        grey = (0.5 - config.mean[c]) / config.std[c]
        for p in patches:
            r, col = divmod(int(p), g)
            x[0, c, r * P:(r + 1) * P, col * P:(col + 1) * P] = grey
    return x


@torch.no_grad()
def caption_by_hand(model, x: torch.Tensor) -> list[str]:
    """Greedy: [SOS], then the argmax of the last position until [EOS] or the text is full."""
    vocab = list(model.config.vocab)
    sos, eos = vocab.index("[SOS]"), vocab.index("[EOS]")
    ids = [sos]
    while len(ids) <= model.config.max_text_len:
        nxt = int(model(x, torch.tensor([ids]))[0, -1].argmax())
        if nxt == eos:
            break
        ids.append(nxt)
    return [vocab[i] for i in ids[1:]]


@torch.no_grad()
def p_by_hand(model, x: torch.Tensor, ids: tuple[int, ...], place: int) -> float:
    logits = model(x, torch.tensor([ids[:place]]))[0, -1].double().numpy()
    return float(softmax64(logits)[ids[place]])


def top_by_hand(values, k: int) -> list[int]:
    return [int(i) for i in np.argsort(-np.asarray(values, dtype=np.float64), kind="stable")[:k]]


def pixels_of(model, seed: int | None = None, data: bytes | None = None) -> torch.Tensor:
    if data is None:
        buf = __import__("io").BytesIO()
        world.make_scene(seed).image.save(buf, format="PNG")
        data = buf.getvalue()
    return preprocess(load_image(data), model.config)


# ---------------------------------------------------------------- the facts
@pytest.mark.parametrize("name", CAPTIONERS)
def test_grey_top_is_the_hand_computation(name):
    model = load_model(name).eval()
    x = pixels_of(model, seed=world.HELDOUT_BASE + 7)
    words = word_targets(model, x)
    assert [t.label for t in words] == caption_by_hand(model, x)
    gen = torch.Generator().manual_seed(3)
    seen_change = False
    for target in words[:2]:
        values = torch.randn(model.config.num_patches, generator=gen)
        for k in (3, 20):
            g = why_word_facts.grey_top(model, x, target, values, k)
            chosen = top_by_hand(values.numpy(), k)
            assert list(g.chosen) == chosen
            greyed = grey_by_hand(x, model.config, chosen)
            before, after = caption_by_hand(model, x), caption_by_hand(model, greyed)
            assert list(g.before) == before and list(g.after) == after
            assert list(g.changed) == [i >= len(before) or before[i] != w
                                       for i, w in enumerate(after)]
            differ = sum(i >= len(a) or i >= len(b) or a[i] != b[i]
                         for a, b in [(before, after)] for i in range(max(len(a), len(b))))
            assert g.n_changed == differ and g.places == max(len(before), len(after))
            assert g.kept == (len(after) >= target.index
                              and after[target.index - 1] == target.label)
            assert g.p_before == pytest.approx(p_by_hand(model, x, target.ids, target.index),
                                               abs=1e-5)
            assert g.p_after == pytest.approx(
                p_by_hand(model, greyed, target.ids, target.index), abs=1e-5)
            seen_change |= differ > 0
    assert seen_change, "no greying changed the caption: the comparison went untested"


def test_ties_go_to_the_lower_patch_and_k_is_clipped():
    v = torch.tensor([0.0, 2.0, 1.0, 2.0])
    assert why_word_facts.top_patches(v, 3) == (1, 3, 2)
    assert why_word_facts.top_patches(v, 9) == (1, 3, 2, 0)
    assert why_word_facts.top_patches(v, 0) == ()


# ---------------------------------------------------------------- the page
def figure(at) -> dict:
    found = [e for e in at.get("plotly_chart") if e.key == WHY_WORD_FIGURE]
    assert found, "no word figure"
    return json.loads(found[0].proto.spec)


def shown_map(spec: dict) -> np.ndarray:
    heat = [t for t in spec["data"] if t["type"] == "heatmap"]
    assert len(heat) == 1
    z = heat[0]["z"]
    if isinstance(z, dict):  # a typed array
        import base64
        z = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
    return np.asarray(z, dtype=np.float64).ravel()


def own_map(model, x, method: str, target) -> np.ndarray:
    v = attribution.attribute(model, x, method, target).patches.double().numpy()
    return v / np.abs(v).max()


def shown_caption(at) -> list[str]:
    line = next(m.value for m in at.markdown
                if m.value.startswith("Written again from the greyed image:"))
    found = re.search(r"“(.*?)”", line)
    return [] if found is None else found.group(1).replace("**", "").replace("✱", "").split()


def marked_words(at) -> list[str]:
    line = next(m.value for m in at.markdown
                if m.value.startswith("Written again from the greyed image:"))
    return re.findall(r"\*\*(\S+?)\*\*✱", line)


@pytest.mark.parametrize("name", CAPTIONERS)
def test_a_clicked_word_shows_its_map_and_greying_rewrites_the_caption(name):
    at = open_app("why", name, no_error=True, state=OPEN)
    model = load_model(name).eval()
    x = preprocess(load_image(at.session_state[keys.INPUT].data), model.config)
    words = word_targets(model, x)
    pills = at.pills(key=WHY_WORD)
    assert list(pills.options) == [t.label for t in words]
    method = at.selectbox(key=WHY_WORD_METHOD).value
    place = 3
    first = own_map(model, x, method, words[0])
    mine = own_map(model, x, method, words[place - 1])
    assert np.allclose(shown_map(figure(at)), first, atol=1e-5)
    assert not np.allclose(first, mine, atol=1e-3)  # else a click could change nothing
    pills.set_value(place).run()
    assert not at.exception
    spec = figure(at)
    assert np.allclose(shown_map(spec), mine, atol=1e-5)
    assert f"“{words[place - 1].label}”, word {place}" in spec["layout"]["title"]["text"]
    # the smallest k (of a few) whose greying changes the caption, by the test's own greedy loop
    before = caption_by_hand(model, x)
    for k in (2, 4, 6, 9, 12, 16, 20, 24):
        after = caption_by_hand(model, grey_by_hand(x, model.config, top_by_hand(mine, k)))
        if after != before:
            break
    assert after != before, "no k changed the caption: pick another word for this test"
    at.slider(key=WHY_WORD_K).set_value(k).run()
    assert not at.exception
    assert shown_caption(at) == after
    assert marked_words(at) == [w for i, w in enumerate(after)
                                if i >= len(before) or before[i] != w]
    assert f"Greying the {k} patches" in " ".join(i.value for i in at.info)


def test_the_step_is_absent_on_a_classifier():
    at = open_app("why", "shapes-classifier", no_error=True, state=OPEN)
    assert not [p for p in at.get("button_group") if p.key == WHY_WORD]
    assert "A caption's words" not in [s.value for s in at.subheader]


def test_the_library_docs_example_runs_and_prints_what_it_says(capsys):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "library.md").read_text()
    section = text.split("**A caption's word, greyed**", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"^```python\n(.*?)^```", section, re.S | re.M).group(1)
    exec(compile(code, "docs/library.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert re.findall(r"^# (.*)$", code, re.M) == lines, "the comments say what it prints"
