"""The experiments and shape-trace pages say only what is true for the model and image shown.

Every expected number here is computed in this file from the raw model (`run_trace`, a greedy
loop, torch's FLOP counter, `torch.randperm`), never with the helpers the pages use.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.support import open_app as _open
from tests.support import torch_flops
from ui import keys
from ui.stages.experiments.keys import EXP_ALTERED, EXP_COMPARE, EXP_WORDS
from vit_core import load_image, load_model, preprocess, run_trace

SOS, EOS = 1, 2  # the bundled captioners' vocabulary: [PAD], [SOS], [EOS], [UNK], words...
SHUFFLE, POSITIONS = "Shuffle the patches", "Remove position embeddings"


def open_page(page: str, model: str = "shapes-classifier", mask: str | None = None,
              kind: str | None = None, seed: int | None = None) -> AppTest:
    at = _open(page, model, mask)
    if kind:
        at.radio(key=keys.EXP_KIND).set_value(kind).run()
    if seed is not None:
        at.number_input(key=keys.EXP_SEED).set_value(seed).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[keys.MODEL] == model
    return at


def chart(at, key: str) -> dict:
    found = [e for e in at.get("plotly_chart") if e.key == key]
    assert found, f"no chart {key}"
    return json.loads(found[0].proto.spec)


def note(at) -> str:
    """The 'What to notice' under the results (a note of the Before and after step)."""
    return next(i.value for kind in ("caption", "info") for i in getattr(at, kind)
                if i.value.startswith("What to notice"))


def shown_text(at) -> str:
    return " ".join(m.value for kind in ("markdown", "caption", "info") for m in getattr(at, kind))


def pixels(at, model) -> torch.Tensor:
    return preprocess(load_image(at.session_state[keys.INPUT].data), model.config)


def probs(logits: torch.Tensor) -> torch.Tensor:
    return logits.double().softmax(-1).flatten()


def greedy(model, x, mask=None) -> list[int]:
    """The caption after [SOS], [EOS] included if written: argmax of the last position."""
    ids = [SOS]
    with torch.no_grad():
        for _ in range(model.config.max_text_len):
            nxt = int(model(x, torch.tensor([ids]), mask=mask)[0, -1].argmax())
            ids.append(nxt)
            if nxt == EOS:
                break
    return ids[1:]


def axis_title(spec: dict, axis: str) -> str:
    title = spec["layout"].get(axis, {}).get("title", {})
    return title.get("text", "") if isinstance(title, dict) else str(title)


# ---------------------------------------------------------------- 1. the shuffle's fixed points
@pytest.mark.parametrize("seed", [0, 1])
def test_the_shuffle_note_counts_the_patches_its_order_leaves_in_place(seed):
    at = open_page("experiments", kind=SHUFFLE, seed=seed)
    labels = [d for d in chart(at, EXP_ALTERED)["data"] if d.get("mode") == "text"][0]
    perm = [int(t) for t in labels["text"]]  # cell i shows patch perm[i], as drawn
    assert perm == torch.randperm(49, generator=torch.Generator().manual_seed(seed)).tolist()
    stay = [i for i in range(49) if perm[i] == i]
    assert stay == ([] if seed == 0 else [16, 26, 36])  # seed 1 leaves three patches in place
    said = shown_text(at)  # said with the shuffled picture (the first step's words)
    assert f"{49 - len(stay)} of the 49 patches move to another cell" in said
    if stay:
        assert "every patch keeps its pixels but moves" not in said
        assert "leaves patches 16, 26 and 36 in their own cell" in said
    else:
        assert "all 49 of the 49 patches move" in said and "own cell" not in said


# ---------------------------------------------------------------- 2. positions under causal
def test_removing_positions_under_causal_says_what_changed_cls_own_position():
    at = open_page("experiments", mask="causal", kind=POSITIONS)
    model = load_model("shapes-classifier")
    x = pixels(at, model)
    before = run_trace(model, x, mask="causal").logits
    after = run_trace(model, x, mask="causal", positions=False).logits
    diff = float((before.double() - after.double()).abs().max())
    assert diff > 1e-3  # the answer does move (ring 91.67 % -> 91.78 % for every picture)
    # why: CLS sees only itself, so of E_pos only its own row reaches the head
    only_cls = copy.deepcopy(model)
    with torch.no_grad():
        only_cls.pos_embed[:, 0] = 0
    torch.testing.assert_close(run_trace(only_cls, x, mask="causal").logits, after)
    moved_patches = copy.deepcopy(model)
    with torch.no_grad():
        moved_patches.pos_embed[:, 1:] = torch.randn_like(moved_patches.pos_embed[:, 1:])
    torch.testing.assert_close(run_trace(moved_patches, x, mask="causal").logits, before)
    said = note(at)
    p0, p1 = probs(before), probs(after)
    top = int(p0.argmax())  # the top class, whose probability before and after is printed
    assert f"{100 * p0[top]:.1f}%" in shown_text(at) and f"{100 * p1[top]:.1f}%" in shown_text(at)
    assert "cannot depend on where the patches are" not in said
    assert "CLS's own position embedding (row 0 of E_pos)" in said
    assert f"by up to {diff:.3g}" in said


def test_shuffling_under_causal_leaves_the_answer_exactly_where_it_was():
    at = open_page("experiments", mask="causal", kind=SHUFFLE)
    model = load_model("shapes-classifier")
    x = pixels(at, model)
    perm = torch.randperm(49, generator=torch.Generator().manual_seed(0))
    flat = x[0].unfold(1, 32, 32).unfold(2, 32, 32)  # [C, 7, 7, 32, 32]
    cells = flat.reshape(3, 49, 32, 32)[:, perm].reshape(3, 7, 7, 32, 32)
    shuffled = cells.permute(0, 1, 3, 2, 4).reshape(1, 3, 224, 224)
    diff = float((run_trace(model, x, mask="causal").logits.double()
                  - run_trace(model, shuffled, mask="causal").logits.double()).abs().max())
    assert f"the largest change of any logit is {diff:.3g}" in note(at)


# ---------------------------------------------------------------- 3. the words chart by mask
@pytest.mark.parametrize("mask", ["full", None])
def test_the_words_chart_says_what_each_position_saw_under_the_mask(mask):
    name = "shapes-captioner-causal"
    at = open_page("experiments", name, mask=mask, kind=POSITIONS)
    model = load_model(name)
    x = pixels(at, model)
    run_mask = mask or "causal"
    caption = greedy(model, x, mask=run_mask)
    assert caption[-1] == EOS
    fed, targets = [SOS] + caption[:-1], caption  # the words are fed; [EOS] is only scored
    spec = chart(at, EXP_WORDS)
    bars = {d["name"]: d for d in spec["data"]}
    with torch.no_grad():  # P(target t) read at position t, each seeing what the mask lets it
        p = model(x, torch.tensor([fed]), mask=run_mask)[0].double().softmax(-1)
    expect = [float(p[t, w]) for t, w in enumerate(targets)]
    assert bars["before"]["x"] == pytest.approx(expect, abs=1e-5)
    title = spec["layout"]["title"]["text"]
    if run_mask == "full":  # position t sees word t+1, the word it is scored on, and the rest
        assert "the words before it" not in title and "itself and those after it" in title
    else:
        assert "P(each word | image, the words before it)" in title
    # 5. the category axis is named
    assert axis_title(spec, "yaxis").startswith("word of the caption")
    pair = chart(at, EXP_COMPARE)
    assert axis_title(pair, "xaxis") and axis_title(pair, "xaxis2")


def test_the_class_chart_names_its_category_axis():
    at = open_page("experiments", kind=POSITIONS)
    spec = chart(at, EXP_COMPARE)
    assert axis_title(spec, "yaxis").startswith("class")
    assert axis_title(spec, "xaxis").startswith("probability")


# ---------------------------------------------------------------- 4. shapes page on a captioner
def parse_si(s: str) -> float:
    number, _, prefix = s.partition(" ")
    return float(number) * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[prefix]


def shape_table(at):
    """The shape trace's rows: its two tables (around the blocks, inside one block) together."""
    import pandas as pd

    return pd.concat([d.value for d in at.dataframe if "traced shape" in d.value.columns])


def cost_table(at):
    return next(d.value for d in at.dataframe if "MACs (all layers)" in d.value.columns)


def test_the_shapes_page_traces_a_captioner_with_the_text_it_reads():
    name = "shapes-captioner-causal"
    at = open_page("shapes", name)
    model = load_model(name)
    c = model.config
    x = pixels(at, model)
    caption = greedy(model, x)
    fed = [SOS] + caption[:-1]  # what it read when it wrote its last token
    T, n_img, D, V = len(fed), c.num_image_tokens, c.embed_dim, c.vocab_size
    assert T > 1
    words = " ".join(c.vocab[i] for i in fed)
    assert f"it read “{words}”" in shown_text(at)
    assert f"S = {n_img} image + {T} text tokens = {n_img + T}" in shown_text(at)
    table = shape_table(at).set_index("step")
    assert table.loc["text head", "traced shape"] == f"{T} × {V}"
    assert table.loc["LN1", "traced shape"] == f"{n_img + T} × {D}"
    assert table.loc["tokens", "traced shape"] == f"{n_img} × {D}"
    assert table.loc["text tokens", "traced shape"] == f"{n_img + T} × {D}"
    # each embedding row's words and parameters agree: image tokens vs text tokens
    assert "E_pos" in table.loc["tokens", "equation"]
    assert "P_txt" not in table.loc["tokens", "equation"]
    assert int(table.loc["tokens", "parameters"].replace(",", "")) == (
        model.cls_token.numel() + model.pos_embed.numel())
    assert "P_txt" in table.loc["text tokens", "equation"]
    assert int(table.loc["text tokens", "parameters"].replace(",", "")) == (
        model.text_embed.weight.numel() + model.text_pos_embed.numel())
    total = sum(int(p.replace(",", "")) * n for p, n in zip(
        shape_table(at)["parameters"], shape_table(at)["× layers"], strict=True))
    assert total == sum(p.numel() for p in model.parameters())
    # the costs are those of this pass: torch's counter with T text tokens
    flops = torch_flops(c, T)
    metrics = {m.label: m.value for m in at.metric}
    assert parse_si(metrics[f"{name} FLOPs (2 × MACs)"]) == pytest.approx(flops, rel=5e-3)
    assert parse_si(metrics[f"{name} multiply-adds (MACs)"]) == pytest.approx(flops / 2, rel=5e-3)
    cost = cost_table(at).set_index("step")
    assert parse_si(cost.loc["text head", "MACs (all layers)"]) == pytest.approx(T * D * V,
                                                                                 rel=5e-3)


def test_the_shapes_page_of_a_classifier_has_no_text_row():
    at = open_page("shapes")
    model = load_model("shapes-classifier")
    table = shape_table(at).set_index("step")
    assert "text tokens" not in table.index
    assert table.loc["tokens", "equation"] == "z_0 = [x_cls; X_p W_E] + E_pos"
    assert int(table.loc["tokens", "parameters"].replace(",", "")) == (
        model.cls_token.numel() + model.pos_embed.numel())


def test_the_shapes_question_in_presenter_mode_counts_the_captioners_text_pass():
    """'Ask the class' under the shape trace's cost table: its multiply-add total is the one of
    the pass the table shows, with the text the captioner read (not an image-only pass)."""
    from ui import stages

    name = "shapes-captioner-causal"
    model = load_model(name)
    step = [s.key for s in stages.get("shapes").steps_for(model.config)].index("costs") + 1
    at = _open("shapes", name, params={"presenter": "1", "step": str(step)})
    before = {i.value for i in at.info}
    for t in [t for t in at.toggle if str(t.key).startswith(keys.REVEAL_PREFIX)]:
        t.set_value(True)
    at.run()
    assert not at.exception and at.session_state[keys.MODEL] == name
    answer = next(i.value for i in at.info if i.value not in before)
    T = len(greedy(model, pixels(at, model)))  # [SOS] + every word before the last token
    total = parse_si(re.search(r"of the ([\d.]+(?: [kMGT])?) multiply-adds of one pass",
                               answer).group(1))
    assert total == pytest.approx(torch_flops(model.config, T) / 2, rel=5e-3)
    assert total != pytest.approx(torch_flops(model.config, 0) / 2, rel=5e-3)
