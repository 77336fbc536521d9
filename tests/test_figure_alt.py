"""Every figure's text alternative (deck.Step.describe, drawn as `<p class='figure-alt'
id='alt-<stage>-<step>'>`) is there and says the figure's own numbers.

For every stage in STAGES, on each of MODELS, the page (`?page=<slug>`, under AppTest) draws a
non-empty `figure-alt` for every step that applies to the model, and each step's CHECK reads
the numbers back: from the figure as drawn (the plotly JSON of its chart, the rows of its table,
its equation, its metrics) or from a trace this test runs itself (the pictures: attention over
the image, rollout), never from the function the page called.

To add a stage: put `(slug, {step key: check})` in STAGES (every step needs a check, `words` if
its figure carries no number to compare). The checks read the forms ui/drawing/describe.py words
("from a to b", "the largest at row r …, column c", "label: value", "n rows"); reading a page
and a printed number is tests/alt_text.py's, shared with tests/test_figure_alt_more.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from tests import alt_why
from tests.alt_text import NUM, alternatives, close, page_of, printed
from tests.independent import trace_of
from tests.support import arr, open_app
from ui import keys
from ui.stages import STAGES as ALL_STAGES
from ui.stages.attention.keys import ATTN_DISTANCE, ATTN_ENTROPY, ATTN_MATRIX
from ui.stages.embeddings.keys import (
    EMBED_MATRIX,
    EMBED_POS_ALL,
    EMBED_POS_ONE,
    EMBED_POS_SIZES,
    EMBED_TEXT,
    EMBED_VECTOR,
)
from ui.stages.input_patches import PATCH_MATRIX, PATCH_VECTOR, WHAT_IF_GRID
from ui.stages.masks.keys import CLF_CAUSAL, MASK_LIVE, MASK_VISIBLE, MASK_WINDOWS, MASKS_THREE
from ui.stages.mlp import MLP_GELU, MLP_RESID, MLP_TOP
from ui.stages.overview import OVERVIEW_MAP, OVERVIEW_OUTPUT, OVERVIEW_TOPK, OVERVIEW_WORDS
from ui.stages.why import compute as why_compute
from ui.stages.why import maps as why_maps
from ui.stages.why.keys import WHY_FRAME, WHY_GUESS_PICK, WHY_GUESS_TEST
from vit_core import load_model
from vit_core.explain.why_guess_facts import guess_size

MODELS = ("shapes-classifier", "shapes-captioner-causal", "vit-ti16")
HUB = "tests/fixtures/hub"
FAMILIES = (f"{HUB}/timm/vit_tiny_avg_nocls.test", f"{HUB}/tiny-org/vit-headless",
            f"{HUB}/tiny-org/deit-distilled")  # the other families' steps differ: tiny models

RANGE = re.compile(rf"from ({NUM}) to ({NUM})")
CELL = re.compile(r"the largest at (?:patch \d+ \()?row (\d+).*?, column (\d+)")


# ---------------------------------------------------------------- a page and its figures
@dataclass
class Page:
    at: object
    model: str
    slug: str
    alts: dict  # step key -> its text alternative

    @property
    def config(self):
        return load_model(self.model).config

    def chart(self, key: str) -> dict:
        found = [json.loads(el.proto.spec) for el in self.at.get("plotly_chart")
                 if el.proto.id.endswith("-" + key)]
        assert len(found) == 1, (key, [el.proto.id for el in self.at.get("plotly_chart")])
        return found[0]

    def traces(self, key: str, kind: str) -> list[dict]:
        return [t for t in self.chart(key)["data"] if t.get("type") == kind]

    def state(self, key: str) -> int:
        return int(self.at.session_state[key])

    def trace(self):
        return trace_of(self.at, self.model)


def _z(trace: dict) -> np.ndarray:
    return np.array(arr(trace["z"]), dtype=np.float64)  # None (a gap) becomes nan


def _range_and_cell(said: str, z: np.ndarray, what: str) -> None:
    """`said` states the range of z and where its largest value is (or one value everywhere)."""
    finite = z[np.isfinite(z)]
    every = re.search(rf"({NUM}) (?:in every cell|on every patch)", said)
    if every:
        close(every.group(1), finite.max(), what)
        close(every.group(1), finite.min(), what)
        return
    (lo, hi), = RANGE.findall(said)[:1]
    close(lo, finite.min(), what + " lowest")
    close(hi, finite.max(), what + " highest")
    cell = CELL.search(said)
    if cell:
        r, c = int(cell.group(1)), int(cell.group(2))
        assert z.reshape(-1, z.shape[-1])[r, c] >= finite.max() - 1e-6, (what, r, c)


# ---------------------------------------------------------------- checks (page, alt) -> None
def words(page: Page, alt: str) -> None:
    """No number to compare: the figure is a picture whose text alternative names it."""


def heatmaps(*chart_keys: str):
    """One 'A heatmap of …' part per heatmap trace of the charts, in order."""
    def check(page: Page, alt: str) -> None:
        traces = [t for k in chart_keys for t in page.traces(k, "heatmap")]
        parts = alt.split("A heatmap of ")[1:]
        assert len(parts) == len(traces), (chart_keys, len(parts), len(traces))
        for part, t in zip(parts, traces, strict=True):
            _range_and_cell(part, _z(t), str(chart_keys))
    return check


def _bars_said(alt: str, traces: list[dict]) -> None:
    for t in traces:
        horizontal = t.get("orientation") == "h"
        labels = list(t["y"] if horizontal else t["x"])
        values = arr(t["x"] if horizontal else t["y"])
        for label, value in zip(labels, values, strict=True):
            m = re.search(rf"(?:: |; ){re.escape(str(label))}: ({NUM})", alt)
            assert m, (label, alt)
            close(m.group(1), value, str(label))


def bars(chart_key: str, panels: int = 1):
    """Every bar said with its label and value; `panels` charts side by side: 'Left: …',
    'Right: …'."""
    def check(page: Page, alt: str) -> None:
        traces = page.traces(chart_key, "bar")
        parts = [alt] if panels == 1 else alt.split(" Right: ")
        assert len(parts) == panels == len(traces)
        for part, t in zip(parts, traces, strict=True):
            _bars_said(part, [t])
    return check


def table(page: Page, alt: str) -> None:
    """The table whose columns it names has as many rows as it says."""
    n, cols = re.search(r"(\d+) rows?; its columns: (.*?)\.(?: |$)", alt).groups()
    frames = [d.value for d in page.at.dataframe if list(d.value.columns) == cols.split("; ")]
    assert frames, (cols, [list(d.value.columns) for d in page.at.dataframe])
    assert len(frames[0]) == int(n)


def encoded(page: Page, alt: str) -> None:
    """A headless encoder: the final CLS attention over the image, or (CLS blind) the patch
    tokens' principal components as colours (a picture: words only)."""
    if "attention" in alt:
        _range_and_cell(alt, _z(page.traces(OVERVIEW_OUTPUT, "heatmap")[0]), "output")


def model_map(page: Page, alt: str) -> None:
    drawn = json.dumps(page.chart(OVERVIEW_MAP), ensure_ascii=False)
    shapes = re.findall(r"\b\d+(?:×\d+)+\b", alt.split("in this pass: ")[1])
    assert shapes and all(s in drawn for s in shapes), [s for s in shapes if s not in drawn]


def patch_grid(page: Page, alt: str) -> None:
    c = page.config
    g = c.img_size // c.patch_size
    for said in (f"{c.img_size}×{c.img_size} pixels", f"{g}×{g} grid",
                 f"{g * g} patches of {c.patch_size}×{c.patch_size}"):
        assert said in alt, (said, alt)
    if page.slug == "patches":
        p = page.state(keys.PATCH)
        assert f"patch {p} (row {p // g}, column {p % g})" in alt


def what_if(page: Page, alt: str) -> None:
    metrics = [m.value.replace(",", "") for m in page.at.metric]
    n, s, s2 = re.search(r"N = (\S+) patches, S = (\S+) tokens, (\S+) attention", alt).groups()
    assert [v.replace(",", "") for v in (n, s, s2)] == metrics[:3], (alt, metrics)
    P = int(re.search(r"P = (\d+)", alt).group(1))
    g = page.config.img_size // P
    assert f"a {g}×{g} grid" in alt and int(n.replace(",", "")) == g * g
    assert page.chart(WHAT_IF_GRID)  # the grid it describes is drawn


def filters(page: Page, alt: str) -> None:
    """The components' shares, from an SVD of W_E's rows done here in float64."""
    w = load_model(page.model).patch_embed.proj.weight.detach().double()
    rows = w.reshape(w.shape[0], -1)
    s = torch.linalg.svdvals(rows - rows.mean(0))
    share = (s ** 2 / (s ** 2).sum()).numpy()
    said = re.findall(rf"PC(\d+) ({NUM})", alt)
    assert said
    for i, text in said:
        close(text, share[int(i) - 1], f"PC{i}")


def position(page: Page, alt: str) -> None:
    z = _z(page.traces(EMBED_POS_ONE, "heatmap")[0])
    _range_and_cell(alt, z, "position")
    r, c = map(int, re.search(r"smallest is at patch \d+ \(row (\d+), column (\d+)\)", alt)
               .groups())
    assert z[r, c] <= np.nanmin(z) + 1e-6


def similarity(page: Page, alt: str) -> None:
    z = _z(page.traces(EMBED_POS_ALL, "heatmap")[0])
    _range_and_cell(alt, z, "similarity")
    g = page.config.img_size // page.config.patch_size
    r1, c1, r2, c2 = map(int, re.search(r"patch \((\d+),(\d+)\) and patch \((\d+),(\d+)\)",
                                        alt).groups())
    assert z[r1 * (g + 1) + r2, c1 * (g + 1) + c2] <= np.nanmin(z) + 1e-6


def size_pair(page: Page, alt: str) -> None:
    traces = page.traces(EMBED_POS_SIZES, "heatmap")
    parts = alt.split(" Right, ")
    assert len(parts) == len(traces) == 2
    for part, t in zip(parts, traces, strict=True):
        _range_and_cell(part.split("Left, ")[-1], _z(t), "size")


def layernorm(page: Page, alt: str) -> None:
    hists = page.traces("ln_hist", "histogram")
    said = re.findall(rf"LayerNorm from ({NUM}) to ({NUM}) \(mean ({NUM}), std ({NUM})\)", alt)
    assert len(said) == len(hists) == 2
    for (lo, hi, mean, std), h in zip(said, hists, strict=True):
        x = arr(h["x"]).astype(np.float64)
        for text, v in ((lo, x.min()), (hi, x.max()), (mean, x.mean()), (std, x.std())):
            close(text, v, "LayerNorm")


def score(page: Page, alt: str) -> None:
    dot, dk, s = re.search(rf"= ({NUM}) / √(\d+) = ({NUM})", alt).groups()
    tex = next(e.value for e in page.at.latex if r"\cdot k_" in e.value)
    drawn = re.findall(r"-?\d+\.\d+", tex)
    close(dot, float(drawn[0]), "dot")
    close(s, float(drawn[1]), "score")
    assert f"{{\\sqrt{{{dk}}}}}" in tex


def distance(page: Page, alt: str) -> None:
    series = page.traces(ATTN_DISTANCE, "scatter")
    heads = np.array([arr(t["y"]) for t in series if t.get("mode") == "markers"])  # [H, L]
    at = r"\(layer (\d+), head (\d+)\)"
    lo, la, ha, hi, lb, hb = re.search(rf"from ({NUM}) {at} to ({NUM}) {at}", alt).groups()
    close(lo, heads.min(), "nearest")
    close(hi, heads.max(), "farthest")
    assert heads[int(ha), int(la)] <= heads.min() + 1e-6
    assert heads[int(hb), int(lb)] >= heads.max() - 1e-6
    base = next(t for t in series if t.get("mode") == "lines")
    close(re.search(rf"dashed line at ({NUM}) px", alt).group(1), arr(base["y"])[0], "even")


def _patch_rows(page: Page):
    """The pattern [H, S, S] of the session's layer, from the test's own trace, and the config."""
    c = page.config
    return page.trace()[f"blocks.{page.state(keys.LAYER)}.attn.pattern"].double(), c


def where(page: Page, alt: str) -> None:
    pat, c = _patch_rows(page)
    a, pre, N = pat[page.state(keys.HEAD)], c.num_prefix_tokens, c.num_patches
    q = pre + page.state(keys.PATCH)
    left, right = alt.split(" Left, ")[1].split(" Right, ")
    for part, m in ((left, a[q, pre:pre + N]), (right, a[pre:pre + N, q])):
        _range_and_cell(part, m.reshape(c.grid, c.grid).numpy(), "where")
    _pictures_say(page, alt, 2)


def heads(page: Page, alt: str) -> None:
    pat, c = _patch_rows(page)
    pre, N = c.num_prefix_tokens, c.num_patches
    parts = re.split(r"\d+ pictures? of your image", alt)[1:]  # one per prefix token
    assert len(parts) == pre
    for i, (tok, part) in enumerate(zip(c.prefix_names, parts, strict=True)):
        rows = pat[:, i, pre:pre + N]  # [H, N]
        if float(rows.max()) == 0:
            assert "sees no patch" in part
            continue
        said = re.findall(rf"head (\d+): patch (\d+) \(\d+,\d+\) ({NUM})", part)
        assert len(said) == rows.shape[0], (tok, part)
        for h, p, share in said:
            assert rows[int(h), int(p)] >= rows[int(h)].max() - 1e-9, (tok, h, p)
            close(share, rows[int(h)].max(), f"{tok} head {h}")
    _pictures_say(page, alt, pre)


def rollout(page: Page, alt: str) -> None:
    """Abnar & Zuidema's rollout, computed here in float64: heads averaged, half the identity
    added, rows renormalised, layers multiplied from the first."""
    tr, c = page.trace(), page.config
    joint = None
    for b in range(c.depth):
        a = 0.5 * torch.eye(tr["embed"].shape[0], dtype=torch.float64) + 0.5 * tr[
            f"blocks.{b}.attn.pattern"].double().mean(0)
        a = a / a.sum(-1, keepdim=True)
        joint = a if joint is None else a @ joint
    pre, N = c.num_prefix_tokens, c.num_patches
    drawn = joint[0, pre:pre + N] if pre else joint[:N, :N].mean(0)
    _range_and_cell(alt, drawn.reshape(c.grid, c.grid).numpy(), "rollout")
    _pictures_say(page, alt, 1)


def _pictures_say(page: Page, alt: str, n: int) -> None:
    """The n pictures themselves carry the text alternative (each its part of it, as `alt`),
    not only the line under them."""
    alts = [im.alt for el in page.at.get("image") for im in el.proto.imgs]
    assert len([a for a in alts if a and a in alt]) >= n, alts


def mask_pairs(page: Page, alt: str) -> None:
    masks = [t for t in page.traces(MASKS_THREE, "heatmap")]
    said = re.findall(r"lets ([\d,]+) of the ([\d,]+) pairs", alt)
    assert len(said) == len(masks) == 3
    for (kept, total), t in zip(said, masks, strict=True):
        z = _z(t)
        assert (int(kept.replace(",", "")), int(total.replace(",", ""))) == (int(z.sum()), z.size)


def visible(page: Page, alt: str) -> None:
    for t in page.traces(MASK_VISIBLE, "scatter"):
        kind = t["name"].split()[0]
        lo, hi = re.search(rf"{kind} from (\d+) to (\d+)", alt).groups()
        y = arr(t["y"])
        assert (int(lo), int(hi)) == (int(y.min()), int(y.max())), kind


def windows(page: Page, alt: str) -> None:
    traces = page.traces(MASK_WINDOWS, "heatmap")
    grids = [t for t in traces if "text" in t]
    masks = [t for t in traces if "text" not in t]
    n = [int(v) for v in re.findall(r"(\d+) windows", alt)]
    assert n == [len({w for row in t["text"] for w in row}) for t in grids], n
    kept = [int(v.replace(",", "")) for v in re.findall(r"([\d,]+)(?: of [\d,]+)? pairs", alt)]
    assert kept == [int(_z(t).sum()) for t in masks], kept


def gelu(page: Page, alt: str) -> None:
    dots = next(t for t in page.traces(MLP_GELU, "scatter") if t.get("mode") == "markers")
    u, g = arr(dots["x"]).astype(np.float64), arr(dots["y"]).astype(np.float64)
    (ulo, uhi), (glo, ghi) = RANGE.findall(alt)[:2]
    for text, v in ((ulo, u.min()), (uhi, u.max()), (glo, g.min()), (ghi, g.max())):
        close(text, v, "GELU")
    on, F = re.search(r"(\d+) of them", alt).group(1), re.search(r"'s (\d+) hidden", alt).group(1)
    assert (int(on), int(F)) == (int((u > 0).sum()), u.size)


def stream(page: Page, alt: str) -> None:
    traces = page.chart(MLP_RESID)["data"]
    bars_, line = [t for t in traces if t["type"] == "bar"], traces[-1]
    (alo, ahi), (mlo, mhi), (rlo, rhi) = RANGE.findall(alt)[:3]
    for (lo, hi), t in (((alo, ahi), bars_[0]), ((mlo, mhi), bars_[1]), ((rlo, rhi), line)):
        y = arr(t["y"]).astype(np.float64)
        close(lo, y.min(), t["name"])
        close(hi, y.max(), t["name"])
    y = arr(line["y"])
    first, last = re.search(rf"({NUM}) at the embedding, ({NUM}) after block", alt).groups()
    close(first, y[0], "embed")
    close(last, y[-1], "last block")


# ---------------------------------------------------------------- the stages and their checks
STAGES: list[tuple[str, dict]] = [
    ("overview", {"map": model_map, "grid": patch_grid, "prediction": bars(OVERVIEW_TOPK),
                  "caption": bars(OVERVIEW_WORDS), "output": encoded, "table": table}),
    ("patches", {"grid": patch_grid, "vector": heatmaps(PATCH_VECTOR),
                 "matrix": heatmaps(PATCH_MATRIX), "what_if": what_if, "sizes": table}),
    ("embeddings", {"vector": heatmaps(EMBED_VECTOR), "filters": filters,
                    "position": position, "similarity": similarity,
                    "sum": heatmaps(EMBED_MATRIX), "text": heatmaps(EMBED_TEXT),
                    "size": size_pair}),
    ("qkv", {"layernorm": layernorm, "qkv": heatmaps(*(keys.qkv(n) for n in "QKV")),
             "score": score}),
    ("attention", {"pattern": heatmaps(ATTN_MATRIX), "where": where, "heads": heads,
                   "rollout": rollout, "entropy": heatmaps(ATTN_ENTROPY),
                   "distance": distance}),
    ("masks", {"three": mask_pairs, "visible": visible, "live": heatmaps(MASK_LIVE),
               "scores": table, "classifier": bars(CLF_CAUSAL, panels=2),
               "windows": windows}),
    ("mlp", {"gelu": gelu, "units": bars(MLP_TOP), "stream": stream}),
    ("why", alt_why.CHECKS),
]
# a step that draws no figure on some models (only its sentence): no text alternative there
WORDS_ONLY = {("why", "maps"): lambda config: not why_compute.applies(config)}  # no answer
# ViT-Ti/16 is heavy (not worker.small): its why page computes on a background job behind a
# progress bar, and the maps (3.4 s) and the table (17 s) take ~20 s at load 2 here, far over
# a quick page: a big model's waiting steps are tests/test_why_held.py's
HEAVY = {("why", "vit-ti16")}
CASES = [pytest.param(slug, checks, model, id=f"{slug}-{model}") for slug, checks in STAGES
         for model in MODELS + FAMILIES if (slug, model) not in HEAVY]


def open_page(slug: str, model: str) -> Page:
    """The page as the other tests of this module and tests/test_figure_alt_more.py see it:
    opened once per (stage, model)."""
    at = page_of(slug, model)
    return Page(at, model, slug, alternatives(at, slug))


@pytest.mark.parametrize("slug, checks, model", CASES)
def test_every_figure_has_a_text_alternative_with_its_numbers(slug, checks, model):
    stage = next(s for s in ALL_STAGES if s.slug == slug)
    page = open_page(slug, model)
    steps = [s.key for s in stage.steps_for(page.config) if not (
        (slug, s.key) in WORDS_ONLY and WORDS_ONLY[(slug, s.key)](page.config))]
    assert set(checks) >= {s.key for s in stage.steps}, "a step of the stage has no check"
    missing = [k for k in steps if not page.alts.get(k, "").strip()]
    assert not missing, f"{slug} on {model}: no text alternative for {missing}"
    for key in steps:
        checks[key](page, page.alts[key])


def test_a_wrong_number_in_a_description_is_caught():
    """The checks can fail: the pattern's description with its largest value off by one
    printed digit, and with another cell named, is refused."""
    page = open_page("attention", MODELS[0])
    alt = page.alts["pattern"]
    check = heatmaps(ATTN_MATRIX)
    check(page, alt)
    lo, hi = RANGE.findall(alt)[0]
    value, tol = printed(hi)
    with pytest.raises(AssertionError):
        check(page, alt.replace(f"to {hi}", f"to {value + 4 * tol:g}"))
    r, c = CELL.search(alt).groups()
    z = _z(page.traces(ATTN_MATRIX, "heatmap")[0])
    other = int(np.nanargmin(z[int(r)]))  # a cell of the same row that is not the largest
    with pytest.raises(AssertionError):
        check(page, alt.replace(f"column {c}", f"column {other}", 1))


def test_a_slide_says_the_same_description_hidden_and_in_the_speaker_notes():
    """Presenter mode: the step's description is on the slide for a screen reader (visually
    hidden) and in the speaker notes, the same words as on the page."""
    slug, model = "attention", MODELS[0]
    stage = next(s for s in ALL_STAGES if s.slug == slug)
    steps = [s.key for s in stage.steps_for(load_model(model).config)]
    on_page = open_page(slug, model).alts["entropy"]
    at = open_app(params={"page": slug, "presenter": "1", "step": str(steps.index("entropy") + 1)},
                  model=model)
    _slide_says(at, slug, "entropy", on_page)


def test_each_why_slide_says_its_description_hidden_and_in_the_speaker_notes():
    """The same for every step of the why stage on the captioner (its six steps), the guess
    tested on the slide as on the page: each slide's description is the page's."""
    model = MODELS[1]
    page = open_page("why", model)
    config = load_model(model).config
    steps = [s.key for s in next(s for s in ALL_STAGES if s.slug == "why").steps_for(config)]
    at = open_app(params={"page": "why", "presenter": "1", "step": "1"}, model=model,
                  state={WHY_GUESS_PICK: list(range(guess_size(config.grid)))})
    at.button(key=WHY_GUESS_TEST).click().run()
    for i, key in enumerate(steps):
        at.session_state[keys.PRESENTER_STEP] = i
        at.run()
        _slide_says(at, "why", key, page.alts[key])


def _slide_says(at, slug: str, key: str, on_page: str) -> None:
    assert not at.exception, [e.value for e in at.exception]
    hidden = [b for b in (e.proto.body for e in at.get("html")) if f"id='alt-{slug}-{key}'" in b]
    assert hidden and "figure-alt sr-only" in hidden[0], (slug, key)
    assert alternatives(at, slug) == {key: on_page}
    assert any(on_page in m.value for m in at.markdown if "Describe the figure" in m.value)


def _nudged(text: str, pattern: str) -> str:
    """`text` with the first number `pattern`'s group 1 finds moved by four of its last digits."""
    m = re.search(pattern, text)
    value, tol = printed(m.group(1))
    return text[:m.start(1)] + f"{value + 8 * tol:.{len(m.group(1).split('.')[-1])}f}" + text[
        m.end(1):]


WRONG_WHY = {  # step -> a number of its description to nudge (the model, the pattern)
    "guess": (MODELS[0], rf"Rollout ({NUM})"),
    "maps": (MODELS[0], rf"CLS attention from ({NUM})"),
    "test": (MODELS[0], rf"the lowest area is .+?'s, ({NUM})"),
    "sanity": (MODELS[0], rf"Rollout ρ ({NUM})"),
    "patching": (MODELS[0], rf"heads across, from ({NUM})"),
    "words": (MODELS[1], rf"P\(“.+?”\) ({NUM})"),
}


@pytest.mark.parametrize("step", list(WRONG_WHY))
def test_a_wrong_number_in_a_why_description_is_caught(step):
    """The why stage's checks can fail: each step's description with one number off (an AUC, a
    range's end, a ρ, a probability) is refused; so is the fastest order named wrong."""
    model, pattern = WRONG_WHY[step]
    page = open_page("why", model)
    alt, check = page.alts[step], alt_why.CHECKS[step]
    check(page, alt)
    with pytest.raises(AssertionError):
        check(page, _nudged(alt, pattern))
    if step == "test":
        fastest = re.search(r"the lowest area is (.+?)'s", alt).group(1)
        other = next(n for n in why_maps.NAMES.values() if n != fastest)
        with pytest.raises(AssertionError):
            check(page, alt.replace(f"is {fastest}'s", f"is {other}'s"))


def test_the_play_frame_shown_is_the_one_described():
    """The curves' description follows the Play: at a middle frame it says the patches greyed
    (the picture's grey patches, counted here) and their probability (the marker's)."""
    page = open_page("why", MODELS[0])
    slider = page.at.slider(key=WHY_FRAME)
    try:
        slider.set_value(slider.max // 2).run()
        moved = Page(page.at, page.model, "why", alternatives(page.at, "why"))
        assert not moved.alts["test"].startswith("Left: the image with 0 patches")
        alt_why.test(moved, moved.alts["test"])
    finally:
        page.at.slider(key=WHY_FRAME).set_value(0).run()
