"""The model map: every stage of one forward pass as boxes, and the live shape on every edge.

`model_map(trace, image_shape, layer)` lists what the overview draws: the image stream (and the
text stream of a captioner), one representative block (block `layer`, drawn in full; the model
repeats it L times) and the readout this model really has (final LayerNorm or fc_norm after
average pooling; CLS, CLS + DIST or the mean of the patch tokens; a class head, the tied text
head, a segmentation head, or none). Every edge names the trace tensor it carries (docs/library.md,
"Trace names") and its shape is read from that tensor; the few edges that carry no trace tensor
(the image, the tokens before positions are added, the pooled vector) say how they were derived.
Pure torch, no streamlit: the layout is the UI's (ui/figures.model_map).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# Rows of the map, top to bottom: the text stream (captioners), the image stream, the block's
# attention half, its MLP half, and the readout.
ROWS = ("text", "input", "attn", "mlp", "out")
# The stages of the pass a box belongs to, in pipeline order, named as the core names them (the
# app maps each to the page that explains it):
#   patches      the image cut into patches (vit_core.patches)
#   embed        patch embedding, CLS/DIST, positions, the text tokens: trace `embed`
#   qkv          LayerNorm 1 and the queries, keys and values: `blocks.l.ln1`, `attn.q/k/v`
#   attention    the pattern and its weighted sum of values: `attn.pattern`, `attn_out`
#   mask         the additive attention mask (vit_core.masks)
#   mlp          the residual add, LayerNorm 2 and the MLP: `resid_mid`, `ln2`, `mlp.*`
#   generation   the words a captioner has written so far, read back in (explain.generation)
#   readout      final LayerNorm, pooling and head: `ln_final`, `logits` (explain.readout)
#   segmentation the segmentation head: `seg_logits` (explain.segmentation)
STAGES = ("patches", "embed", "qkv", "attention", "mask", "mlp", "generation", "readout",
          "segmentation")


@dataclass(frozen=True)
class Box:
    id: str
    label: str  # lines separated by "\n"
    row: str  # one of ROWS
    stage: str  # one of STAGES: the stage of the pass this box belongs to
    in_block: bool = False  # part of the repeated block: a click also selects the layer


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    name: str  # the trace name carried, or a derived name (image, tokens, pooled, ...)
    shape: tuple[int, ...]

    @property
    def label(self) -> str:
        return "×".join(str(n) for n in self.shape)


@dataclass(frozen=True)
class ModelMap:
    boxes: tuple[Box, ...]
    edges: tuple[Edge, ...]
    depth: int
    layer: int
    mask_kind: str

    def box(self, box_id: str) -> Box:
        return next(b for b in self.boxes if b.id == box_id)


def _shape(t) -> tuple[int, ...]:
    """A tensor's shape, or a shape (Trace.shape: without recomputing the tensor)."""
    return tuple(int(n) for n in (t.shape if isinstance(t, torch.Tensor) else t))


def model_map(tr, image_shape: tuple[int, int, int], layer: int) -> ModelMap:
    """Boxes and edges of this trace's forward pass, with block `layer` drawn in full.

    Args:
        tr: a Trace (vit_core.run_trace).
        image_shape: the model's input image as (height, width, channels).
        layer: which block's tensors label the block's edges (all blocks have the same shapes).
    """
    c = tr.config
    layer = min(max(int(layer), 0), c.depth - 1)
    T, n_img, D, N = tr.n_text, tr.n_image, c.embed_dim, c.num_patches
    boxes: list[Box] = []
    edges: list[Edge] = []

    def box(id_, label, row, stage, in_block=False):
        boxes.append(Box(id_, label, row, stage, in_block))

    def edge(src, dst, name, shape):
        edges.append(Edge(src, dst, name, tuple(int(n) for n in shape)))

    embed = tr["embed"]
    # ---- the image stream
    box("image", "Image", "input", "patches")
    box("patches", f"Cut into\n{c.patch_size}×{c.patch_size} patches", "input", "patches")
    box("patch_embed", "Linear patch\nembedding W_E", "input", "embed")
    edge("image", "patches", "image", image_shape)
    edge("patches", "patch_embed", "patches", _shape(tr.shape("patches")))
    last = "patch_embed"
    if c.prefix_names:
        box("prefix", "Prepend\n" + " and ".join(c.prefix_names), "input", "embed")
        edge(last, "prefix", "patch_embed", _shape(tr.shape("patch_embed")))
        last, carried, shape = "prefix", "tokens", (n_img, D)
    else:
        carried, shape = "patch_embed", _shape(tr.shape("patch_embed"))
    box("pos", "+ position\nembeddings", "input", "embed")
    edge(last, "pos", carried, shape)
    if c.has_text:  # the text stream joins the image tokens
        box("words", "Words: [SOS]\n+ caption so far", "text", "generation")
        box("text_embed", "Word embeddings\n+ text positions", "text", "embed")
        box("join", "Image tokens,\nthen text tokens", "input", "embed")
        edge("words", "text_embed", "text_ids", (T,))
        edge("text_embed", "join", "embed.text", _shape(embed[n_img:]))
        edge("pos", "join", "embed.image", _shape(embed[:n_img]))
        last = "join"
    else:
        last = "pos"
    # ---- one block, drawn in full
    b = f"blocks.{layer}."
    box("ln1", "LayerNorm 1", "attn", "qkv", True)
    box("qkv", f"Q, K, V\n({c.num_heads} head{'s' if c.num_heads > 1 else ''})", "attn",
        "qkv", True)
    box("mask", f"Mask: {tr.mask_kind}", "mlp", "mask", True)
    box("pattern", "Attention pattern\nsoftmax(QKᵀ/√dₖ+M)", "attn", "attention", True)
    box("attn_out", "Pattern · V,\nconcat, W_O", "attn", "attention", True)
    box("add1", "+ X\n(residual)", "attn", "mlp", True)
    box("ln2", "LayerNorm 2", "attn", "mlp", True)
    box("mlp_up", "MLP: W₁,\nthen GELU", "mlp", "mlp", True)
    box("mlp_down", "MLP: W₂", "mlp", "mlp", True)
    box("add2", "+ X′\n(residual)", "mlp", "mlp", True)
    edge(last, "ln1", "embed", _shape(embed))
    edge("ln1", "qkv", b + "ln1", _shape(tr.shape(b + "ln1")))
    edge("qkv", "pattern", b + "attn.q", _shape(tr.shape(b + "attn.q")))
    edge("mask", "pattern", "mask", _shape(tr.mask))
    edge("pattern", "attn_out", b + "attn.pattern", _shape(tr.shape(b + "attn.pattern")))
    edge("attn_out", "add1", b + "attn_out", _shape(tr.shape(b + "attn_out")))
    edge("add1", "ln2", b + "resid_mid", _shape(tr.shape(b + "resid_mid")))
    edge("ln2", "mlp_up", b + "ln2", _shape(tr.shape(b + "ln2")))
    edge("mlp_up", "mlp_down", b + "mlp.post", _shape(tr.shape(b + "mlp.post")))
    edge("mlp_down", "add2", b + "mlp_out", _shape(tr.shape(b + "mlp_out")))
    # ---- the readout this model has
    out = f"blocks.{c.depth - 1}.resid_post"
    if c.fc_norm:  # timm: no final LayerNorm; pool first, then fc_norm
        box("pool", f"Mean of the\n{N} patch tokens", "out", "readout")
        box("fc_norm", "fc_norm\n(LayerNorm)", "out", "readout")
        edge("add2", "pool", out, _shape(tr.shape(out)))
        edge("pool", "fc_norm", "pooled", (D,))
        last, carried, shape = "fc_norm", "pooled", (D,)
    else:
        box("ln_final", "Final\nLayerNorm", "out", "readout")
        edge("add2", "ln_final", out, _shape(tr.shape(out)))
        ln_final = _shape(tr.shape("ln_final"))
        if "seg_logits" in tr:
            box("seg_head", "Segmentation\nhead", "out", "segmentation")
            box("seg_map", "Class map\nper patch cell", "out", "segmentation")
            edge("ln_final", "seg_head", "ln_final.patches", (N, ln_final[1]))
            edge("seg_head", "seg_map", "seg_logits", _shape(tr.shape("seg_logits")))
        if c.has_text:
            box("pool", f"The {T} text\npositions", "out", "readout")
            last, carried, shape = "pool", "pooled", (T, D)
        elif not c.num_classes:
            box("final_tokens", "Final tokens\n(no head)", "out", "readout")
            edge("ln_final", "final_tokens", "ln_final", ln_final)
            return ModelMap(tuple(boxes), tuple(edges), c.depth, layer, tr.mask_kind)
        elif c.global_pool == "avg":
            box("pool", f"Mean of the\n{N} patch tokens", "out", "readout")
            last, carried, shape = "pool", "pooled", (D,)
        elif c.dist_token:
            box("pool", "Final CLS\nand DIST", "out", "readout")
            last, carried, shape = "pool", "pooled", (2, D)
        else:
            box("pool", "Final CLS\n(token 0)", "out", "readout")
            last, carried, shape = "pool", "pooled", (D,)
        edge("ln_final", "pool", "ln_final", ln_final)
    if c.has_text:
        box("head", "Text head\n(tied: X·Eᵀ)" if c.tie_text_head else "Text head\n(linear)",
            "out", "readout")
    elif c.dist_token and c.global_pool != "avg":
        box("head", "Two heads,\nmean of both", "out", "readout")
    else:
        box("head", "Head\n(linear)", "out", "readout")
    box("logits", "Logits: next word\nat each position" if c.has_text
        else f"Logits: one per\nclass ({c.num_classes})", "out", "readout")
    edge(last, "head", carried, shape)
    edge("head", "logits", "logits", _shape(tr.logits))
    return ModelMap(tuple(boxes), tuple(edges), c.depth, layer, tr.mask_kind)


def caption_input(sos_id: int, ids: list[int], room: int) -> list[int]:
    """The text a captioner read when it wrote its last word: [SOS] and every generated word
    but the last (at most `room` tokens), so one traced pass shows the whole text stream."""
    return ([int(sos_id)] + [int(i) for i in ids[:-1]])[:max(1, room)]
