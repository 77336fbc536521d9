"""Every page on every model family, under AppTest: one matrix.

A run is a model (a bundled name, a random-weight preset, a fixture repo's folder, or a shared
link `?model=hf:ORG/NAME` to a repo this machine fetched once and is now offline for) and the
sidebar's mask. On every page of every run: no exception and no st.error, the app really ran
that model (a session value the picker does not offer would be replaced by the default), the
page draws its title, the words of its steps, its equation and the model card, something
only this model's geometry produces, and every heatmap names its axes and its colour.

The bundled models and one small fixture repo are in the quick tier; the other runs are
marked slow.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import HUB, TIMM_384, open_app, photo_bytes
from ui import keys, stages
from ui.stages import BY_SLUG as STAGES
from ui.stages.mlp import MLP_GELU
from ui.stages.training.keys import TRAIN_DISTANCE
from ui.stages.why.keys import WHY_OPEN
from vit_core import load_model

PAGES = list(STAGES)
CLF, PREFIX, CAUSAL, TI = ("shapes-classifier", "shapes-captioner-prefix",
                           "shapes-captioner-causal", "vit-ti16")
REPOS = ["tiny-org/vit-cls", "tiny-org/vit-headless", "tiny-org/deit-cls",
         "tiny-org/deit-distilled", "tiny-org/vit-1block-1head-p14", "timm/vit_tiny_cls.test",
         "timm/vit_tiny_avg_fcnorm.test", "timm/vit_tiny_avg_nocls.test"]
FIX = {repo.split("/")[-1]: str(HUB / repo) for repo in REPOS}  # opened from their folders
LINKED = {  # hf: repo -> what makes it a family of its own (opened as a shared link, offline)
    "tiny-org/vit-cls": "CLS classifier (transformers)",
    "tiny-org/vit-headless": "headless encoder, no classifier (ViTModel, like DINO)",
    "tiny-org/deit-distilled": "CLS + DIST tokens, two heads averaged",
    "tiny-org/vit-1block-1head-p14": "1 block, 1 head, patch 14",
    "timm/vit_tiny_avg_fcnorm.test": "average pooling + fc_norm, with CLS (timm)",
    "timm/vit_tiny_avg_nocls.test": "average pooling, no CLS (timm)",
    TIMM_384: "384 input, patch 32, 1000 ImageNet classes (timm format)",
}
QUICK = {(CLF, None), (PREFIX, None), (CAUSAL, None), (FIX["vit-1block-1head-p14"], None)}


def run(model: str, mask: str | None = None):
    name = model.split("/")[-1]
    name = f"hf-{name}" if model.startswith("hf:") else name
    marks = () if (model, mask) in QUICK else (pytest.mark.slow,)
    return pytest.param(model, mask, id=f"{name}-{mask or 'trained'}", marks=marks)


RUNS = ([run(m) for m in (CLF, PREFIX, CAUSAL, TI, "shapes-mae", *FIX.values())]
        + [run(m, mask) for m, mask in [
            (CLF, "causal"), (CLF, "prefix"), (CAUSAL, "causal"), (CAUSAL, "prefix"),
            (PREFIX, "causal"), (FIX["vit-headless"], "causal"),
            (FIX["vit_tiny_avg_nocls.test"], "causal"), (FIX["deit-distilled"], "causal")]]
        + [run(f"hf:{repo}") for repo in LINKED])

FIGURE_WORDS = {  # page -> words the titles of its figures contain (on vit-ti16)
    "patches": ["Patch", "X_patch"],
    "embeddings": ["x_p E + b", "embed = "],
    "qkv": ["the ", "Q of head", "K of head", "V of head"],
    "attention": ["Layer", "Mean attention distance", "Attention entropy"],
    "masks": ["Three masks", "How many keys", "the same weights, with and without a causal"],
    "mlp": ["GELU with this token", "its 10 most active"],
    "logits": ["the raw logits", "P(class) if the network stopped"],
    "shapes": ["with other patch sizes"],
}


# ---------------------------------------------------------------- reading the page
def figures(at) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def title_of(fig: dict) -> str:
    return text_of(fig.get("layout", {}).get("title"))


def chart_by_key(at, key: str) -> dict:
    found = [json.loads(el.proto.spec) for el in at.get("plotly_chart")
             if el.proto.id.endswith("-" + key)]
    assert len(found) == 1, (key, [el.proto.id for el in at.get("plotly_chart")])
    return found[0]


def words(at) -> str:
    parts = [m.value for kind in ("markdown", "caption", "info", "warning", "subheader")
             for m in getattr(at, kind)]
    parts += [im.caption for el in at.get("image") for im in el.proto.imgs]
    return "\n".join(parts)


def shows_this_models_geometry(page: str, at, model_name: str) -> bool:
    """Something on `page` that only this model's geometry prints (the experiments page: its
    own title, as nothing there names a size)."""
    c = load_model(model_name).config
    S, N = c.num_image_tokens, c.num_patches
    titles = [title_of(f) for f in figures(at)]
    notice = " ".join(i.value for i in at.info)  # every step's words
    if page == "overview":
        return f"S = {S} " in notice
    if page == "patches":
        return any(f"= {N}," in lat.value for lat in at.get("latex"))
    if page == "embeddings":
        return f"**{S}** tokens of **{c.embed_dim}**" in words(at)
    if page == "qkv":
        return f"{S}×{c.head_dim}" in title_of(chart_by_key(at, keys.qkv("Q")))
    if page == "mlp":
        return f"this token's {c.mlp_hidden} pre-activations" in title_of(
            chart_by_key(at, MLP_GELU))
    if page == "attention":
        return any(t.endswith(f"{S}×{S}") for t in titles)
    if page == "shapes":
        df = at.dataframe[0].value
        return df.set_index("step").loc["tokens", "traced shape"] == f"{S} × {c.embed_dim}"
    if page == "segmentation":
        return f"their {c.grid}×{c.grid} grid" in words(at)
    if page == "logits":
        if c.num_classes:
            return any(f"of {c.num_classes} classes" in t for t in titles)
        if c.has_text:
            return any(s.value.startswith("[SOS]") for s in at.subheader)
        return any(f"({c.embed_dim} dimensions)" in t for t in titles)
    if page == "masks":  # the masks page runs a classifier: this one, or the bundled one
        clf = model_name if c.num_classes else CLF
        label = clf.split("/")[-1] if "/" in clf else clf
        return any(label in t for t in titles)
    if page == "training":
        return f"({c.depth} blocks × {c.num_heads} heads)" in title_of(
            chart_by_key(at, TRAIN_DISTANCE))
    if page == "mae":  # the stage runs an MAE: this one, or the bundled one on the same image
        from ui.stages.mae import NO_MAE

        return (f"The sidebar's model, {model_name}, is not a masked autoencoder" in notice
                or NO_MAE in notice or "N_vis" in notice)
    if page == "why":  # the maps' scaling names this model's patch count
        return any(f"N = {N}" in lat.value for lat in at.get("latex"))
    assert page == "experiments", page
    return at.title[0].value.startswith("10 · Experiments")


# ---------------------------------------------------------------- readable heatmaps
HEATMAPS = ("heatmap", "heatmapgl", "contour", "histogram2d", "histogram2dcontour")


def text_of(title) -> str:
    """A plotly title: a string, or {'text': ...}."""
    if isinstance(title, dict):
        title = title.get("text")
    return str(title or "").strip()


def axis_name(ref: str | None, kind: str) -> str:
    """'x' -> 'xaxis', 'x2' -> 'xaxis2' (a trace's axis reference to its layout key)."""
    ref = ref or kind
    return f"{kind}axis{ref[1:]}"


def unreadable(fig: dict) -> list[str]:
    """What is missing on each heatmap of one figure ([] when everything is named): both axes
    say what they are, and a colour bar says what its colour means (or there is none)."""
    layout, missing = fig.get("layout", {}), []
    name = text_of(layout.get("title")) or "untitled figure"
    for i, trace in enumerate(fig.get("data", [])):
        if trace.get("type") not in HEATMAPS:
            continue
        where = f"{name!r} trace {i}"
        for kind in ("x", "y"):
            axis = axis_name(trace.get(f"{kind}axis"), kind)
            if not text_of(layout.get(axis, {}).get("title")):
                missing.append(f"{where}: no {kind} axis title ({axis})")
        if "coloraxis" in trace:  # a shared colour axis carries the bar
            bar_owner = layout.get(trace["coloraxis"], {})
        else:
            bar_owner = trace
        if bar_owner.get("showscale", True) is not False:
            if not text_of(bar_owner.get("colorbar", {}).get("title")):
                missing.append(f"{where}: a colour bar without a title")
    return missing


# ---------------------------------------------------------------- text from the back of the room
LEAST_PX = 14  # issue 39: no text in a figure under 14 CSS px (a plotly font keeps its px)


def small_fonts(fig: dict) -> list[str]:
    """Where a drawn figure's text would be under LEAST_PX: any font it sets smaller, and the
    axis ticks and legend it leaves to the theme (Streamlit's chart theme writes 12-px ticks and
    legends into the template, so they must be set on the figure itself)."""
    layout, out = fig.get("layout", {}), []
    name = text_of(layout.get("title")) or "untitled figure"

    def walk(node, path: str) -> None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{path}[{i}]")
        elif isinstance(node, dict):
            for k, v in node.items():
                size = v.get("size") if k.endswith("font") and isinstance(v, dict) else None
                if isinstance(size, (int, float)) and size < LEAST_PX:
                    out.append(f"{name!r}: {path}.{k} is {size:g} px")
                elif k != "template":
                    walk(v, f"{path}.{k}")

    walk(layout, "layout")
    walk(fig.get("data", []), "data")
    for trace in fig.get("data", []):
        for kind in ("x", "y"):
            axis = axis_name(trace.get(f"{kind}axis"), kind)
            spec = layout.get(axis, {})
            if spec.get("visible") is not False and spec.get("showticklabels") is not False \
                    and (spec.get("tickfont") or {}).get("size", 0) < LEAST_PX:
                out.append(f"{name!r}: {axis}'s ticks are left to the theme (12 px)")
    if any(t.get("showlegend") is not False and t.get("name") for t in fig.get("data", [])) \
            and layout.get("showlegend") is not False \
            and (layout.get("legend", {}).get("font") or {}).get("size", 0) < LEAST_PX:
        out.append(f"{name!r}: the legend's text is left to the theme (12 px)")
    return sorted(set(out))


# ---------------------------------------------------------------- the matrix
LATER = ("training", "mae")  # stages past the forward pass: the quick tier opens them on CLF


# A shared link to a repo that FIX also opens from its folder loads the same files by another
# road (fetched, cached, offline): these pages show what the road changes (the model's name and
# where it came from, its card, its classes); the folder's run covers every page of its family.
LINK_PAGES = ("overview", "embeddings", "attention", "logits")
BOTH_ROADS = {f"hf:{repo}" for repo in REPOS}


def matrix():
    """(page, model, mask) for every page and run; the quick tier keeps QUICK's runs, and of
    LATER's pages only the bundled classifier's (the rest run in the slow tier)."""
    out = []
    for r in RUNS:
        model, mask = r.values
        for page in PAGES:
            if model in BOTH_ROADS and page not in LINK_PAGES:
                continue
            slow = bool(r.marks) or (page in LATER and model != CLF)
            out.append(pytest.param(page, model, mask, id=f"{r.id}-{page}",
                                    marks=(pytest.mark.slow,) if slow else ()))
    return out


@pytest.mark.parametrize("page,model,mask", matrix())
def test_every_page_on_every_model(request, page, model, mask):
    state = {WHY_OPEN: True} if page == "why" else None  # alone: as after "Skip guessing"
    if model.startswith("hf:"):
        request.getfixturevalue("offline_hub_models")  # fetched, then the Hub stopped
        at = open_app(page, params={keys.MODEL: model}, mask=mask, no_error=True, state=state)
    else:
        at = open_app(page, model, mask, no_error=True, state=state)  # fails if another ran
    assert at.session_state[keys.MODEL] == model
    if mask:
        assert at.session_state[keys.MASK] == mask
    assert at.title, "the page drew its title"
    assert at.info, "the page says what its figures show"
    if page != "overview":
        assert at.get("latex"), "every stage shows its equation"
    ran = load_model(model)
    assert any(f"**{ran.info.name}**" in m.value for m in at.markdown), "the model card"
    assert shows_this_models_geometry(page, at, model), f"{page} did not draw {model}'s numbers"
    problems = [p for fig in figures(at) for p in unreadable(fig) + small_fonts(fig)]
    assert not problems, "\n".join(problems)
    if model == TI:
        titles = " | ".join(title_of(f) for f in figures(at))
        for expected in FIGURE_WORDS.get(page, []):
            assert expected in titles, (expected, titles)


@pytest.mark.slow  # 13 pages; the quick tier's photo checks are in test_bad_input_ui.py
@pytest.mark.parametrize("page", PAGES)
def test_every_page_on_an_uploaded_photo(page):
    at = open_app(page, CLF, upload=photo_bytes(), no_error=True)
    assert at.title
    assert at.session_state[keys.INPUT].label == "upload: photo.jpg"
    assert any("upload: photo.jpg" in c.value for c in at.sidebar.caption)
    assert at.info, "the page says what its figures show"


def test_the_readability_check_sees_a_missing_title():
    """The checker itself: an unnamed axis, an untitled bar, and what is allowed instead."""
    good = {"data": [{"type": "heatmap", "z": [[1]], "colorbar": {"title": {"text": "weight"}}}],
            "layout": {"xaxis": {"title": {"text": "key token"}},
                       "yaxis": {"title": {"text": "query token"}}}}
    assert unreadable(good) == []
    no_x = json.loads(json.dumps(good))
    no_x["layout"]["xaxis"]["title"]["text"] = " "
    assert unreadable(no_x) == ["'untitled figure' trace 0: no x axis title (xaxis)"]
    no_bar = json.loads(json.dumps(good))
    del no_bar["data"][0]["colorbar"]
    assert unreadable(no_bar) == ["'untitled figure' trace 0: a colour bar without a title"]
    no_bar["data"][0]["showscale"] = False
    assert unreadable(no_bar) == []
    second = {"data": [{"type": "heatmap", "xaxis": "x2", "yaxis": "y2", "showscale": False}],
              "layout": {"title": "grid", "xaxis2": {"title": "column"}, "yaxis": {"title": "r"}}}
    assert unreadable(second) == ["'grid' trace 0: no y axis title (yaxis2)"]
    shared = {"data": [{"type": "heatmap", "coloraxis": "coloraxis"}],
              "layout": {"xaxis": {"title": "a"}, "yaxis": {"title": "b"},
                         "coloraxis": {"colorbar": {"title": {"text": "value"}}}}}
    assert unreadable(shared) == []
    shared["layout"]["coloraxis"]["colorbar"] = {}
    assert unreadable(shared) == ["'untitled figure' trace 0: a colour bar without a title"]


def test_the_matrix_covers_every_family():
    """Every page, every fixture repo, the bundled models and a preset, as folders and as links."""
    models = {p.values[0] for p in RUNS}
    assert {CLF, PREFIX, CAUSAL, TI} <= models
    assert set(FIX.values()) <= models
    assert {f"hf:{r}" for r in LINKED} <= models
    assert {Path(f).name for f in FIX.values()} == {p.name for org in HUB.iterdir()
                                                    for p in org.iterdir()} - {"bert-not-vit"}
    assert PAGES == [s.slug for s in stages.STAGES]  # every page is a stage (app.py builds them)
