"""The Experiments stage's text alternatives (ui/lesson/deck.Step.describe): each step's figure
in words, from the same facts as its sentence: what the change's pictures or grid show, the two
runs' bars and where they differ most."""

from __future__ import annotations

from ui.drawing import describe
from ui.stages.experiments.change import Change
from ui.stages.experiments.compare import TOP, Compare
from ui.stages.experiments.order import Fed, Unordered
from ui.stages.experiments.printed import names_of, share
from ui.stages.experiments.view import SHUFFLES, Ctx
from vit_core.explain import experiment_facts as facts

RUNS = ("positions removed", "shuffled, positions removed")  # the unordered chart's two runs


def change_describe(x: Ctx, f: Change) -> str:
    c = x.c
    g = c.grid
    if f.kind == "heads":
        off = (", ".join(f"head {h}" for h in f.heads) + f" of block {f.layer}" if f.heads else
               "none yet")
        return (f"A grid of the model's {c.depth} blocks (rows) by {f.n_heads} heads (columns), "
                f"each cell light when the head runs and dark when it is switched off; the "
                f"colour bar names both. Switched off: {off}.")
    if f.kind == "occlude":
        return (f"Two pictures of the image cut into its {g}×{g} patch grid: left, the "
                f"patches you chose outlined ({len(f.greyed)}); right, what the model sees, "
                f"those patches filled with the grey RGB ({', '.join(map(str, f.rgb))}).")
    if f.kind in SHUFFLES:
        numbered = " (each cell numbered with the patch it holds)" if g <= 16 else ""
        return (f"Two pictures: left, the image cut into its {g}×{g} patches; right, the same "
                f"patches in a random order{numbered}: {f.n_patches - len(f.stay)} of "
                f"{f.n_patches} moved to another cell.")
    if f.kind == "positions":
        return ("The image, unchanged, beside the equation of the first tokens with the "
                "position embeddings' weight λ going from 1 to 0.")
    return (f"Two grids of block 0's mask, before ({x.run_mask}) and after ({f.new_mask}): rows "
            f"are the query tokens (who looks), columns the key tokens (what is looked at); a "
            f"light cell may attend, a dark one is blocked.")


def compare_describe(x: Ctx, f: Compare) -> str:
    if f.family == "class":
        names = names_of(x.c)
        top = facts.charted_classes(f.p0, f.p1, min(TOP, x.c.num_classes))
        return describe.paired_bars(
            "the probabilities of the top classes of either run", [names[i] for i in top],
            f.p0[top].numpy(), f.p1[top].numpy(), share)
    if f.family == "text":
        said = (f"Two rows of bars, one bar per token in writing order, each the probability "
                f"it had when it was chosen. Before: “{f.gen0.text}”, {len(f.gen0.words)} "
                f"bars. After: “{f.gen1.text}”, {len(f.gen1.words)} bars")
        return said + ("; the two are the same." if f.parting is None else
                       f"; they part at word {f.parting + 1}.")
    return describe.bars("how far the final tokens moved: the cosine similarity of each "
                          "before and after (1: unchanged)", [f"final {k}" for k in f.sims],
                          list(f.sims.values()), lambda v: f"{v:.3f}")


def fed_describe(x: Ctx, f: Fed) -> str:
    return describe.paired_bars(
        "each word's probability, the caption written before fed to both runs",
        [f"word {i + 1}, “{w}”" for i, w in enumerate(f.words)], f.before, f.after, share)


def unordered_describe(x: Ctx, f: Unordered) -> str:
    if f.family == "class":
        names = names_of(x.c)
        top = facts.charted_classes(f.plain, f.shuffled, min(TOP, x.c.num_classes))
        return describe.paired_bars(
            "the probabilities of the top classes, without positions", [names[i] for i in top],
            f.plain[top].numpy(), f.shuffled[top].numpy(), share, names=RUNS)
    if f.family == "text":
        return describe.paired_bars(
            "each word's probability without positions, the caption before fed to both runs",
            [f"word {i + 1}, “{w}”" for i, w in enumerate(f.words)], f.plain, f.shuffled,
            share, names=RUNS)
    return describe.bars("how far shuffling turns the final tokens: the cosine similarity of "
                          "each, shuffled against not (1: unchanged)",
                          [f"final {k}" for k in f.sims], list(f.sims.values()),
                          lambda v: f"{v:.3f}")
