"""Every step's question says how a student answers it in a live class (issue 28): choose one, a
number, or a patch clicked on the grid, with the right value for this model and image.

The steps are built for five model families and a classifier under a causal mask, without a
browser (each stage's own `view`, fed the session's image, model and trace), and every reply is
checked three ways: it is well formed; its right value is what the answer on Reveal says; and
for questions across six stages, it is what this file computes by hand from the model and the
trace (float64, plain torch), never by the stage's own code.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from typing import Any

import pytest
import streamlit as st
import torch

from ui import keys, stages
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.replies import Choice, Number, PatchPick, PatchSet, Words
from ui.selection import inputs, session
from ui.serving import state
from ui.stages import BY_SLUG as STAGES

HUB = "tests/fixtures/hub"
FAMILIES = {  # one model per family whose steps differ (as tests/test_stage_declarations.py)
    "classifier": "shapes-classifier",
    "captioner": "shapes-captioner-causal",
    "no CLS, mean-pooled": f"{HUB}/timm/vit_tiny_avg_nocls.test",
    "headless": f"{HUB}/tiny-org/vit-headless",
    "distilled": f"{HUB}/tiny-org/deit-distilled",
}
CAUSAL = "classifier, causal mask"  # CLS sees no patch: the answers that say so
RUNS = {**{family: (name, None) for family, name in FAMILIES.items()},
        CAUSAL: (FAMILIES["classifier"], "causal")}  # (model, the sidebar's mask)
CLASSIFIERS = ("classifier", "no CLS, mean-pooled", "distilled")
OPEN: set[tuple[str, str]] = set()  # (stage, step) answered in words: none, every one is marked
PATCH = 5  # the selected patch (not 0, so that a patch and a token number cannot be confused)
LONGEST = 60  # characters in one option


@dataclass(frozen=True)
class Asked:
    slug: str
    step: str
    view: Any
    question: deck.Question


def build(run: str) -> list[Asked]:
    """Every question a run's model is asked, stage by stage, in step order: each stage's own
    view, fed the first sample scene, the run's mask, the middle block, head 0 and patch PATCH."""
    name, mask = RUNS[run]
    inp = inputs.make_input("sample", inputs.sample_bytes(inputs.sample_seeds()[0]))
    model = state.get_model(name)
    loaded = (inp, name, model, state.prepare(inp, name), state.trace(inp, name, mask=mask))
    ss = st.session_state
    for key in list(ss.keys()):
        del ss[key]
    if mask:
        ss[keys.MASK] = mask
    ss[keys.EXP_KIND] = "Grey out patches"  # the Experiments question: the grey set's run
    ss[keys.LAYER], ss[keys.HEAD] = (model.config.depth - 1) // 2, 0
    ss[keys.PATCH] = min(PATCH, model.config.num_patches - 1)
    found = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(session, "load_current", lambda text_free_note=False: loaded)
        for slug in STAGES:
            stage = stages.get(slug)
            view = stage.view()
            for step in stage.steps_for(model.config):
                q = step.question(view, step.facts(view))
                if q is not None:
                    found.append(Asked(slug, step.key, view, q))
    return found


@pytest.fixture(scope="module")
def asked() -> dict[str, list[Asked]]:
    bare = logging.getLogger("streamlit")  # "missing ScriptRunContext", once per call
    level, bare.level = bare.level, logging.ERROR
    try:
        out = {run: build(run) for run in RUNS}
    finally:
        bare.setLevel(level)
        for key in list(st.session_state.keys()):
            del st.session_state[key]
    return out


def one(asked, family: str, slug: str, step: str) -> Asked:
    found = [a for a in asked[family] if (a.slug, a.step) == (slug, step)]
    assert len(found) == 1, (family, slug, step, len(found))
    return found[0]


# ---------------------------------------------------------------- 1. well formed
def test_every_reply_is_well_formed(asked):
    for family, questions in asked.items():
        assert questions, family
        for a in questions:
            r, where = a.question.reply, (family, a.slug, a.step)
            if isinstance(r, Choice):
                assert len(r.options) == len(set(r.options)), where
                assert all(o.strip() and len(o) <= LONGEST for o in r.options), (where, r)
                assert 2 <= len(r.options) <= 4 or (r.right is None and r.options), (where, r)
                assert r.right is None or 0 <= r.right < len(r.options), (where, r)
            elif isinstance(r, Number):
                assert r.value is None or math.isfinite(r.value), (where, r)
                assert math.isfinite(r.tolerance) and r.tolerance >= 0, (where, r)
            elif isinstance(r, PatchSet):  # a guess: k patches, scored on Send, not marked
                N = a.view.c.num_patches
                assert 1 <= r.k <= N and r.scores is not None and r.summary is not None, where
                assert all(0 <= p < N for p in r.chosen), (where, r)
            elif isinstance(r, PatchPick):
                N = a.view.c.num_patches
                assert list(r.right) == sorted(set(r.right)), (where, r)
                assert all(0 <= p < N for p in r.right), (where, r)
            else:
                assert isinstance(r, Words) and (a.slug, a.step) in OPEN, (where, r)


# ---------------------------------------------------------------- 2. the right value, by hand
def test_patch_count_for_the_smaller_patch_size_by_hand(asked):
    for family in FAMILIES:
        a = one(asked, family, "patches", "matrix")
        c = a.view.c
        p2 = int(re.match(r"If P were (\d+) instead of", a.question.question).group(1))
        assert p2 < c.patch_size
        cells = torch.zeros(3, c.img_size, c.img_size).unfold(1, p2, p2).unfold(2, p2, p2)
        assert a.question.reply.value == cells.shape[1] * cells.shape[2], family


def test_share_of_hidden_units_on_by_hand(asked):
    """U = LN2(X') W_1 + b_1 in float64 from the block's weights; the share with U > 0."""
    for family in FAMILIES:
        a = one(asked, family, "mlp", "gelu")
        v, c = a.view, a.view.c
        block = v.model.blocks[v.layer]
        x = v.tr[f"blocks.{v.layer}.resid_mid"][v.patch + c.num_prefix_tokens].double()
        ln = (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + c.norm_eps)
        ln = ln * block.norm2.weight.double() + block.norm2.bias.double()
        u = block.mlp.fc1.weight.double() @ ln + block.mlp.fc1.bias.double()
        share = 100 * float((u > 0).double().mean())
        assert abs(a.question.reply.value - share) <= 200 / u.numel(), family  # 2 units' rounding


def test_mlp_or_attention_adds_more_by_hand(asked):
    """What each sublayer adds, as differences of the residual stream, in float64."""
    for family in FAMILIES:
        a = one(asked, family, "mlp", "stream")
        v = a.view
        i = v.patch + v.c.num_prefix_tokens
        attn = mlp = 0.0
        for b in range(v.c.depth):
            pre, mid, post = (v.tr[f"blocks.{b}.{n}"][i].double()
                              for n in ("resid_pre", "resid_mid", "resid_post"))
            attn += float((mid - pre).norm())
            mlp += float((post - mid).norm())
        r = a.question.reply
        assert r.options[r.right] == ("The MLP" if mlp > attn else "Attention"), family


def test_farthest_head_by_hand(asked):
    """Mean attention distance from every layer's pattern: each patch query's weights on the
    patches, renormalised, times the pixel distance between patch centres, averaged."""
    for family in FAMILIES:
        a = one(asked, family, "attention", "distance")
        c, tr = a.view.c, a.view.tr
        g, P, pre, N = c.grid, c.patch_size, c.num_prefix_tokens, c.num_patches
        centres = torch.tensor([[(k // g + 0.5) * P, (k % g + 0.5) * P] for k in range(N)],
                               dtype=torch.float64)
        apart = ((centres[:, None] - centres[None]) ** 2).sum(-1).sqrt()  # [N, N] px
        dist = []
        for layer in range(c.depth):
            w = tr[f"blocks.{layer}.attn.pattern"][:, pre:pre + N, pre:pre + N].double()
            w = w / w.sum(-1, keepdim=True)
            dist += (w * apart).sum(-1).mean(-1).tolist()
        far = max(range(len(dist)), key=dist.__getitem__)
        r = a.question.reply
        assert r.options[r.right] == f"layer {far // c.num_heads}, head {far % c.num_heads}", \
            family


def run_model(model, pixels) -> torch.Tensor:
    with torch.inference_mode():
        return model(pixels)[0].double().softmax(-1)


def cells(pixels, P: int) -> torch.Tensor:
    """[1, C, H, W] -> [N, C, P, P], row by row."""
    C, H = pixels.shape[1], pixels.shape[2]
    g = H // P
    return pixels[0].reshape(C, g, P, g, P).permute(1, 3, 0, 2, 4).reshape(g * g, C, P, P)


def image(patches, g: int) -> torch.Tensor:
    """[N, C, P, P] -> [1, C, H, W], the inverse of `cells`."""
    N, C, P, _ = patches.shape
    return patches.reshape(g, g, C, P, P).permute(2, 0, 3, 1, 4).reshape(1, C, g * P, g * P)


def test_greyed_top_class_by_hand(asked):
    """The model run here on the image with the 3 x 3 around the patch set to the normalisation
    mean (0 once normalised)."""
    for family in CLASSIFIERS:
        a = one(asked, family, "experiments", "compare")
        v, c = a.view, a.view.c
        g, P = c.grid, c.patch_size
        r0, c0 = divmod(v.patch, g)
        grey = cells(v.prep.pixels, P).clone()
        for k in range(c.num_patches):
            if abs(k // g - r0) <= 1 and abs(k % g - c0) <= 1:
                grey[k] = 0.0
        r = a.question.reply
        names = list(c.class_names) or [f"class {k}" for k in range(c.num_classes)]
        assert r.options[r.right] == names[int(run_model(v.model, image(grey, g)).argmax())]


def test_costliest_step_by_hand(asked):
    """Multiply-adds of one pass, step by step: S tokens (the caption pass's text included) of
    D numbers through L blocks."""
    for family in FAMILIES:
        a = one(asked, family, "shapes", "costs")
        c = a.view.c
        N, D, F, L = c.num_patches, c.embed_dim, c.mlp_hidden, c.depth
        S = N + c.num_prefix_tokens + a.view.tr.n_text
        macs = {"patch embedding": N * c.in_chans * c.patch_size ** 2 * D,
                "Q, K, V": L * S * D * 3 * D, "scores": L * S * S * D, "A V": L * S * S * D,
                "W_O": L * S * D * D, "MLP up": L * S * D * F, "MLP down": L * S * F * D}
        most = max(macs.values())
        r = a.question.reply
        assert r.options[r.right] in {k for k, m in macs.items() if m == most}, family


def test_largest_parameter_group_by_hand(asked):
    """The table's groups: a block's parts summed over the blocks, the rest by name."""
    group = {"attn": "blocks: attn", "mlp": "blocks: mlp", "norm1": "blocks: LayerNorms",
             "norm2": "blocks: LayerNorms"}
    for family in FAMILIES:
        a = one(asked, family, "shapes", "params")
        sizes: dict[str, int] = {}
        for name, p in a.view.model.named_parameters():
            part = name.split(".")
            g = group[part[2]] if part[0] == "blocks" else part[0]
            sizes[g] = sizes.get(g, 0) + p.numel()
        r = a.question.reply
        assert r.options[r.right] == max(sizes, key=sizes.get), family


def layer_norm(x, norm, eps: float) -> torch.Tensor:
    x = x.double()
    return ((x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True)
                                                        + eps)) * norm.weight.double() \
        + norm.bias.double()


def read_out(model, x) -> torch.Tensor:
    """Class logits of a residual stream x [S, D], as the model's head reads its final one."""
    c, m = model.config, model
    head = lambda h, t: h.weight.double() @ t + h.bias.double()  # noqa: E731
    if c.global_pool == "avg":
        pre = c.num_prefix_tokens
        if c.fc_norm:
            return head(m.head, layer_norm(x[pre:pre + c.num_patches].double().mean(0),
                                           m.fc_norm, c.norm_eps))
        return head(m.head, layer_norm(x, m.norm, c.norm_eps)[pre:pre + c.num_patches].mean(0))
    final = layer_norm(x, m.norm, c.norm_eps)
    if c.dist_token:
        return (head(m.head, final[0]) + head(m.head_dist, final[1])) / 2
    return head(m.head, final[0])


def test_the_block_the_answer_appears_at_by_hand(asked):
    """The logit lens: the residual stream after the embedding and after every block, read out
    as the head reads the last one (float64); the answer appears at the first read-out from
    which the final class stays on top (read-out r is the one after block r - 1)."""
    for family in CLASSIFIERS:
        a = one(asked, family, "logits", "lens")
        v = a.view
        streams = [v.tr["embed"]] + [v.tr[f"blocks.{b}.resid_post"] for b in range(v.c.depth)]
        tops = [int(read_out(v.model, x).argmax()) for x in streams]
        lead = min(r for r in range(len(tops)) if set(tops[r:]) == {tops[-1]})
        assert a.question.reply.value == lead - 1, (family, tops)


# ---------------------------------------------------------------- 3. the answer says it
def _by_right(**said):
    """The answer says the phrase of the right option (keyword `o<index>`)."""
    return lambda r, answer: said[f"o{r.right}"] in answer


NOT_MARKED = ("no head", "single head", "one head", "all spread almost evenly", "no CLS token",
              "single patch", "one class everywhere", "No patch is greyed out yet",
              "does not apply")
def _starts_with_right(r, answer: str) -> bool:
    """The answer opens with the right option's words (capitalised), then a colon."""
    said = r.options[r.right]
    return answer.startswith(said[:1].upper() + said[1:] + ":")


SAYS = {  # (stage, step) -> does the answer say the reply's right value?
    ("why", "maps"): lambda r, answer: answer.startswith(
        "On one:" if r.value == 1 else f"On {r.value:g}:"),
    ("why", "test"): _starts_with_right,
    ("why", "sanity"): _starts_with_right,
    ("why", "patching"): lambda r, answer: answer.startswith(f"Block {r.value:g}:"),
    ("why", "words"): _by_right(o0="Yes: ", o1="No: "),
    ("patches", "matrix"): lambda r, answer: f"= {r.value:,} patches" in answer,
    ("embeddings", "vector"): _by_right(o1="read the same way wherever"),
    ("embeddings", "sum"): _by_right(o1="could not tell the picture from its patches shuffled",
                                     o2="Nothing the output could show",
                                     o3="still reaches the model through the mask"),
    ("embeddings", "size"): lambda r, answer: f"= **{r.value:.2f}×**" in answer,
    ("qkv", "layernorm"): _by_right(o1="γ and β were learned", o3="only ε keeps"),
    ("qkv", "score"): _by_right(o1="points the same way as the query, and is long"),
    ("attention", "where"): lambda r, answer: answer.startswith(f"Patch {r.right[0]} ("),
    ("attention", "heads"): lambda r, answer: answer.startswith(f"Patch {r.right[0]} ("),
    ("attention", "entropy"): lambda r, answer: answer.startswith(
        f"The lowest entropy is {r.options[r.right]}'s"),
    ("attention", "distance"): lambda r, answer: f"farthest is {r.options[r.right]} (" in answer,
    ("masks", "three"): _by_right(o2="learn to copy it"),
    ("masks", "visible"): _by_right(o1="nothing to leak"),
    ("masks", "classifier"): lambda r, answer: "nothing about the image" in answer.lower(),
    ("masks", "windows"): lambda r, answer: answer.startswith(f"{r.value:g}: the "),
    ("mlp", "gelu"): lambda r, answer: f"U > 0: {pct(r.value / 100, 1)}." in answer,
    ("mlp", "stream"): lambda r, answer: f"so {r.options[r.right][0].lower()}"
                                         f"{r.options[r.right][1:]} adds more" in answer,
    ("logits", "answer"): _by_right(o1="Never the order"),
    ("logits", "caption"): _by_right(o1="Never the order"),
    ("logits", "vector"): lambda r, answer: False,  # a model without a head: nobody is marked
    ("logits", "lens"): lambda r, answer: any(s in answer for s in (
        ("already in the embeddings",) if r.value == -1 else
        (f"after block {r.value},", f"last block ({r.value})"))),
    ("shapes", "costs"): lambda r, answer: answer.startswith(r.options[r.right])
    or f" and {r.options[r.right]}, tied" in answer,
    ("shapes", "params"): lambda r, answer: answer.startswith(f"In “{r.options[r.right]}”,"),
    ("segmentation", "tokens"): _by_right(o1="Each patch token keeps its place"),
    ("segmentation", "edges"): _by_right(o0="mostly follow the grid", o1="the grid still shows",
                                         o2="The edges cut through patches"),
    ("experiments", "compare"): lambda r, answer: (
        f"{r.value:.3f} for" in answer if isinstance(r, Number) else
        " instead of " in answer if r.options[r.right] == "Another caption" else
        answer.startswith("The same caption") if r.options[r.right].startswith("The same") else
        answer.startswith((f"{r.options[r.right]} (", f"Still {r.options[r.right]}"))
        or (answer.startswith("Exactly what it answered before")
            and f"Still {r.options[r.right]}" in answer)),
    ("experiments", "unordered"): _by_right(o1="treat the patches as a set",
                                            o2="no patch ever reaches", o3="they need not"),
    ("training", "curves"): lambda r, answer: answer.startswith(f"At **{r.value:.2f}**"),
    ("training", "positions"): lambda r, answer: answer.startswith(f"Patch {r.right[0]} ("),
    ("training", "distance"): lambda r, answer: answer.startswith(f"**{r.value:.1f} px**"),
    ("training", "cls"): lambda r, answer: (
        answer.startswith(f"**{r.value:.2f}×**") if isinstance(r, Number) else
        answer.startswith(f"Patch {r.right[0]} (")),
    ("training", "prediction"): lambda r, answer: f"= {pct(r.value / 100)}**" in answer,
    ("mae", "hide"): lambda r, answer: answer.startswith(f"{r.value:g}: N_vis = "),
    ("mae", "shapes"): lambda r, answer: answer.startswith(f"{r.value:g}: the CLS token"),
    ("mae", "reconstruction"): _by_right(o1="Only where it is"),
    ("mae", "error"): lambda r, answer: answer.startswith(f"Patch {r.value:g} ("),
    ("mae", "loss"): _by_right(o0="copying them back"),
}


def test_attention_pairs_at_another_size_by_hand(asked):
    """The Embeddings stage's other size (the session's own here, so ~1.5x its own): the pairs
    one head scores there over here, (S' / S)^2, from the two models' token counts."""
    for family in FAMILIES:
        a = one(asked, family, "embeddings", "size")
        model = state.get_model(FAMILIES[family])
        other = state.get_model(state.size_pair(FAMILIES[family])[1])
        c, c2 = model.config, other.config
        S, S2 = c.num_prefix_tokens + (c.img_size // c.patch_size) ** 2, other.pos_embed.shape[1]
        assert c2.img_size != c.img_size
        assert a.question.reply.value == round((S2 / S) ** 2, 2), (family, a.question.reply)


def test_the_answer_says_the_right_value(asked):
    for family, questions in asked.items():
        for a in questions:
            r, where = a.question.reply, (family, a.slug, a.step)
            if isinstance(r, PatchSet):  # a guess is scored on its own image, never marked
                continue
            assert (a.slug, a.step) in SAYS, f"{where}: say how its answer gives the reply"
            if getattr(r, "right", getattr(r, "value", None)) is None:  # nobody is marked
                assert any(s in a.question.answer for s in NOT_MARKED), (where, r)
                continue
            assert SAYS[a.slug, a.step](r, a.question.answer), (where, r, a.question.answer)
