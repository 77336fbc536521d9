"""The overview's model map: what the page SHOWS (the plotly JSON AppTest receives) against the
shapes of the raw tensors of an independent vit_core.run_trace, for the bundled classifier, a
captioner, the random ViT-B/16 preset, a DeiT with CLS + DIST and a headless encoder; and what a
click on a box does (the selection event the browser sends, replayed in AppTest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.support import SMALL, TEXT, open_app, randomised
from ui import keys
from ui.stages.overview import OVERVIEW_MAP, OVERVIEW_WORDS
from vit_core import load_image, load_model, preprocess, run_trace
from vit_core.explain.stages import model_map

HUB = Path(__file__).parent / "fixtures" / "hub"
DEIT = str(HUB / "tiny-org" / "deit-distilled")
HEADLESS = str(HUB / "tiny-org" / "vit-headless")
NOCLS = str(HUB / "timm" / "vit_tiny_avg_nocls.test")
FCNORM = str(HUB / "timm" / "vit_tiny_avg_fcnorm.test")


def open_overview(model: str, **state) -> AppTest:
    return open_app("overview", model, state=state)  # fails if it ran another model


def chart(at: AppTest, key: str) -> dict:
    found = [json.loads(el.proto.spec) for el in at.get("plotly_chart")
             if el.proto.id.endswith("-" + key)]
    assert len(found) == 1, [el.proto.id for el in at.get("plotly_chart")]
    return found[0]


def shown(at: AppTest) -> tuple[dict[str, str], dict[str, str], dict]:
    """(edge name -> label text, box id -> box text, the figure) of the map on the page."""
    fig = chart(at, OVERVIEW_MAP)
    notes = fig["layout"]["annotations"]
    edges = {a["name"][5:]: a["text"] for a in notes if a.get("name", "").startswith("edge:")}
    boxes = {a["name"][4:]: a["text"] for a in notes if a.get("name", "").startswith("box:")}
    return edges, boxes, fig


def x(shape) -> str:
    return "×".join(str(int(n)) for n in shape)


def expected(at: AppTest, model_name: str, layer: int) -> dict[str, str]:
    """Every edge label, from an independent trace of the image the page used."""
    model = load_model(model_name)
    c = model.config
    pixels = preprocess(load_image(at.session_state[keys.INPUT].data), c)
    text = None
    if c.has_text:  # the text the caption's last word was written from, read off the page:
        words = chart(at, OVERVIEW_WORDS)["data"][0]  # one bar per word the model wrote
        written = [label.split(". ", 1)[1] for label in words["x"]]  # "1. a", "2. red", …
        vocab = list(c.vocab)
        ids = [vocab.index(w) for w in written]
        text = torch.tensor([[vocab.index("[SOS]")] + ids[:-1]])
    tr = run_trace(model, pixels, text_ids=text)
    T = 0 if text is None else text.shape[1]
    embed = tr["embed"]
    S, D = embed.shape
    b = f"blocks.{layer}."
    want = {"image": x((pixels.shape[2], pixels.shape[3], pixels.shape[1])),
            "patches": x(tr["patches"].shape), "embed": x(embed.shape), "mask": x(tr.mask.shape)}
    for name in ("ln1", "attn.q", "attn.pattern", "attn_out", "resid_mid", "ln2", "mlp.post",
                 "mlp_out"):
        want[b + name] = x(tr[b + name].shape)
    want[f"blocks.{c.depth - 1}.resid_post"] = x(tr[f"blocks.{c.depth - 1}.resid_post"].shape)
    if c.num_prefix_tokens:
        want["patch_embed"] = x(tr["patch_embed"].shape)
        want["tokens"] = x((S - T, D))  # the patches with CLS (and DIST) put in front
    else:
        want["patch_embed"] = x(tr["patch_embed"].shape)
    if c.has_text:
        want["text_ids"] = str(T)
        want["embed.text"] = x((T, D))
        want["embed.image"] = x((S - T, D))
    if "seg_logits" in tr:
        want["ln_final.patches"] = x((c.num_patches, D))
        want["seg_logits"] = x(tr["seg_logits"].shape)
    if c.fc_norm:
        want["pooled"] = str(D)
    else:
        want["ln_final"] = x(tr["ln_final"].shape)
    if c.num_classes or c.has_text:
        want["logits"] = x(tr.logits.shape)
        want["pooled"] = (x((T, D)) if c.has_text else x((2, D)) if c.dist_token
                          and c.global_pool != "avg" else str(D))
    return want


@pytest.mark.parametrize("model", ["shapes-classifier", "shapes-captioner-prefix",
                                   pytest.param("vit-b16", marks=pytest.mark.slow),
                                   DEIT, HEADLESS, NOCLS, FCNORM])
def test_every_edge_label_is_the_live_shape_of_its_tensor(model):
    at = open_overview(model)
    layer = at.session_state[keys.LAYER]
    edges, boxes, _ = shown(at)
    assert edges == expected(at, model, layer)
    assert all(text.strip() for text in boxes.values())  # every box labelled


@pytest.mark.slow  # a ViT-B/16 pass
def test_vit_b16_map_has_vit_b16_geometry():
    at = open_overview("vit-b16")
    edges, boxes, fig = shown(at)
    values = set(edges.values())
    assert {"224×224×3", "196×768", "197×768", "12×197×197", "197×3072", "1000"} <= values
    assert edges["blocks.11.attn.pattern"] == "12×197×197"  # the last block by default
    assert "12 heads" in boxes["qkv"]
    assert any("× 12" in a["text"] for a in fig["layout"]["annotations"])


def test_deit_map_prepends_cls_and_dist_and_reads_both():
    edges, boxes, _ = shown(open_overview(DEIT))
    assert "CLS and DIST" in boxes["prefix"]
    assert edges["patch_embed"] == "16×48" and edges["tokens"] == "18×48"  # 2 prefix tokens
    assert "DIST" in boxes["pool"] and edges["pooled"] == "2×48"


def test_headless_map_ends_at_the_final_tokens():
    edges, boxes, _ = shown(open_overview(HEADLESS))
    assert "logits" not in boxes and "head" not in boxes and "logits" not in edges
    assert "no head" in boxes["final_tokens"]
    assert not any("ogit" in text for text in boxes.values())


def test_captioner_map_has_the_text_stream_and_its_mask():
    at = open_overview("shapes-captioner-causal")
    edges, boxes, _ = shown(at)
    assert {"words", "text_embed", "join"} <= set(boxes)
    assert boxes["mask"].endswith("causal")
    T = int(edges["text_ids"])
    V = len(load_model("shapes-captioner-causal").config.vocab)
    assert T >= 1 and edges["logits"] == f"{T}×{V}"
    classifier, _, _ = shown(open_overview("shapes-classifier"))
    assert "text_ids" not in classifier


def test_the_chosen_layer_labels_the_block():
    at = open_overview("shapes-classifier", **{keys.LAYER: 2})
    edges, _, fig = shown(at)
    assert "blocks.2.attn.pattern" in edges and "blocks.5.attn.pattern" not in edges
    assert any("Block 2</b>" in a["text"] for a in fig["layout"]["annotations"])


# ---------------------------------------------------------------- clicks
def click(at: AppTest, box_id: str) -> AppTest:
    """What a click on a box sends: the selection event with the clicked marker's customdata,
    taken from the figure the page rendered."""
    fig = chart(at, OVERVIEW_MAP)
    for curve, trace in enumerate(fig["data"]):
        for i, data in enumerate(trace.get("customdata") or []):
            if data[2] == box_id or (box_id.startswith("layer") and data[2] == "layer"
                                     and f"layer{data[1]}" == box_id):
                point = {"customdata": data, "point_index": i, "curve_number": curve}
                break
        else:
            continue
        break
    else:
        raise AssertionError(f"no marker for {box_id}")
    element = next(e for e in at.get("plotly_chart") if e.proto.id.endswith(OVERVIEW_MAP))
    states = at._tree.get_widget_states()
    clicked = states.widgets.add()
    clicked.id = element.proto.id
    clicked.string_value = json.dumps({"selection": {
        "points": [point], "point_indices": [point["point_index"]], "box": [], "lasso": []}})
    at._run(states)
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("box_id, title", [
    ("pattern", "Attention"), ("patches", "Input"), ("mlp_up", "MLP"), ("logits", "Logits"),
    ("mask", "Mask"), ("pos", "embeddings"), ("seg_map", "segmentation")])
def test_clicking_a_box_opens_its_stage(box_id, title):
    at = open_overview("shapes-classifier", **{keys.LAYER: 3})
    at = click(at, box_id)
    assert at.title[0].value != "From pixels to logits, in one pass"
    assert title.lower() in at.title[0].value.lower(), at.title[0].value
    assert at.session_state[keys.LAYER] == 3


def test_boxes_name_the_cores_stages_and_the_app_maps_each_to_a_page():
    """The core's map knows nothing of pages: each box names its stage of the pass, every
    stage is used by some model, and the app routes every stage to one of its pages."""
    from ui.lesson.routes import MAP_PAGES
    from ui.stages import BY_SLUG as STAGES
    from vit_core.explain import stages

    used = set()
    for name in ("shapes-classifier", "shapes-captioner-prefix"):
        model = load_model(name)
        c = model.config
        text = torch.tensor([[list(c.vocab).index("[SOS]")]]) if c.has_text else None
        tr = run_trace(model, torch.zeros(1, 3, c.img_size, c.img_size), text_ids=text)
        mm = stages.model_map(tr, (c.img_size, c.img_size, 3), 0)
        used |= {b.stage for b in mm.boxes}
        assert not hasattr(mm.boxes[0], "page")
    assert used == set(stages.STAGES)
    assert set(MAP_PAGES) == set(stages.STAGES) and set(MAP_PAGES.values()) <= set(STAGES)
    assert MAP_PAGES["generation"] == "logits" and MAP_PAGES["embed"] == "embeddings"


def test_clicking_a_block_box_selects_the_block_shown_and_a_layer_cell_picks_it():
    at = open_overview("shapes-classifier")
    at = click(at, "layer1")  # a cell of the strip: stay here, show block 1
    assert at.title[0].value == "From pixels to logits, in one pass"
    assert at.session_state[keys.LAYER] == 1
    edges, _, _ = shown(at)
    assert "blocks.1.mlp.post" in edges
    at = click(at, "qkv")
    assert at.title[0].value.startswith("3 · LayerNorm"), at.title[0].value
    assert at.session_state[keys.LAYER] == 1


@pytest.mark.parametrize("model, mask", [("shapes-captioner-prefix", "prefix"),
                                         ("shapes-captioner-causal", "causal")])
def test_the_map_caption_says_which_text_pass_it_shows(model, mask):
    at = open_overview(model)
    words = [w.split(". ", 1)[1] for w in chart(at, OVERVIEW_WORDS)["data"][0]["x"]]
    net = load_model(model)
    said = next(c.value for c in at.caption if c.value.startswith("Each box"))
    last = "[EOS]" if words[-1] == "[EOS]" else f"“{words[-1]}”"
    k = len(words) - 1
    S = net.config.num_image_tokens + len(words)
    assert (f"wrote its last token, {last}: it read [SOS] and the {k} word" in said
            and f"under the {mask} mask" in said and f"text tokens = {S} there" in said), said
    assert "cells under it pick" in said
    one = open_overview(str(HUB / "tiny-org" / "vit-1block-1head-p14"))
    said = next(c.value for c in one.caption if c.value.startswith("Each box"))
    assert "only block" in said and "cells" not in said and "text stream" not in said


# ---------------------------------------------------------------- composed scenes
ALL_FOUR = "star_blue_sand_right_100_30_2_5"  # the bundled models get all of it right
HARD = "box_pink_grass_bottom_70_70_3_1"  # a small box: the captioner calls it a diamond
MISSED = "box_pink_grass_bottom_75_30_3_2"  # a small box the classifier calls a heart (43%)


def open_scene(code: str, model: str) -> AppTest:
    at = open_app("overview", model, params={"scene": code})
    assert at.session_state[keys.INPUT].label.startswith("composed")
    return at


def scene_note(at: AppTest) -> str:
    notes = [i.value for i in at.info if i.value.startswith("You placed")]
    assert len(notes) == 1, [i.value for i in at.info]
    return notes[0]


@pytest.mark.parametrize("code, placed", [
    (ALL_FOUR, "a blue star on the right on the sand"),
    (HARD, "a pink box at the bottom on the grass")])
def test_composed_scene_note_says_which_parts_the_caption_names(code, placed):
    at = open_scene(code, "shapes-captioner-prefix")
    words = [w.split(". ", 1)[1] for w in chart(at, OVERVIEW_WORDS)["data"][0]["x"]]
    said = [w for w in words if w != "[EOS]"]
    shape, colour, background, position = code.split("_")[:4]
    truth = {"shape": shape, "colour": colour, "background": background,
             "position": position}
    hits = {part: value in said for part, value in truth.items()}
    note = scene_note(at)
    assert note.startswith(f"You placed {placed}; the caption says “{' '.join(said)}”"), note
    if all(hits.values()):
        assert "names all four" in note and "misses" not in note
    else:
        for part, hit in hits.items():
            assert (f"the {part} (it says" in note or f"the {part} (it names none" in note) \
                != hit, (part, note)
    if code == HARD:  # the wording differs from the scene it gets right
        assert "misses the shape (it says diamond; you chose box)" in note, note


@pytest.mark.parametrize("code", [ALL_FOUR, MISSED])
def test_composed_scene_note_says_whether_the_top_class_is_the_shape(code):
    at = open_scene(code, "shapes-classifier")
    model = load_model("shapes-classifier")
    x = preprocess(load_image(at.session_state[keys.INPUT].data), model.config)
    p = run_trace(model, x).logits.double().softmax(-1)
    names = list(model.config.class_names)
    top, shape = int(p.argmax()), code.split("_")[0]
    note = scene_note(at)
    assert f"the top class is “{names[top]}” ({float(p[top]):.0%})" in note, note
    if names[top] == shape:
        assert note.endswith(": the shape you placed."), note
    else:
        k = names.index(shape)
        rank = int((p > p[k]).sum()) + 1
        assert (f"not the {shape} you placed: “{shape}” gets {float(p[k]):.0%}, rank {rank} "
                f"of 10.") in note, note
    assert (names[top] == shape) == (code == ALL_FOUR)  # the two wordings both appear


def test_no_scene_note_without_a_composed_scene():
    at = open_overview("shapes-classifier")
    assert not [i.value for i in at.info if i.value.startswith("You placed")]


def test_a_centre_scene_is_right_to_name_no_edge():
    from ui.selection.scene_notes import caption_note
    from vit_core.scenes.world import Composition

    centre = Composition("ball", "red", "grass", "centre", 110, 0, 0, 0)
    assert caption_note(centre, "a red ball on the grass [EOS]".split()).endswith(
        "names the shape, colour and background, and no edge: this world's captions leave the "
        "centre unsaid.")
    wrong = caption_note(centre, "a red box on the grass on the left [EOS]".split())
    assert "names the colour and background but misses the shape (it says box; you chose " \
           "ball); the position (it says “on the left”; you placed it in the centre)." in wrong


def test_a_composed_scene_is_not_called_a_photo():
    at = open_scene(ALL_FOUR, "shapes-captioner-prefix")
    sure = [c.value for c in at.caption if c.value.startswith("How sure")]
    assert sure and all("on this scene" in s and "photo" not in s for s in sure), sure


@pytest.mark.parametrize("family", ["cls", "dist", "avg", "fc_norm", "headless", "text", "seg"])
def test_the_maps_data_joins_every_box_into_one_pass(family):
    """vit_core.explain.stages.MAP is data: for every family its pieces give a map whose edges
    each join two of its boxes, whose every box but the image is reached by an edge and every
    box but the last reaches on, and whose block has the ten boxes the drawer lays out."""
    config = {"cls": SMALL, "dist": SMALL.replace(dist_token=True), "text": TEXT,
              "avg": SMALL.replace(class_token=False, global_pool="avg"),
              "fc_norm": SMALL.replace(class_token=False, global_pool="avg", fc_norm=True),
              "headless": SMALL.replace(num_classes=0),
              "seg": SMALL.replace(seg_classes=3, seg_upsample=2)}[family]
    x = torch.rand(1, config.in_chans, config.img_size, config.img_size)
    model = randomised(config)
    tr = run_trace(model, x, text_ids=[1, 2]) if config.has_text else run_trace(model, x)
    mm = model_map(tr, (config.img_size, config.img_size, config.in_chans), 1)
    ids = [b.id for b in mm.boxes]
    assert len(ids) == len(set(ids))
    assert all(e.src in ids and e.dst in ids for e in mm.edges)
    assert {e.dst for e in mm.edges} == set(ids) - {"image", "words", "mask"}
    ends = set(ids) - {e.src for e in mm.edges}
    assert ends == ({"final_tokens"} if family == "headless" else {"logits", "seg_map"}
                    if family == "seg" else {"logits"})
    assert [b.id for b in mm.boxes if b.in_block] == [
        "ln1", "qkv", "mask", "pattern", "attn_out", "add1", "ln2", "mlp_up", "mlp_down", "add2"]
