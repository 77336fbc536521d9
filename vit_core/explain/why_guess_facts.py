"""A person's guess put through the same deletion test as the attribution maps.

    k = guess_size(model.config.grid)                  # how many patches a guess names
    order = guess_order((12, 19, 20), N)               # the guess first, then the rest
    curve = score(model, pixels, target, (12, 19, 20)) # faithfulness.deletion in that order
    v = verdict((12, 19, 20), curve.auc, rows)         # beside faithfulness.table's rows
    v.better_than_attention, v.better_than_random
    summary([v1, v2, v3])                              # how many of a class beat each

A guess names k patches, not an order of all N, so the deletion curve needs the rest too: the
guessed patches go first (in index order: a guess is a set, not a ranking), then every other
patch in the order of faithfulness.random_orders(N, [REST_SEED])[0] with the guessed ones taken
out. So a guess of that random order's first k patches follows the random curve of seed
REST_SEED from step k on (the same patches are gone, then go in the same order): what a guess
gains over random orders it gains in its own first k steps. The curve is faithfulness.deletion
with the table's settings (grey baseline, one patch a step), so its area is comparable with the
table's deletion AUCs: lower means the answer fell faster, the guess named what the model used.

The thresholds, named: a guess is better than attention when its AUC is below CLS attention's
(ATTENTION, any amount lower); better than random when it is below the random orders' mean AUC
by more than RANDOM_SPREADS times their spread (the population std over the table's seeds).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .faithfulness import Curve, Row, deletion, random_orders

REST_SEED = 0  # the random order the patches after the guess follow
ATTENTION = "cls_attention"  # the method a guess is compared with first
RANDOM_SPREADS = 1.0  # better than random: below the random mean by more than this many stds


def guess_size(grid: int) -> int:
    """How many patches a guess names on a grid x grid image: half a row (at least 1)."""
    return max(1, int(grid) // 2)


def guess_order(guess, n: int, seed: int = REST_SEED) -> torch.Tensor:
    """[n] patch indices: the guessed patches in index order, then the others in the order of
    random_orders(n, [seed])[0]."""
    chosen = sorted({int(p) for p in guess})
    if not chosen or chosen[0] < 0 or chosen[-1] >= n:
        raise ValueError(f"A guess names patches 0 to {n - 1} (at least one).")
    rest = random_orders(n, [seed])[0]
    taken = torch.zeros(n, dtype=torch.bool)
    taken[chosen] = True
    return torch.cat([torch.tensor(chosen, dtype=torch.long), rest[~taken[rest]]])


def score(model, pixels, target, guess, *, mask=None) -> Curve:
    """The guess's deletion curve: faithfulness.deletion in guess_order, one patch a step."""
    return deletion(model, pixels, target, guess_order(guess, model.config.num_patches), k=1,
                    mask=mask)


@dataclass(frozen=True)
class Verdict:
    """One guess beside the methods' deletion AUCs on the same image."""

    patches: tuple[int, ...]
    auc: float  # the guess's deletion AUC
    methods: dict  # method -> its deletion AUC (faithfulness.table's rows, random left out)
    random_mean: float
    random_spread: float  # population std of the random orders' AUCs
    better_than_attention: bool  # auc < methods[ATTENTION]
    better_than_random: bool  # auc < random_mean - RANDOM_SPREADS * random_spread
    beaten: tuple[str, ...]  # the methods whose AUC is above the guess's

    def scores(self) -> dict:
        """The numbers kept with a class's answer (plain JSON values)."""
        return {"patches": list(self.patches), "guess_auc": round(self.auc, 4),
                **{f"{m}_auc": round(a, 4) for m, a in self.methods.items()},
                "random_auc": round(self.random_mean, 4),
                "random_spread": round(self.random_spread, 4),
                "better_than_attention": self.better_than_attention,
                "better_than_random": self.better_than_random}


def verdict(guess, auc: float, rows: list[Row]) -> Verdict:
    """The guess's AUC against the table's rows (the methods, then "random")."""
    methods = {r.method: float(r.deletion_auc) for r in rows if r.method != "random"}
    rand = next(r for r in rows if r.method == "random")
    spread = float(rand.deletion_spread or 0.0)
    mean = float(rand.deletion_auc)
    return Verdict(tuple(sorted({int(p) for p in guess})), float(auc), methods, mean, spread,
                   ATTENTION in methods and auc < methods[ATTENTION],
                   auc < mean - RANDOM_SPREADS * spread,
                   tuple(m for m, a in methods.items() if a > auc))


@dataclass(frozen=True)
class ClassSummary:
    """How a class's guesses did, each on its own student's image."""

    guesses: int
    better_than_attention: int
    better_than_random: int
    best: float | None  # the lowest guess AUC (None: no guess)


def summary(scores: list[dict]) -> ClassSummary:
    """Counts over the `scores` of each sent guess (Verdict.scores)."""
    found = [s for s in scores if "guess_auc" in s]
    return ClassSummary(len(found), sum(bool(s.get("better_than_attention")) for s in found),
                        sum(bool(s.get("better_than_random")) for s in found),
                        min((float(s["guess_auc"]) for s in found), default=None))
