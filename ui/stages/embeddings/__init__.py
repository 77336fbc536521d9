"""Stage 2: patch vectors projected by W_E, CLS (and DIST) prepended, position embeddings added;
a captioner's text rows after them. One module per group of steps: `tokens` (one patch's
vector, W_E's filters, the sum, the text rows), `positions` (position similarity) and `sizes`
(another input size); their numbers come from vit_core.explain.embeddings."""

from __future__ import annotations

from ui.lesson import deck
from ui.selection import session
from ui.stages.embeddings import positions, sizes, tokens
from ui.stages.embeddings.positions import (
    ALIKE_GAP,
    APART,
    BORDER_GAP,
    CHECKERBOARD,
    CLEAR_GAP,
    WEAK_GAP,
    border_words,
    similarity_notes,
    similarity_words,
)
from ui.stages.embeddings.sizes import SAME_CONFIDENCE, same_place, size_words

__all__ = ["ALIKE_GAP", "APART", "BORDER_GAP", "CHECKERBOARD", "CLEAR_GAP", "SAME_CONFIDENCE",
           "STAGE", "WEAK_GAP", "border_words", "same_place", "similarity_notes",
           "similarity_words", "size_words"]


def _intro(v: deck.View) -> str:
    c, tr = v.c, v.tr
    P, D = c.patch_size, c.embed_dim
    cpp = c.in_chans * P * P
    pre = c.num_prefix_tokens
    if not pre:
        prefix_text = "This model has no CLS token: the sequence is the patches alone. "
    else:
        prefix_text = (
            ("A learned CLS vector is then put in front of the patches. " if pre == 1 else
             "Two learned vectors, CLS and DIST, are then put in front of the patches (DeiT "
             "trains DIST to agree with a teacher network). ")
            + ("It has no pixels of its own, so anything it knows about the image must come "
               "from the patches through attention. " if pre == 1 else
               "They have no pixels of their own, so anything they know about the image must "
               "come from the patches through attention. "))
        if tr.mask_kind == "causal":
            whose = ("chosen in the sidebar" if session.chosen_mask() else
                     "this model's own, the one it was trained with")
            prefix_text += (f"Under the causal mask ({whose}), CLS is token 0 and may attend "
                            f"only to itself. ")
    return (f"Each flattened patch is multiplied by one learned matrix W_E ({cpp}×{D}) and "
            f"shifted by a bias b, giving a {D}-number embedding. The same W_E is used for every "
            f"patch, exactly like a convolution with a {P}×{P} kernel and stride {P}. "
            + prefix_text + "Finally a learned position vector is added to every token, because "
            "attention itself does not know where a patch came from.")


STAGE = deck.Stage(
    slug="embeddings",
    name="Patch embeddings and positions",
    nav="Embeddings", icon=":material/scatter_plot:",
    story="One learned matrix turns every patch row into an embedding. Most ViTs add a learned "
          "CLS token to the list, and a position vector is added to each token so the model "
          "knows where it came from.",
    view=deck.load,
    intro=_intro,
    steps=tokens.STEPS + positions.STEPS + tokens.SUM_STEPS + sizes.STEPS,
)
