"""A model without a head: its final token vector, and the patches that point like it."""

from __future__ import annotations

from ui.drawing import describe, figures, show
from ui.drawing.equation import latex
from ui.lesson import deck
from ui.lesson.deck import Choice, Question
from ui.stages.logits.base import (
    TEMPERATURE,
    TEMPERATURE_Q,
    Ctx,
)
from ui.stages.logits.keys import LOGITS_RAW
from vit_core.explain.extremes import extremes
from vit_core.explain.readout import (
    headless_summary,
)


# ---------------------------------------------------------------- headless: the final vector
def _vector_facts(x: Ctx) -> dict:
    return headless_summary(x.tr)


def _vector_figure(x: Ctx, s: dict) -> None:
    tok, D = s["token"], x.c.embed_dim
    ln = "" if x.c.fc_norm else r"\mathrm{LN}"
    latex(rf"z_\mathrm{{out}} = {ln}(z_L^\mathrm{{{tok.split()[0]}}})\in"
          rf"\mathbb{{R}}^{{{D}}}")
    deck.chart(figures.vector_strip(
        s["vector"].numpy(), f"the final {tok} vector ({D} dimensions)",
        x_title="dimension of D", value_name="value", row_names=[tok], y_title="token"),
        key=LOGITS_RAW)


def _vector_words(x: Ctx, s: dict) -> str:
    dims = ", ".join(f"{i} ({v:+.2f})" for i, v in s["top_dims"])
    return (f"Here is the final {s['token']} vector, the one that stands for the whole image. "
            f"Its norm is {s['norm']:.2f}; its largest dimensions are {dims}.")


def _vector_describe(x: Ctx, s: dict) -> str:
    e, n = extremes(s["vector"].numpy()), s["vector"].numel()
    return (f"A strip of {n} cells, one per dimension of the final {s['token']} vector (left "
            f"to right: dimension 0 to {n - 1}), coloured by value on a red-blue scale (red "
            f"positive, blue negative) from {e.lo:.2f} to {e.hi:.2f}: the highest is dimension "
            f"{e.at_hi[0]} ({e.hi:+.2f}), the lowest dimension {e.at_lo[0]} ({e.lo:+.2f}).")


def _headless_question(x: Ctx, _) -> Question:
    return Question(TEMPERATURE_Q, "This model has no head, so there are no logits to divide by "
                                   "a temperature: its output is the final token vectors.",
                    Choice(TEMPERATURE.options))  # it does not apply: nobody is marked


# ---------------------------------------------------------------- headless: similar patches
def _similar_figure(x: Ctx, s: dict) -> None:
    g = x.c.grid
    sim = s["similarity"].reshape(g, g).numpy()
    show.image(figures.with_scale(figures.overlay(x.prep.crop, sim), s["sim_lo"], s["sim_hi"],
                                  "cosine similarity", fmt="{:.2f}"),
               f"cosine similarity of each final patch vector with the {s['token']} vector",
               "final-token-similarity", width=320)


def _similar_words(x: Ctx, s: dict) -> str:
    near = ", ".join(f"patch {i} ({c:.2f})" for i, c in s["nearest"])
    return (f"The patches pointing most like it are {near}. Without a head the model gives "
            f"vectors, not answers.")


def _similar_describe(x: Ctx, s: dict) -> str:
    g = x.c.grid
    return ("The image with a colour laid over each patch, its scale printed under it. "
            + describe.patch_map("Your image", f"the cosine similarity of a patch's final "
                                 f"vector with the {s['token']} vector",
                                 extremes(s["similarity"]), g, describe.two))


def _similar_notes(x: Ctx, s: dict) -> str:
    return (f"Cosine similarity of each patch's final vector with the {s['token']} vector: 1 "
            f"is the same direction, 0 at right angles, −1 opposite. The map is coloured from "
            f"its lowest value to its highest, both printed under it.")
