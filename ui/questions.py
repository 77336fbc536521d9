"""docs/teaching.md's "Questions to ask, stage by stage", with answers computed from this trace.

Pure functions (no streamlit): `for_stage(slug, model, trace, selection)` gives each stage's
questions for THIS model and image, and an answer worded from the live numbers where the answer
is a number. Where a question does not apply to the model (no CLS, no class head, no text, no
segmentation head), the answer says so in one sentence. Presenter mode shows them under a
stage's last step, each answer behind a "Reveal" toggle (ui/presenter.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vit_core.explain.attention import allowed_from_mask, mean_attention_distance
from vit_core.explain.flops import si, stage_rows
from vit_core.explain.lens import logit_lens
from vit_core.explain.readout import prefix_sees_no_patch
from vit_core.explain.segmentation import boundary_stats, class_map

from . import keys
from .numbers import percent


@dataclass(frozen=True)
class Question:
    question: str
    answer: str


@dataclass(frozen=True)
class Selection:
    """The shared choices the pages use: block, head, patch, and the MLP page's CLS toggle."""

    layer: int = 0
    head: int = 0
    patch: int = 0
    mlp_cls: bool = False

    @classmethod
    def of(cls, ss) -> Selection:
        """From the session state (any mapping)."""
        return cls(int(ss.get(keys.LAYER, 0)), int(ss.get(keys.HEAD, 0)),
                   int(ss.get(keys.PATCH, 0)), bool(ss.get(keys.MLP_CLS, False)))


def _labels(c) -> list[str]:
    g = c.grid
    return [*c.prefix_names, *(f"patch {i} ({i // g},{i % g})" for i in range(c.num_patches))]


def _pct(x: float, decimals: int | None = None) -> str:
    """A share in percent: one decimal under 10 % and just under 100 %, none between (unless
    `decimals` is given); never 0 % above 0 nor 100 % below 1."""
    d = decimals if decimals is not None else (1 if x < 0.1 or 0.995 <= x < 1 else 0)
    return percent(x, d)


def _reader(c) -> str:
    """What the output reads (said in answers about order and positions)."""
    if c.has_text:
        return "the text tokens, which read every image token,"
    if c.global_pool == "avg":
        return "the mean of the patch tokens, which the class head reads,"
    if c.num_classes:
        return ("the CLS and DIST tokens, which the class heads read," if c.dist_token else
                "the CLS token, which the class head reads,")
    return ("the CLS token" if c.class_token else "the mean of the patch tokens")


def _output(c) -> str:
    """What the model gives, as a plural noun phrase."""
    if c.has_text:
        return "the text logits"
    if c.num_classes:
        return "the class logits"
    return ("the final CLS vector and everything read from it" if c.class_token else
            "the final patch tokens' mean and everything read from it")


def _image_block_full(tr) -> bool:
    n_img = tr.config.num_image_tokens
    return bool(allowed_from_mask(tr.mask)[:n_img, :n_img].all())


def _reads_prefix(c) -> bool:
    """The output is read from CLS (and DIST) alone: a class head on CLS, or a headless model's
    CLS vector (as `_reader` and `_output` say)."""
    return c.class_token and not c.has_text and (c.global_pool != "avg" or not c.num_classes)


def _prefix_blind(tr) -> bool:
    """Under this trace's mask, no CLS or DIST token sees a patch."""
    return prefix_sees_no_patch(tr.config, tr.mask)


def _prefix_sight(tr) -> str:
    """What CLS (and DIST) see under this trace's mask, read from the mask: 'CLS sees only
    itself, and DIST only CLS and itself'."""
    names = tr.config.prefix_names
    allowed = allowed_from_mask(tr.mask)
    said = []
    for i, name in enumerate(names):
        seen = [("itself" if j == i else names[j]) for j in range(len(names)) if allowed[i, j]]
        said.append(f"{name}{' sees' if not said else ''} only {' and '.join(seen)}")
    return ", and ".join(said)


# ---------------------------------------------------------------- 1 · patches
def smaller_patch(c) -> int | None:
    """The other patch size the question asks about: half of P when it divides the image (16 ->
    8), else the largest size below P that does; None if there is none."""
    if c.patch_size % 2 == 0 and c.img_size % (c.patch_size // 2) == 0:
        return c.patch_size // 2
    return next((s for s in range(c.patch_size - 1, 1, -1) if c.img_size % s == 0), None)


def patches(model, tr, sel) -> list[Question]:
    c = model.config
    P, img, pre, n_text = c.patch_size, c.img_size, c.num_prefix_tokens, tr.n_text
    p2 = smaller_patch(c)
    if p2 is None:
        return [Question(f"If P were smaller than {P}, how many patches?",
                         f"No smaller patch size divides this model's {img}-pixel image, so "
                         f"the question does not apply to it.")]
    n, n2 = c.num_patches, (img // p2) ** 2
    s, s2 = n + pre + n_text, n2 + pre + n_text
    extra = " + ".join([*c.prefix_names, *([f"{n_text} text"] if n_text else [])])
    with_ = ("With " + (f"the {extra} token{'s' if pre + n_text > 1 else ''}" if extra else
                        "no CLS token"))
    if c.has_text and not n_text:  # the trace holds the image tokens only
        grows = (f"{with_}, the image tokens grow from {s:,} to {s2:,}, so the image part of "
                 f"each head's attention matrix grows from {s:,}² = {s * s:,} to "
                 f"{s2:,}² = {s2 * s2:,} entries: {s2 * s2 / (s * s):.1f}× bigger, in every "
                 f"head of every layer. While the caption is written its T text tokens come on "
                 f"top: the sequence is S = {s:,} + T tokens, or {s2:,} + T.")
    else:
        grows = (f"{with_}, the sequence grows from S = {s:,} to {s2:,} tokens, so each head's "
                 f"attention matrix grows from {s:,}² = {s * s:,} to {s2:,}² = {s2 * s2:,} "
                 f"entries: {s2 * s2 / (s * s):.1f}× bigger, in every head of every layer.")
    return [Question(
        f"If P were {p2} instead of {P}, how many patches? How much bigger is the attention "
        f"matrix?", f"({img}/{p2})² = {n2:,} patches instead of ({img}/{P})² = {n:,}. " + grows)]


# ---------------------------------------------------------------- 2 · embeddings
def embeddings(model, tr, sel) -> list[Question]:
    c = model.config
    P, N, D = c.patch_size, c.num_patches, c.embed_dim
    cpp = c.in_chans * P * P
    w = cpp * D + D
    if _image_block_full(tr):
        order = (f"Attention and the MLP treat the tokens as a set: without positions, "
                 f"shuffling the patches would only reorder the patch tokens, and "
                 f"{_reader(c)} would come out the same. The model could not tell the picture "
                 f"from its patches shuffled (try it on the Experiments page).")
    elif _reads_prefix(c) and _prefix_blind(tr):
        order = (f"Nothing the output could show: under the {tr.mask_kind} mask used here "
                 f"{_prefix_sight(tr)}, in every block, so no patch reaches {_output(c)}: "
                 f"they are the same for every image, and stay so without positions. The "
                 f"patch tokens themselves still get the order through the mask "
                 f"(token i sees exactly i + 1 keys); with a mask that lets every patch see "
                 f"every other, shuffled patches could not be told from the picture.")
    else:
        order = (f"Under the {tr.mask_kind} mask used here each token sees only the tokens "
                 f"before it (token i exactly i + 1 keys), so the order still reaches the model "
                 f"through the mask; with a mask that lets every patch see every other, "
                 f"shuffled patches could not be told from the picture.")
    return [
        Question("Why does every patch use the *same* W_E?",
                 f"So that an edge or a colour is read the same way wherever it is in the "
                 f"picture: one {cpp}×{D} matrix and its bias ({w:,} numbers) serve all {N} "
                 f"patches, exactly like a {P}×{P} convolution with stride {P}. A matrix per "
                 f"patch would need {N}× as many, {N * w:,} numbers, each trained only on its "
                 f"own spot."),
        Question("What would break if there were no position embeddings?", order),
    ]


# ---------------------------------------------------------------- 3 · LayerNorm and Q/K/V
def qkv(model, tr, sel) -> list[Question]:
    c = model.config
    labels = _labels(c)
    layer, head, pre = sel.layer, sel.head, c.num_prefix_tokens
    i = sel.patch + pre
    x = tr[f"blocks.{layer}.ln1"][i].double()
    mean, std = float(x.mean()), float(x.std(unbiased=False))
    norm = model.blocks[layer].norm1
    gamma, beta = norm.weight.detach().double(), norm.bias.detach().double()
    plain = bool((gamma == 1).all() and (beta == 0).all())
    ln = (f"LayerNorm first makes the token's mean 0 and its standard deviation 1, then "
          f"multiplies by the learned γ and adds the learned β. For {labels[i]} (token {i}) at "
          f"block {layer} the result has mean {mean:.3f} and std {std:.3f}"
          + (": this layer's γ is all ones and β all zeros (as initialised), so only ε keeps "
             "them from being exactly 0 and 1." if plain else
             f": γ averages {float(gamma.mean()):.2f} and β {float(beta.mean()):+.2f} here, "
             f"so the output sits where this layer wants it."))
    q = tr[f"blocks.{layer}.attn.q"][head, i].double()
    k = tr[f"blocks.{layer}.attn.k"][head].double()
    scores = tr[f"blocks.{layer}.attn.scores"][head, i].double()
    ok = torch.isfinite(scores)
    idx = torch.nonzero(ok).flatten()
    best = int(idx[scores[idx].argmax()])
    worst = int(idx[scores[idx].argmin()])
    cos = float(q @ k[best] / (q.norm() * k[best].norm()).clamp_min(1e-12))
    words = _labels(c) + [f"text {t}" for t in range(tr.n_text)]
    score = (f"A key that points the same way as the query, and is long: the score is "
             f"q·k/√{c.head_dim}. For {labels[i]} in block {layer}, head {head}, the highest "
             f"score is with {words[best]} ({float(scores[best]):.2f}; the cosine between q and "
             f"k is {cos:.2f}), the lowest with {words[worst]} ({float(scores[worst]):.2f}), "
             f"among the {len(idx)} keys it may see.")
    return [Question("After LayerNorm, why are the mean and std not exactly 0 and 1?", ln),
            Question("What makes a query and a key score high?", score)]


# ---------------------------------------------------------------- 4 · attention
def attention(model, tr, sel) -> list[Question]:
    c = model.config
    L, H, g, P, pre = c.depth, c.num_heads, c.grid, c.patch_size, c.num_prefix_tokens
    words = _labels(c) + [f"text {t}" for t in range(tr.n_text)]
    last = tr[f"blocks.{L - 1}.attn.pattern"].double()  # [H, S, S]
    if pre:
        rows, who = last[:, 0], "CLS"
        q1 = "In the last layer, where does CLS look?"
    else:
        rows, who = last[:, pre:pre + g * g].mean(1), "the average patch"
        q1 = "In the last layer, where does the average patch look? (this model has no CLS)"
    mean = rows.mean(0)
    seen = torch.nonzero(mean > 0).flatten()  # the mask may hide keys: name only those weighed
    top = torch.topk(mean[seen], min(3, seen.numel()))
    on_patches = 1 - float(mean[:pre].sum() + mean[pre + g * g:].sum())  # 1 with no prefix
    a1 = (f"In block {L - 1}, " + (f"averaged over its {H} heads" if H > 1 else "in its only head")
          + f", {who} puts "
          + ", ".join(f"{_pct(float(v))} on {words[int(seen[j])]}" for v, j in
                      zip(top.values, top.indices, strict=True))
          + (f"; {_pct(on_patches)} on the {g * g} patches altogether." if on_patches > 0 else
             f"; under the {tr.mask_kind} mask it may see none of the {g * g} patches."))
    if H == 1:
        a2 = "This model has a single head, so there is nothing to compare."
    else:
        fav = [int(r.argmax()) for r in rows]
        common = max(set(fav), key=fav.count)
        a2 = (f"Each head's favourite key for {who} in block {L - 1}: "
              + "; ".join(f"head {h} → {words[j]} ({_pct(float(rows[h, j]))})"
                          for h, j in enumerate(fav))
              + ((". Both agree." if H == 2 else f". All {H} agree.")
                 if fav.count(common) == H else
                 f". {fav.count(common)} of {H} share the favourite {words[common]}."
                 if fav.count(common) > 1 else ". No two heads agree."))
    if g * g < 2:
        a3 = "The image is a single patch, so every distance is 0: no head looks far or near."
    else:
        dist = torch.stack([mean_attention_distance(tr[f"blocks.{layer}.attn.pattern"], g, P, pre)
                            for layer in range(L)])  # [L, H] px
        far, near = int(dist.argmax()), int(dist.argmin())
        if L * H == 1:
            a3 = (f"This model has one head in one block: its patch queries look "
                  f"{float(dist.flatten()[0]):.0f} px away on average, on a {c.img_size}-pixel "
                  f"image, so there is no other head to compare.")
        else:
            a3 = (f"Mean attention distance of the patch queries, over all {L * H} heads: the "
                  f"farthest is layer {far // H}, head {far % H} "
                  f"({float(dist.flatten()[far]):.0f} px), the nearest layer {near // H}, head "
                  f"{near % H} ({float(dist.flatten()[near]):.0f} px), on a {c.img_size}-pixel "
                  f"image.")
    return [Question(q1, a1), Question("Do all heads agree?", a2),
            Question("Which heads look far, which near?", a3)]


# ---------------------------------------------------------------- 5 · masks
def masks(model, tr, sel) -> list[Question]:
    c = model.config
    n_img = c.num_image_tokens
    if c.has_text:
        mine = (f" This model reads up to {c.max_text_len} text tokens after its {n_img} image "
                f"tokens and was trained with the {c.default_mask} mask.")
    else:
        mine = " (This model reads no text; the captioners do.)"
    if _image_block_full(tr):
        here = f"Here, under the {tr.mask_kind} mask, all {n_img} image tokens see each other."
    else:
        here = (f"Here, under the {tr.mask_kind} mask, they do not: image token i sees only "
                f"tokens 0 … i.")
    if c.num_prefix_tokens:
        names = " and ".join(c.prefix_names)
        cls = ("Nothing about the image. CLS is token 0, so under a causal mask it sees only "
               "itself in every block" + (", and DIST (token 1) only CLS and itself" if
                                           c.dist_token else "")
               + (f": the final {names} vectors are the same for every picture" if c.dist_token
                  else ": CLS's final vector is the same for every picture")
               + (" and so is the prediction." if c.num_classes and c.global_pool != "avg"
                  else "."))
    else:
        cls = (f"This model has no CLS token. Under a causal mask its first patch sees only "
               f"itself and its last patch all {n_img} image tokens.")
    return [
        Question("Why must text not see later words during training?",
                 "In training the whole caption goes in at once, and each position is asked "
                 "for the next word. If it could see that word it would learn to copy it, and "
                 "when writing a new caption, where the next word does not exist yet, it would "
                 "have learned nothing." + mine),
        Question("Why may the image patches see each other both ways?",
                 "The image is given whole and nothing is predicted from it patch by patch, so "
                 "there is nothing to leak: every patch may use every other. " + here),
        Question("What does CLS know under a causal mask?", cls),
    ]


# ---------------------------------------------------------------- 6 · MLP
def mlp(model, tr, sel) -> list[Question]:
    c = model.config
    L, F_, pre = c.depth, c.mlp_hidden, c.num_prefix_tokens
    i = 0 if sel.mlp_cls and c.class_token else sel.patch + pre
    name = _labels(c)[i]
    share = [float((tr[f"blocks.{layer}.mlp.pre"][i] > 0).double().mean()) for layer in range(L)]
    on = int((tr[f"blocks.{sel.layer}.mlp.pre"][i] > 0).sum())
    lo, hi = min(range(L), key=share.__getitem__), max(range(L), key=share.__getitem__)
    a1 = (f"In block {sel.layer}, {on} of {name}'s {F_} hidden units have U > 0: "
          f"{on / F_:.1%}." + (f" Over its {L} blocks the share goes from {share[lo]:.1%} "
                               f"(block {lo}) to {share[hi]:.1%} (block {hi})." if L > 1 else ""))
    attn = [float(tr[f"blocks.{layer}.attn_out"][i].double().norm()) for layer in range(L)]
    mlp_ = [float(tr[f"blocks.{layer}.mlp_out"][i].double().norm()) for layer in range(L)]
    more = sum(m > a for a, m in zip(attn, mlp_, strict=True))
    a2 = (f"For {name}, summed over the {L} block{'s' if L > 1 else ''}: attention adds "
          f"vectors of norm {sum(attn):.1f}, the MLP {sum(mlp_):.1f}, so "
          + ("the MLP adds more" if sum(mlp_) > sum(attn) else "attention adds more")
          + f"; the MLP's addition is the larger in {more} of {L} blocks.")
    return [Question("What fraction of hidden units fire for this token?", a1),
            Question("Does the MLP or attention add more to the residual stream?", a2)]


# ---------------------------------------------------------------- 7 · logits
def logits(model, tr, sel, gen=None) -> list[Question]:
    """`gen`: a captioner's greedy generation (its first step's distribution at T = 1)."""
    c = model.config
    q1 = "What does temperature change, and what does it never change?"
    q2 = "At which block does the answer appear?"
    if not c.num_classes and not c.has_text:
        return [Question(q1, "This model has no head, so there are no logits to divide by a "
                             "temperature: its output is the final token vectors.")]
    if c.has_text:
        if not gen or not gen.probs:
            return [Question(q1, "Temperature reshapes each next-word distribution before a "
                                 "word is picked; this model wrote no word for this image.")]
        z = gen.probs[0].double().clamp_min(1e-30).log()  # log P = logits - a constant
        names = list(c.vocab)
        what = "the first word (greedy)"
    else:
        z = tr.logits.double()
        names = list(c.class_names) or [f"class {k}" for k in range(c.num_classes)]
        what = "the top class"
    best = int(z.argmax())
    p = {t: float((z / t).softmax(-1)[best]) for t in (0.5, 1.0, 2.0)}
    a1 = (f"How sure the probabilities look: {what}, {names[best]}, gets {_pct(p[0.5], 1)} at "
          f"T = 0.5, {_pct(p[1.0], 1)} at T = 1 and {_pct(p[2.0], 1)} at T = 2. Never the order: "
          f"dividing every logit by the same T > 0 keeps every inequality, so {names[best]} "
          f"stays on top.")
    if c.has_text:
        return [Question(q1, a1), Question(q2, "This question is for classifiers: this model "
                                               "writes words, and the logit lens here reads "
                                               "class heads.")]
    lens = logit_lens(model, tr).argmax(-1).tolist()  # [L + 1]: embed, block 0 … L-1
    r = len(lens) - 1
    while r > 0 and lens[r - 1] == best:
        r -= 1
    where = ("already in the embeddings, before any block" if r == 0 else
             f"after block {r - 1}" if r < len(lens) - 1 else
             f"only after the last block ({c.depth - 1})")
    a2 = (f"Read through the logit lens, {names[best]} is on top {where}, and stays there to the "
          f"end ({len(lens) - r} of {len(lens)} read-outs, counting the embeddings).")
    return [Question(q1, a1), Question(q2, a2)]


# ---------------------------------------------------------------- 8 · shape trace
def shapes(model, tr, sel) -> list[Question]:
    c = model.config
    rows = stage_rows(c, tr.n_text)
    first = next(k for k, r in enumerate(rows) if r["step"] == "LN1")
    end = next(k for k, r in enumerate(rows) if r["step"] == "final LN")
    macs = [(r["step"], r["flops"] // 2 * r["times"], first <= k < end)  # in every block?
            for k, r in enumerate(rows)]
    total = sum(m for _, m, _ in macs)
    most = max(m for _, m, _ in macs)
    tops = [(step, block) for step, m, block in macs if m == most]  # a tie names them all
    both = len(tops) > 1
    names = (", ".join(s for s, _ in tops[:-1]) + " and " if both else "") + tops[-1][0] + (
        ", tied" if both else "")
    how = ("" if len({b for _, b in tops}) > 1 else
           (f", counted over {'their' if both else 'its'} {c.depth} layers" if c.depth > 1 else
            ", in the model's only layer") if tops[0][1] else ", once per pass")
    a1 = (f"{names}: {si(most)} {'each ' if both else ''}of the {si(total)} multiply-adds of "
          f"one pass ({most / total:.0%}{' each' if both else ''}){how}.")
    groups: dict[str, int] = {}
    for pname, prm in model.named_parameters():
        part = pname.split(".")
        key = {"attn": "the attention layers (W_Q, W_K, W_V, W_O)", "mlp": "the MLPs"}.get(
            part[2], "the LayerNorms") if part[0] == "blocks" else {
            "patch_embed": "the patch embedding W_E", "pos_embed": "the position embeddings"}.get(
            part[0], "everything else (CLS, heads, final LayerNorm, text embeddings)")
        groups[key] = groups.get(key, 0) + prm.numel()
    n = sum(groups.values())
    order = sorted(groups, key=lambda k: -groups[k])
    a2 = (f"In {order[0]}: {groups[order[0]]:,} of {n:,} parameters ({groups[order[0]] / n:.0%})"
          + (f"; then {order[1]} ({groups[order[1]] / n:.0%})." if len(order) > 1 else "."))
    return [Question("Which step costs the most?", a1),
            Question("Where do most of the parameters live?", a2)]


# ---------------------------------------------------------------- 9 · segmentation
def segmentation(model, tr, sel) -> list[Question]:
    c = model.config
    g, P, N, pre = c.grid, c.patch_size, c.num_patches, c.num_prefix_tokens
    a1 = (f"Each patch token keeps its place: patch i is token {pre} + i"
          + (" (CLS comes first)" if pre == 1 else " (CLS and DIST come first)" if pre else "")
          + f", at row i // {g} and column i % {g}. Put the {N} final patch tokens back on the "
          f"{g}×{g} grid, score each for every class, and each cell labels its {P}×{P} pixels"
          + (f"; this model's head scores {c.seg_upsample}×{c.seg_upsample} cells per patch and "
             f"upsamples the scores to pixels." if "seg_logits" in tr else
             "; this model has no segmentation head, so here its tokens are only coloured."))
    q2 = "Do the class edges follow the patch grid, or cut through patches, and why?"
    if "seg_logits" not in tr:
        return [Question("How can a classifier's tokens label pixels?", a1),
                Question(q2, "This model has no segmentation head, so it draws no class "
                             "edges.")]
    st = boundary_stats(class_map(tr["seg_logits"], g, c.img_size), P)  # the page's counts
    on, total = st["on_boundary"], st["changes"]
    if not total:
        a2 = "On this image the map is one class everywhere: there are no edges."
    elif not st["boundary_pairs"]:
        a2 = (f"The image is a single patch, so no pixel pair straddles a patch border: all "
              f"{total:,} class edges lie inside it.")
    else:
        share, chance = on / total, st["boundary_pairs"] / st["pairs"]
        ratio = share / chance
        a2 = (f"{on:,} of the {total:,} neighbouring pixel pairs with different classes straddle "
              f"a patch border ({_pct(share)}). Of all {st['pairs']:,} neighbouring pairs, "
              f"{st['boundary_pairs']:,} do ({_pct(chance)}, about 1 in {round(1 / chance)}): "
              f"what edges placed at random would give. "
              + (f"The edges mostly follow the grid, {ratio:.0f}× as often on a border as at "
                 f"random" if share >= 0.5 else
                 f"Most edges cut through patches, yet they sit on patch borders {ratio:.0f}× "
                 f"as often as edges placed at random would: the grid still shows"
                 if ratio >= 2 else
                 f"The edges cut through patches as if the grid were not there: they sit on "
                 f"patch borders no more often than edges placed at random would "
                 f"({ratio:.1f}×)" if ratio <= 1 else
                 f"The edges cut through patches, sitting on patch borders only {ratio:.1f}× "
                 f"as often as edges placed at random would")
              + f". The head gives {c.seg_upsample}×{c.seg_upsample} cells per patch, and the "
              f"scores are upsampled bilinearly, so an edge can fall inside a patch.")
    return [Question("How can a classifier's tokens label pixels?", a1), Question(q2, a2)]


# ---------------------------------------------------------------- 10 · experiments
def experiments(model, tr, sel) -> list[Question]:
    c = model.config
    q = ("Why do 'Shuffle the patches and remove positions' and 'Remove position embeddings' "
         "give the same " + ("logits?" if c.num_classes or c.has_text else "output?"))
    if _image_block_full(tr):
        a = (f"Without positions a patch token is only its pixels' embedding, and under the "
             f"{tr.mask_kind} mask every image token sees every other: attention and the MLP "
             f"treat the patches as a set. Shuffling only reorders the patch tokens, so "
             f"{_output(c)} come out the same for any order (up to float rounding).")
    elif _reads_prefix(c) and _prefix_blind(tr):
        names = " and ".join(c.prefix_names)
        a = (f"Under the {tr.mask_kind} mask used here {_prefix_sight(tr)}, in every block, so "
             f"no patch ever reaches {names}, and {_output(c)} depend on {names} alone: both "
             f"experiments give exactly the same "
             + ("logits" if c.num_classes else
                f"final {names} vector{'s' if c.dist_token else ''}")
             + " for any order of the patches and any image. The patch tokens themselves do "
             "differ: patch i sees only the tokens before it, so their order matters even "
             "without positions.")
    else:
        a = (f"Under the {tr.mask_kind} mask used here they need not: patch i sees only the "
             f"tokens before it, so the order matters even without positions"
             + (f"; {_prefix_sight(tr)}, so "
                + ("it comes" if c.num_prefix_tokens == 1 else "they come")
                + " out the same in both." if _prefix_blind(tr) else "."))
    return [Question(q, a)]


STAGES = {"patches": patches, "embeddings": embeddings, "qkv": qkv, "attention": attention,
          "masks": masks, "mlp": mlp, "logits": logits, "shapes": shapes,
          "segmentation": segmentation, "experiments": experiments}


def for_stage(slug: str, model, tr, sel: Selection, gen=None) -> list[Question]:
    """The questions of stage `slug` with their answers for this model and trace ([] for the
    overview, which has none). `gen`: a captioner's greedy caption (vit_core.generate), which
    the logits stage's answer reads."""
    fn = STAGES.get(slug)
    if fn is None:
        return []
    c = model.config
    sel = Selection(min(sel.layer, c.depth - 1), min(sel.head, c.num_heads - 1),
                    min(sel.patch, c.num_patches - 1), sel.mlp_cls)
    return fn(model, tr, sel, gen) if fn is logits else fn(model, tr, sel)

