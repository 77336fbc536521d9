"""Every figure of the Logits, Shape trace, Segmentation, Experiments, Training and MAE stages has
a text alternative (ui/lesson/deck.Step.describe, drawn as `<p class='figure-alt'>` under it),
and the numbers it states are the figure's (issue 43).

Each page is opened under AppTest on three model families. For every step of the stage on that
model: its `figure-alt` is there and says something; every measured number it states (a
decimal, a percentage, a count of 100 or more) is one the step's figure draws or prints, at the
description's precision (read from the chart's plotly JSON, the table's cells, the metrics, or,
for a picture, computed here from the model's own trace); the bar it calls the longest is the
chart's longest; the patch it calls the highest is where the map's largest value is.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from tests.alt_text import alternatives, numbers, page_of, stated_in
from tests.support import HUB, arr, open_app
from ui import keys
from ui.stages import BY_SLUG as STAGES
from ui.stages.experiments.keys import EXP_COMPARE, EXP_INPUT, EXP_UNORDERED, EXP_WORDS
from ui.stages.logits.keys import GEN_DIST, LOGITS_LENS, LOGITS_RAW, LOGITS_TOPK
from ui.stages.mae.keys import (
    MAE_ERROR,
    MAE_GRID,
    MAE_IMAGES,
    MAE_INPUT,
    MAE_LOSS,
    MAE_TOKENS,
)
from ui.stages.training.keys import (
    TRAIN_CLS,
    TRAIN_CURVES,
    TRAIN_DISTANCE,
    TRAIN_POSITIONS,
    TRAIN_PREDICTION,
)
from ui.stages.why.keys import (
    WHY_GUESS_SCORES,
    WHY_MAPS,
    WHY_PATCH,
    WHY_RACE,
    WHY_SANITY,
    WHY_WORD_FIGURE,
)
from vit_core import load_image, load_model, preprocess, run_trace
from vit_core.explain.segmentation import class_map

MODELS = ("shapes-classifier", "shapes-captioner-causal", "vit-ti16")
SLUGS = ("logits", "shapes", "segmentation", "experiments", "training", "mae", "why")
HEAVY = {("why", "vit-ti16")}  # its maps on a background job: tests/test_figure_alt.py's HEAVY
FIGURE = {  # (stage, step) -> the keys of what its figure draws ("metrics": st.metric's)
    ("logits", "answer"): (LOGITS_TOPK,), ("logits", "raw"): (LOGITS_RAW,),
    ("logits", "lens"): (LOGITS_LENS,), ("logits", "caption"): (GEN_DIST,),
    ("logits", "score"): ("table:word",), ("logits", "vector"): (LOGITS_RAW,),
    ("shapes", "shapes"): ("table:traced shape",), ("shapes", "block"): ("table:traced shape",),
    ("shapes", "costs"): ("table:MACs (all layers)",), ("shapes", "totals"): ("metrics",),
    ("shapes", "params"): ("table:component",), ("shapes", "patch"): ("cost_vs_patch",),
    ("segmentation", "shares"): ("table:share of the image",),
    ("experiments", "change"): (EXP_INPUT,), ("experiments", "compare"): (EXP_COMPARE,),
    ("experiments", "words"): (EXP_WORDS,), ("experiments", "unordered"): (EXP_UNORDERED,),
    ("training", "curves"): (TRAIN_CURVES,), ("training", "positions"): (TRAIN_POSITIONS,),
    ("training", "distance"): (TRAIN_DISTANCE,), ("training", "cls"): (TRAIN_CLS,),
    ("training", "prediction"): (TRAIN_PREDICTION,),
    ("mae", "hide"): (MAE_GRID, MAE_INPUT), ("mae", "shapes"): (MAE_TOKENS, "table:shape"),
    ("mae", "reconstruction"): (MAE_IMAGES,), ("mae", "error"): (MAE_ERROR,),
    ("mae", "loss"): (MAE_LOSS,),
    ("why", "guess"): (WHY_GUESS_SCORES,), ("why", "maps"): (WHY_MAPS,),
    ("why", "test"): (WHY_RACE,), ("why", "sanity"): (WHY_SANITY,),
    ("why", "patching"): (WHY_PATCH,), ("why", "words"): (WHY_WORD_FIGURE,),
}
PICTURES = {("logits", "similar"), ("segmentation", "tokens"), ("segmentation", "map"),
            ("segmentation", "edges")}  # a picture, not a chart: its numbers computed here
INDEX = re.compile(r"\b(patch|row|column|dimension|block|head|word) \d+")  # a place, not a value


# ---------------------------------------------------------------- what the page shows
def _walk(node, values: list, texts: list) -> None:
    if isinstance(node, dict):
        if "bdata" in node and "dtype" in node:
            values.extend(arr(node).astype(np.float64).reshape(-1).tolist())
            return
        for v in node.values():
            _walk(v, values, texts)
    elif isinstance(node, list):
        for v in node:
            _walk(v, values, texts)
    elif isinstance(node, bool) or node is None:
        return
    elif isinstance(node, int | float):
        values.append(float(node))
    elif isinstance(node, str):
        texts.append(node)


def drawn(at, keys: tuple[str, ...]) -> tuple[list[float], list[dict]]:
    """Every number the figures with these keys draw or print, and their plotly JSON."""
    values, texts, specs = [], [], []
    for el in at.get("plotly_chart"):
        if any(el.proto.id.endswith("-" + k) for k in keys):
            spec = json.loads(el.proto.spec)
            specs.append(spec)
            _walk(spec, values, texts)
    for df in at.dataframe:  # a table, known by a column of its own ("table:<column>")
        if any(k.startswith("table:") and k[6:] in df.value.columns for k in keys):
            texts += [str(v) for v in df.value.to_numpy().reshape(-1)]
    if "metrics" in keys:
        texts += [str(m.value) for m in at.metric]
    for t in texts:
        values += [v for v, _, _ in numbers(t)]
    return values, specs


# ---------------------------------------------------------------- a picture's numbers, by hand
def picture_numbers(at, step: str, model_name: str) -> list[float]:
    """The numbers a picture shows, from the model's own trace of the page's image: the share of
    variance of the final patch tokens' top three principal components (tokens), each class's
    share of the pixels (map), the class changes between neighbouring pixels on a patch border,
    inside a patch and in all (edges)."""
    model = load_model(model_name)
    c = model.config
    tr = run_trace(model, preprocess(load_image(at.session_state[keys.INPUT].data), c))
    pre, N = c.num_prefix_tokens, c.num_patches
    if step == "similar":  # a CLS model without a head: each final patch vector against CLS's
        assert c.class_token and c.global_pool != "avg"
        z = tr["ln_final"].double()
        return torch.nn.functional.cosine_similarity(z[pre:pre + N], z[:1], dim=-1).tolist()
    if step == "tokens":
        x = tr["ln_final"][pre:pre + N].double()
        s = torch.linalg.svdvals(x - x.mean(0)) ** 2
        return (s[:3] / s.sum()).tolist() + [float(N)]  # and its N patches
    lab = class_map(tr["seg_logits"], c.grid, c.img_size).numpy()  # [H, W] class per pixel
    if step == "map":
        _, counts = np.unique(lab, return_counts=True)
        return (counts / lab.size).tolist()
    h, v = lab[:, 1:] != lab[:, :-1], lab[1:, :] != lab[:-1, :]
    cut = np.arange(1, lab.shape[1]) % c.patch_size == 0  # pixel x + 1 starts a patch
    on = int((h & cut[None, :]).sum() + (v & cut[:, None]).sum())
    n = int(h.sum() + v.sum())
    H, W = lab.shape
    straddle = H * int(cut.sum()) + W * int((np.arange(1, H) % c.patch_size == 0).sum())
    return [float(on), float(n - on), float(n), float(straddle), float(H * (W - 1) + (H - 1) * W)]


# ---------------------------------------------------------------- the tests
HEADLESS = str(HUB / "tiny-org/vit-headless")  # a model without a head (a fixture folder)
CASES = ([pytest.param(s, m, id=f"{s}-{m}") for s in SLUGS for m in MODELS
          if (s, m) not in HEAVY]
         + [pytest.param("logits", HEADLESS, id="logits-headless")])


@pytest.mark.parametrize(("slug", "model"), CASES)
def test_every_step_has_a_text_alternative_worded_from_its_figure(slug, model):
    at = page_of(slug, model)
    said = alternatives(at, slug)
    config = load_model(model).config
    steps = [s.key for s in STAGES[slug].steps_for(config)]
    if slug == "mae" and "No masked autoencoder" in " ".join(i.value for i in at.info):
        pytest.skip("no MAE on this machine")
    assert set(said) == set(steps), (sorted(said), steps)
    for step in steps:
        alt = said[step]
        assert len(alt) > 40, (step, alt)
        if (slug, step) in PICTURES:
            pool, specs = picture_numbers(at, step, model), []
        else:
            pool, specs = drawn(at, FIGURE[(slug, step)])
            assert pool, (step, "no figure found for", FIGURE[(slug, step)])
        for value, tol, text in numbers(INDEX.sub("", alt)):
            if tol == 0.5 and abs(value) < 100:
                continue  # an index or a count of bars, rows, blocks: checked below if it is
            assert stated_in(value, tol, pool), (step, text, alt)
        longest_bar(alt, specs, step)
        highest_patch(alt, specs, pool, step)


def longest_bar(alt: str, specs: list[dict], step: str) -> None:
    """'the longest is NAME at …': NAME labels the chart's longest bar."""
    m = re.search(r"the longest is (.+?) at ", alt)
    if not m:
        return
    bars = [t for s in specs for t in s["data"] if t.get("type") == "bar"]
    best = max(((float(v), str(lab)) for t in bars[:1] for v, lab in zip(
        arr(t["x"] if t.get("orientation") == "h" else t["y"]),
        t["y"] if t.get("orientation") == "h" else t["x"], strict=True)), default=None)
    assert best is not None, (step, "no bars")
    assert m[1].strip("“”") in (best[1].strip("“”"), f"patch {best[1]}"), (step, m[1], best)


def highest_patch(alt: str, specs: list[dict], pool: list[float], step: str) -> None:
    """'the largest at patch p (row r, column c)': the map's largest value is there."""
    m = re.search(r"the largest at patch (\d+) \(row (\d+), column (\d+)\)", alt)
    if not m:
        return
    maps = [arr(t["z"]) for s in specs for t in s["data"] if t.get("type") == "heatmap"]
    z = np.asarray(maps[0] if maps else pool, dtype=np.float64)
    g = z.shape[0] if z.ndim == 2 else int(round(len(z) ** 0.5))
    flat = z.reshape(-1)
    p = int(np.nanargmax(flat))
    assert (int(m[1]), int(m[2]), int(m[3])) == (p, *divmod(p, g)), (step, m.groups(), p)


KINDS = {  # each other change the Experiments page offers -> the session values that choose it
    "occlude": {keys.EXP_KIND: "Grey out patches", keys.EXP_OCCLUDED: [3, 4, 10]},
    "shuffle": {keys.EXP_KIND: "Shuffle the patches"},
    "positions": {keys.EXP_KIND: "Remove position embeddings"},
    "mask": {keys.EXP_KIND: "Apply another attention mask"},
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_change_is_described(kind):
    """The first step's figure changes with the change chosen: each is described, and its
    numbers are the figure's; the two runs' bars after it too."""
    at = open_app("experiments", "shapes-classifier", state=KINDS[kind], no_error=True)
    said = alternatives(at, "experiments")
    assert set(said) == {"change", "compare", "unordered"}, sorted(said)
    for step in ("change", "compare"):
        pool, specs = drawn(at, FIGURE[("experiments", step)] + ("exp_altered",))
        for value, tol, text in numbers(INDEX.sub("", said[step])):
            if tol < 0.5 or abs(value) >= 100:
                assert stated_in(value, tol, pool), (kind, step, text, said[step])
    if kind == "occlude":
        assert "(3)" in said["change"] and "RGB (" in said["change"], said["change"]
    if kind == "shuffle":  # the cells whose printed patch number is not their own
        cells = next(t["text"] for s in drawn(at, ("exp_altered",))[1] for t in s["data"]
                     if t.get("mode") == "text")
        moved = sum(int(t) != i for i, t in enumerate(cells))
        assert f": {moved} of {len(cells)} moved" in said["change"], said["change"]

