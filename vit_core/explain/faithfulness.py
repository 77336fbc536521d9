"""Is the map faithful? Deletion and insertion curves, random orders, and one table per image.

    order = order_of(attribution.patches)             # most important patch first
    d = deletion(model, pixels, target, order, k=4)   # patches greyed in that order, 4 a step
    i = insertion(model, pixels, target, order, k=4)  # patches put back on grey in that order
    d.auc, i.auc                                      # a faithful map: low deletion, high insertion
    r = random_curves(model, pixels, target, "deletion", seeds=range(5))   # the yardstick
    rows = table(model, pixels, target, {"mine": my_map})   # each method, and "random"

Deletion (Petsiuk et al. 2018, RISE): take the map's patches away, most important first, k at a
time, each replaced by the baseline (grey by default), and read the target's probability after
each step, step 0 (the image as it is) included. If the map names what the model used, the
probability falls early and the area under the curve is small. Insertion is the mirror: start
from the baseline image and put the patches back in the same order; a faithful map makes the
probability rise early (a large area). Neither is proof: a grey patch is not in the training
distribution, so a fall may come from the odd image rather than from the missing evidence;
compare with random orders on the same image, which leave the distribution just as much.

x is the fraction of the N patches removed (or inserted) after each step, 0 to 1; the area is the
trapezoid rule over x. Passes are batched (`batch_size` images a forward), and `progress(done,
total)` hears each batch and may raise `baselines.Cancelled` to stop before the next.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from . import budget
from . import faithfulness_sanity as sanity_mod
from .attribution import METHODS
from .baselines import baseline as baseline_image
from .baselines import replace_patches, tick
from .targets import probability

KINDS = ("deletion", "insertion")
BATCH = 16  # images per forward pass


@dataclass(frozen=True, eq=False)
class Curve:
    """One deletion or insertion curve for one order of the patches."""

    kind: str  # "deletion" or "insertion"
    x: torch.Tensor  # [steps + 1] float64: fraction of the N patches removed / inserted
    y: torch.Tensor  # [steps + 1] the target's probability after each step, step 0 first
    auc: float  # trapezoid area under y over x in [0, 1]
    order: torch.Tensor  # [N] patch indices (row-major), most important first


@dataclass(frozen=True, eq=False)
class RandomCurves:
    """Curves for random orders, one per seed, and their mean and spread (population std)."""

    kind: str
    x: torch.Tensor  # [steps + 1]
    mean: torch.Tensor  # [steps + 1] mean probability over seeds at each step
    std: torch.Tensor  # [steps + 1] standard deviation over seeds (divided by n, not n - 1)
    auc_mean: float
    auc_std: float
    seeds: tuple[int, ...]
    curves: tuple[Curve, ...]  # one per seed, in the order of `seeds`


@dataclass(frozen=True, eq=False)
class Row:
    """One line of the table: a method (or "random") on one image. None where it does not apply
    (no sanity check for random orders; a completeness gap only for methods that report one)."""

    method: str
    deletion_auc: float
    insertion_auc: float
    sanity: float | None  # Spearman correlation of the map on the trained vs randomised model
    completeness_gap: float | None  # from the Attribution (Integrated Gradients)
    seconds: float  # the map and its two curves (the sanity check not included)
    deletion_spread: float | None = None  # random orders: std of the AUC over seeds
    insertion_spread: float | None = None
    deletion: Curve | RandomCurves | None = None
    insertion: Curve | RandomCurves | None = None


def order_of(map_values: torch.Tensor) -> torch.Tensor:
    """[N] patch indices by descending map value; equal values keep the patch order (the lower
    index first), so a constant map gives 0, 1, ..., N-1."""
    v = torch.as_tensor(map_values).detach().flatten()
    return torch.sort(v, descending=True, stable=True).indices


def deletion(model, pixels, target, order, *, baseline="grey", k=None, mask=None, progress=None,
             batch_size=BATCH) -> Curve:
    """The target's probability as the patches of `order` are replaced by the baseline, k at a
    time: steps 0 (nothing removed) to ceil(N / k) (every patch removed)."""
    return _curves(model, pixels, target, "deletion", [order], baseline, k, mask, progress,
                   batch_size)[0]


def insertion(model, pixels, target, order, *, baseline="grey", k=None, mask=None, progress=None,
              batch_size=BATCH) -> Curve:
    """The target's probability as the patches of `order` are put back on the baseline image, k
    at a time: steps 0 (the baseline alone) to ceil(N / k) (the image as it is)."""
    return _curves(model, pixels, target, "insertion", [order], baseline, k, mask, progress,
                   batch_size)[0]


def random_orders(n: int, seeds) -> list[torch.Tensor]:
    """One random order of n patches per seed: torch.randperm with its own seeded generator
    (the global random state is left alone)."""
    return [torch.randperm(n, generator=torch.Generator().manual_seed(int(s))) for s in seeds]


def random_curves(model, pixels, target, kind="deletion", *, seeds=None, baseline="grey",
                  k=None, mask=None, progress=None, batch_size=BATCH) -> RandomCurves:
    """Deletion or insertion curves for one random order per seed (None: seeds 0, 1, ...,
    `budget.random_seeds` − 1; every seed's images share the batches), with their mean and
    spread."""
    seeds = range(budget.random_seeds(model.config)) if seeds is None else seeds
    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise ValueError("Random curves need at least one seed.")
    orders = random_orders(model.config.num_patches, seeds)
    curves = _curves(model, pixels, target, kind, orders, baseline, k, mask, progress,
                     batch_size)
    ys = torch.stack([c.y for c in curves]).double()
    aucs = torch.tensor([c.auc for c in curves], dtype=torch.float64)
    return RandomCurves(kind, curves[0].x, ys.mean(0), ys.std(0, correction=0),
                        float(aucs.mean()), float(aucs.std(correction=0)), seeds, tuple(curves))


def _curves(model, pixels, target, kind, orders, baseline, k, mask, progress,
            batch_size) -> list[Curve]:
    """One curve per order, every order's steps batched together (k None: `budget.curve_k`)."""
    if kind not in KINDS:
        raise ValueError(f"'{kind}' is not a curve; choose deletion or insertion.")
    k = budget.curve_k(model.config) if k is None else k
    if int(k) < 1 or int(batch_size) < 1:
        raise ValueError("k and batch_size are at least 1.")
    pixels = pixels.unsqueeze(0) if pixels.dim() == 3 else pixels
    N = model.config.num_patches
    orders = [_checked(o, N) for o in orders]
    counts = torch.tensor([min(s * k, N) for s in range(-(-N // k) + 1)])  # patches taken
    chosen = torch.cat([_steps(o, counts) for o in orders])  # [orders * steps, N]
    base = baseline_image(pixels, model.config, baseline)
    y = _probabilities(model, pixels, base, target, chosen, kind == "insertion", mask, progress,
                       int(batch_size))
    x = counts.double() / N
    return [Curve(kind, x, ys, float(torch.trapezoid(ys.double(), x)), o)
            for o, ys in zip(orders, y.split(len(counts)), strict=True)]


def _checked(order, n: int) -> torch.Tensor:
    order = torch.as_tensor(order, dtype=torch.long).flatten()
    if not torch.equal(order.sort().values, torch.arange(n)):
        raise ValueError(f"An order lists each of the {n} patches once (0 to {n - 1}).")
    return order


def _steps(order: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """[steps, N] bool: after step s, the first counts[s] patches of `order` are taken."""
    place = torch.empty_like(order)
    place[order] = torch.arange(len(order))  # where each patch comes in the order
    return place[None, :] < counts[:, None]


@torch.no_grad()
def _probabilities(model, pixels, base, target, chosen, insert, mask, progress, batch_size):
    """[R]: the target's probability for each row of `chosen` (patches from the base, or, with
    `insert`, from the image on the base), `batch_size` rows a forward; a row that repeats
    (every order's first and last step, say) is passed once."""
    unique, back = torch.unique(chosen, dim=0, return_inverse=True)
    return _unique_probabilities(model, pixels, base, target, unique, insert, mask, progress,
                                 batch_size)[back]


def _unique_probabilities(model, pixels, base, target, chosen, insert, mask, progress,
                          batch_size):
    rows = chosen.split(batch_size)
    out = []
    for done, part in enumerate(rows, start=1):
        images = replace_patches(base, pixels, part, model.config.patch_size) if insert \
            else replace_patches(pixels, base, part, model.config.patch_size)
        out.append(probability(model, images, target, mask=mask))
        tick(progress, done, len(rows))
    return torch.cat(out)


def table(model, pixels, target, methods=None, *, baseline="grey", k=None, seeds=None,
          sanity=True, sanity_depth=None, batch_size=BATCH, mask=None, progress=None) -> list[Row]:
    """One row per method of `methods` (name -> fn(model, pixels, target, *, mask, progress)
    returning an object with `.patches` [N] and `.completeness_gap`; None: the six maps of
    vit_core.explain.attribution.METHODS), then "random" (`seeds`: a
    count, or the seeds themselves; None: `budget.random_seeds`). `k`: patches a curve step
    (None: `budget.curve_k`). The sanity check re-initialises the top `sanity_depth`
    blocks (None: all) and the output layer of a copy (faithfulness_sanity). `progress(done,
    total)` counts hundredths of the table's stages (each map, each pair of curves, each sanity
    map)."""
    methods = METHODS if methods is None else methods
    stages = _Stages(progress, len(methods) * (2 + bool(sanity)) + 1)
    rows = [_method_row(model, pixels, target, name, fn, stages, sanity, sanity_depth,
                        dict(baseline=baseline, k=k, mask=mask, batch_size=batch_size))
            for name, fn in methods.items()]
    seeds = range(seeds) if isinstance(seeds, int) else seeds
    seeds = range(budget.random_seeds(model.config)) if seeds is None else seeds
    return [*rows, _random_row(model, pixels, target, seeds, stages,
                               dict(baseline=baseline, k=k, mask=mask, batch_size=batch_size))]


def _method_row(model, pixels, target, name, fn, stages, sanity, depth, curve) -> Row:
    start = time.perf_counter()
    a = fn(model, pixels, target, mask=curve["mask"], progress=stages.next())
    order = order_of(a.patches)
    d = deletion(model, pixels, target, order, progress=stages.next(half=0), **curve)
    i = insertion(model, pixels, target, order, progress=stages.same(half=1), **curve)
    seconds = time.perf_counter() - start
    rho = None
    if sanity:
        rho = sanity_mod.sanity_check(model, pixels, target, fn, depth=depth, mask=curve["mask"],
                                      progress=stages.next(), trained=a.patches).rho
    stages.finish()
    gap = getattr(a, "completeness_gap", None)
    return Row(name, d.auc, i.auc, rho, None if gap is None else float(gap), seconds,
               deletion=d, insertion=i)


def _random_row(model, pixels, target, seeds, stages, curve) -> Row:
    start = time.perf_counter()
    d = random_curves(model, pixels, target, "deletion", seeds=seeds,
                      progress=stages.next(half=0), **curve)
    i = random_curves(model, pixels, target, "insertion", seeds=seeds,
                      progress=stages.same(half=1), **curve)
    seconds = time.perf_counter() - start
    stages.finish()
    return Row("random", d.auc_mean, i.auc_mean, None, None, seconds, d.auc_std, i.auc_std,
               d, i)


class _Stages:
    """The table's progress: stage s of n reports s*100 + its own share (0-100) of n*100, and
    each stage's end is reported too (so a method that reports nothing can still be stopped)."""

    def __init__(self, progress, n: int):
        self.progress, self.n, self.at = progress, n, -1

    def next(self, half=None):
        self.finish()
        self.at += 1
        return self.same(half)

    def same(self, half=None):
        lo, width = (0, 100) if half is None else (50 * half, 50)
        at = self.at

        def report(done, total):
            tick(self.progress, 100 * at + lo + width * done // max(total, 1), 100 * self.n)

        return report

    def finish(self):
        if self.at >= 0:
            tick(self.progress, 100 * (self.at + 1), 100 * self.n)
