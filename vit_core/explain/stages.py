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


@dataclass(frozen=True)
class Piece:
    """Part of the map, drawn when this model has it (`when`, one of the kinds `_kinds` names).

    A box is (id, label, row, stage); its label may name {P} (the patch size), {H} (heads),
    {heads} ("head" or "heads"), {prefix} ("CLS and DIST"), {mask}, {N} (patches), {T} (text
    tokens), {K} (classes). An edge is (src, dst, name) or (src, dst, name, derived): the trace
    name it carries ({b}: the block drawn, "blocks.l."; {out}: the last block's output), whose
    shape Trace.shape gives, or a derived shape (`_derived`) for an edge that carries no tensor
    of the trace or whose tensor is a part of one."""

    when: str
    boxes: tuple[tuple[str, str, str, str], ...]
    edges: tuple[tuple[str, ...], ...]
    in_block: bool = False  # the repeated block: a click on a box also selects its layer


_POOL = "Mean of the\n{N} patch tokens"
_CLASSES = "Logits: one per\nclass ({K})"
_WORDS = "Logits: next word\nat each position"

# The whole map, in pipeline order: boxes and edges are listed in this order.
MAP = (
    Piece("always", (("image", "Image", "input", "patches"),
                     ("patches", "Cut into\n{P}×{P} patches", "input", "patches"),
                     ("patch_embed", "Linear patch\nembedding W_E", "input", "embed")),
          (("image", "patches", "image", "image"), ("patches", "patch_embed", "patches"))),
    Piece("prefix", (("prefix", "Prepend\n{prefix}", "input", "embed"),
                     ("pos", "+ position\nembeddings", "input", "embed")),
          (("patch_embed", "prefix", "patch_embed"), ("prefix", "pos", "tokens", "tokens"))),
    Piece("no prefix", (("pos", "+ position\nembeddings", "input", "embed"),),
          (("patch_embed", "pos", "patch_embed"),)),
    Piece("text", (("words", "Words: [SOS]\n+ caption so far", "text", "generation"),
                   ("text_embed", "Word embeddings\n+ text positions", "text", "embed"),
                   ("join", "Image tokens,\nthen text tokens", "input", "embed")),
          (("words", "text_embed", "text_ids", "text_ids"),
           ("text_embed", "join", "embed.text", "embed.text"),
           ("pos", "join", "embed.image", "embed.image"), ("join", "ln1", "embed", "embed"))),
    Piece("image only", (), (("pos", "ln1", "embed", "embed"),)),
    Piece("always", (("ln1", "LayerNorm 1", "attn", "qkv"),
                     ("qkv", "Q, K, V\n({H} {heads})", "attn", "qkv"),
                     ("mask", "Mask: {mask}", "mlp", "mask"),
                     ("pattern", "Attention pattern\nsoftmax(QKᵀ/√dₖ+M)", "attn", "attention"),
                     ("attn_out", "Pattern · V,\nconcat, W_O", "attn", "attention"),
                     ("add1", "+ X\n(residual)", "attn", "mlp"),
                     ("ln2", "LayerNorm 2", "attn", "mlp"),
                     ("mlp_up", "MLP: W₁,\nthen GELU", "mlp", "mlp"),
                     ("mlp_down", "MLP: W₂", "mlp", "mlp"),
                     ("add2", "+ X′\n(residual)", "mlp", "mlp")),
          (("ln1", "qkv", "{b}ln1"), ("qkv", "pattern", "{b}attn.q"),
           ("mask", "pattern", "mask", "mask"), ("pattern", "attn_out", "{b}attn.pattern"),
           ("attn_out", "add1", "{b}attn_out"), ("add1", "ln2", "{b}resid_mid"),
           ("ln2", "mlp_up", "{b}ln2"), ("mlp_up", "mlp_down", "{b}mlp.post"),
           ("mlp_down", "add2", "{b}mlp_out")), in_block=True),
    # the readout this model has: timm's fc_norm pools first and has no final LayerNorm
    Piece("fc_norm", (("pool", _POOL, "out", "readout"),
                      ("fc_norm", "fc_norm\n(LayerNorm)", "out", "readout")),
          (("add2", "pool", "{out}"), ("pool", "fc_norm", "pooled", "D"),
           ("fc_norm", "head", "pooled", "D"))),
    Piece("ln_final", (("ln_final", "Final\nLayerNorm", "out", "readout"),),
          (("add2", "ln_final", "{out}"),)),
    Piece("segmentation", (("seg_head", "Segmentation\nhead", "out", "segmentation"),
                           ("seg_map", "Class map\nper patch cell", "out", "segmentation")),
          (("ln_final", "seg_head", "ln_final.patches", "ln_final.patches"),
           ("seg_head", "seg_map", "seg_logits"))),
    Piece("pool text", (("pool", "The {T} text\npositions", "out", "readout"),),
          (("ln_final", "pool", "ln_final"), ("pool", "head", "pooled", "T×D"))),
    Piece("pool none", (("final_tokens", "Final tokens\n(no head)", "out", "readout"),),
          (("ln_final", "final_tokens", "ln_final"),)),
    Piece("pool avg", (("pool", _POOL, "out", "readout"),),
          (("ln_final", "pool", "ln_final"), ("pool", "head", "pooled", "D"))),
    Piece("pool dist", (("pool", "Final CLS\nand DIST", "out", "readout"),),
          (("ln_final", "pool", "ln_final"), ("pool", "head", "pooled", "2×D"))),
    Piece("pool cls", (("pool", "Final CLS\n(token 0)", "out", "readout"),),
          (("ln_final", "pool", "ln_final"), ("pool", "head", "pooled", "D"))),
    Piece("tied text head", (("head", "Text head\n(tied: X·Eᵀ)", "out", "readout"),
                             ("logits", _WORDS, "out", "readout")),
          (("head", "logits", "logits", "logits"),)),
    Piece("text head", (("head", "Text head\n(linear)", "out", "readout"),
                        ("logits", _WORDS, "out", "readout")),
          (("head", "logits", "logits", "logits"),)),
    Piece("two heads", (("head", "Two heads,\nmean of both", "out", "readout"),
                        ("logits", _CLASSES, "out", "readout")),
          (("head", "logits", "logits", "logits"),)),
    Piece("one head", (("head", "Head\n(linear)", "out", "readout"),
                       ("logits", _CLASSES, "out", "readout")),
          (("head", "logits", "logits", "logits"),)),
)


def _pool(c) -> str:
    """What the readout reads the final tokens as: the text positions, nothing (no head), their
    mean, CLS and DIST, or CLS."""
    if c.has_text:
        return "text"
    if not c.num_classes:
        return "none"
    return "avg" if c.global_pool == "avg" else "dist" if c.dist_token else "cls"


def _head(c) -> str:
    if c.has_text:
        return "tied text head" if c.tie_text_head else "text head"
    return "two heads" if c.dist_token and c.global_pool != "avg" else "one head"


def _kinds(tr) -> set[str]:
    """The pieces of MAP this model has (their `when`)."""
    c = tr.config
    kinds = {"always", "prefix" if c.prefix_names else "no prefix",
             "text" if c.has_text else "image only"}
    if c.fc_norm:
        return kinds | {"fc_norm", _head(c)}
    kinds |= {"ln_final", "pool " + _pool(c)}
    if "seg_logits" in tr:
        kinds.add("segmentation")
    return kinds if "pool none" in kinds else kinds | {_head(c)}


def _derived(tr, image_shape: tuple[int, int, int]) -> dict:
    """The shapes of edges that carry no tensor of the trace, or a part of one (lazily)."""
    c, n, T = tr.config, tr.n_image, tr.n_text
    D = c.embed_dim
    return {"image": lambda: image_shape, "tokens": lambda: (n, D), "text_ids": lambda: (T,),
            "embed": lambda: _shape(tr["embed"]),
            "embed.text": lambda: _shape(tr["embed"][n:]),
            "embed.image": lambda: _shape(tr["embed"][:n]), "mask": lambda: _shape(tr.mask),
            "D": lambda: (D,), "T×D": lambda: (T, D), "2×D": lambda: (2, D),
            "ln_final.patches": lambda: (c.num_patches, _shape(tr.shape("ln_final"))[1]),
            "logits": lambda: _shape(tr.logits)}


def model_map(tr, image_shape: tuple[int, int, int], layer: int) -> ModelMap:
    """Boxes and edges of this trace's forward pass (the pieces of MAP this model has), with
    block `layer` drawn in full.

    Args:
        tr: a Trace (vit_core.run_trace).
        image_shape: the model's input image as (height, width, channels).
        layer: which block's tensors label the block's edges (all blocks have the same shapes).
    """
    c = tr.config
    layer = min(max(int(layer), 0), c.depth - 1)
    words = dict(P=c.patch_size, H=c.num_heads, heads="heads" if c.num_heads > 1 else "head",
                 prefix=" and ".join(c.prefix_names), mask=tr.mask_kind, N=c.num_patches,
                 T=tr.n_text, K=c.num_classes)
    names = dict(b=f"blocks.{layer}.", out=f"blocks.{c.depth - 1}.resid_post")
    derived, kinds = _derived(tr, image_shape), _kinds(tr)
    boxes: list[Box] = []
    edges: list[Edge] = []
    for piece in (p for p in MAP if p.when in kinds):
        boxes += [Box(i, label.format(**words), row, stage, piece.in_block)
                  for i, label, row, stage in piece.boxes]
        for src, dst, name, *how in piece.edges:
            name = name.format(**names)
            shape = derived[how[0]]() if how else tr.shape(name)
            edges.append(Edge(src, dst, name, _shape(shape)))
    return ModelMap(tuple(boxes), tuple(edges), c.depth, layer, tr.mask_kind)


def caption_input(sos_id: int, ids: list[int], room: int) -> list[int]:
    """The text a captioner read when it wrote its last word: [SOS] and every generated word
    but the last (at most `room` tokens), so one traced pass shows the whole text stream."""
    return ([int(sos_id)] + [int(i) for i in ids[:-1]])[:max(1, room)]
