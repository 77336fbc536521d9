"""Activation patching: where, between a clean image and a corrupted one, is the answer formed?

    bad = corrupt(pixels, model.config, "grey")              # every patch greyed
    grid = patch_tokens(model, pixels, bad, target)          # exact: [L, tokens] restored shares
    fast = attribute_tokens(model, pixels, bad, target)      # one forward + one backward

The number patched for is the target's score s (`targets.score`: a class's logit, a word's
log-probability as generated). The clean image gives s_clean, the corrupted one s_corrupt. Run
the corrupted image again with one activation a (the residual stream `blocks.{l}.resid_pre` at
one token, or head h's output `blocks.{l}.attn.z` at every position) set to its value in the
clean run, and the score becomes s_patched. The share of the difference it restores is

    r = (s_patched - s_corrupt) / (s_clean - s_corrupt)

so 0 means the activation carries none of what the corruption took away and 1 all of it.
Patching every token of `resid_pre` at one block is the clean run itself from there on (r = 1).

Exact patching runs one corrupted pass per (block, token) or (block, head), many in one batch
(each row of the batch patches its own site). Attribution patching (Nanda 2023; Syed et al.
2023, "Attribution Patching Outperforms Automated Circuit Discovery") replaces each pass by the
first-order term: r ~ sum_D (ds/da on the corrupted run) * (a_clean - a_corrupt) / (s_clean -
s_corrupt), from one clean pass and one corrupted forward and backward for every site at once.
It is a linear approximation: close where a moves little, wrong where a moves far and the model
saturates (softmax, LayerNorm). `agreement` compares the two grids.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from ..hooks import capture
from .baselines import Progress, baseline, replace_patches, tick
from .targets import Target, score

KINDS = ("grey", "blur", "other")
MIN_CHANGE = 1e-3  # |s_clean - s_corrupt| under this: the corruption did not change the answer


@dataclass(frozen=True)
class Patching:
    """A grid of restored shares and what it was computed from. `grid` is [L, len(columns)]:
    block l's row; the columns are sequence positions (`site` "resid_pre") or heads ("z")."""

    grid: torch.Tensor
    site: str  # "resid_pre" (columns: tokens) or "z" (columns: heads, every position patched)
    columns: tuple[int, ...]  # the sequence positions (resid_pre) or the heads (z)
    clean: float  # the target's score on the clean image
    corrupt: float  # ... and on the corrupted one
    method: str  # "exact" or "attribution"
    seconds: float

    @property
    def denominator(self) -> float:
        return self.clean - self.corrupt


@dataclass(frozen=True)
class Agreement:
    """How far attribution patching's grid follows the exact one (over every cell)."""

    pearson: float
    spearman: float  # Pearson's r of the ranks
    top_overlap: float  # share of the exact grid's top-k cells (by |r|) also in the other's
    k: int


# ---------------------------------------------------------------- the corrupted image
def corrupt(pixels: torch.Tensor, config, kind: str = "grey", *, patches=None,
            other: torch.Tensor | None = None) -> torch.Tensor:
    """The corrupted image [1, C, H, W] (normalised, as `pixels` [1, C, H, W] or [C, H, W]).

    Args:
        kind: "grey" (patches set to mid-grey), "blur" (patches taken from the image blurred
            with sigma = one patch side) or "other" (patches taken from `other`, another image
            of the same size, e.g. another scene).
        patches: the patch indices to replace (row-major, as patchify orders them), or None
            for every patch: the whole image grey, blurred, or the other image.
    """
    x = _batch1(pixels)
    if kind not in KINDS:
        raise ValueError(f"'{kind}' is not a corruption; choose one of {', '.join(KINDS)}.")
    if kind == "other":
        if other is None:
            raise ValueError("The 'other' corruption needs the other image (other=...).")
        base = _batch1(other)
        if base.shape != x.shape:
            raise ValueError(f"The other image has shape {tuple(base.shape)}; the image has "
                             f"{tuple(x.shape)}. Preprocess both for this model.")
    else:
        base = baseline(x, config, kind)
    N = (config.img_size // config.patch_size) ** 2
    chosen = torch.zeros(1, N, dtype=torch.bool)
    chosen[0, list(range(N)) if patches is None else _patch_list(patches, N)] = True
    return replace_patches(x, base.to(x.dtype), chosen, config.patch_size)


def _patch_list(patches, N: int) -> list[int]:
    chosen = [int(p) for p in patches]
    if any(not 0 <= p < N for p in chosen):
        raise ValueError(f"Patch indices run from 0 to {N - 1} on this model; got "
                         f"{[p for p in chosen if not 0 <= p < N]}.")
    return chosen


def positions(model, target: Target, text: bool = False) -> tuple[int, ...]:
    """The sequence positions patched by default: every image token (prefix tokens, then the
    patches); with `text`, also the text tokens fed for a word ([SOS] and the words before it;
    the last of them is where the word is read)."""
    n_img = model.config.num_image_tokens
    n_text = target.index if (text and target.is_word) else 0
    return tuple(range(n_img + n_text))


# ---------------------------------------------------------------- the clean run, the difference
def _clean(model, clean, target, names, mask):
    """(s_clean, the clean run's tensors at `names` [1, ...]), no gradients."""
    with torch.no_grad(), capture(only=names) as kept:
        s_clean = float(score(model, clean, target, mask=mask)[0])
    return s_clean, {n: kept[n].detach() for n in names}


def _difference(s_clean: float, s_corrupt: float) -> float:
    """s_clean - s_corrupt, the denominator; a ValueError when the corruption changed nothing."""
    d = s_clean - s_corrupt
    if not math.isfinite(d) or abs(d) < MIN_CHANGE:
        raise ValueError(f"The corruption does not change the answer: the target's score is "
                         f"{s_clean:.4g} on the clean image and {s_corrupt:.4g} on the "
                         f"corrupted one (a difference under {MIN_CHANGE}); nothing can be "
                         f"restored. Choose another corruption or target.")
    return d


def _batch1(pixels):
    return pixels.unsqueeze(0) if pixels.dim() == 3 else pixels


# ---------------------------------------------------------------- exact patching
def patch_tokens(model, clean, corrupted, target: Target, *, tokens=None, batch_size: int = 64,
                 progress: Progress | None = None, mask=None) -> Patching:
    """Exact patching of `blocks.{l}.resid_pre` at each (block l, token t): [L, len(tokens)].

    Args:
        clean, corrupted: the two images, [1, C, H, W].
        tokens: sequence positions to patch, one column each; None = `positions(model,
            target)`, every image token (pass `positions(model, target, text=True)` to add a
            word's text tokens).
        batch_size: (block, token) sites per forward pass.
        progress: progress(done, total) after each batch; may raise Cancelled to stop.
    """
    tokens = positions(model, target) if tokens is None else tuple(int(t) for t in tokens)
    L = model.config.depth
    rows = [[(layer, t)] for layer in range(L) for t in tokens]
    return _exact(model, clean, corrupted, target, "resid_pre", rows, (L, len(tokens)), tokens,
                  batch_size, progress, mask)


def patch_heads(model, clean, corrupted, target: Target, *, batch_size: int = 64,
                progress: Progress | None = None, mask=None) -> Patching:
    """Exact patching of each head's output `blocks.{l}.attn.z` (head h, every position):
    [L, H]. Arguments as `patch_tokens`."""
    L, H = model.config.depth, model.config.num_heads
    rows = [[(layer, h)] for layer in range(L) for h in range(H)]
    return _exact(model, clean, corrupted, target, "z", rows, (L, H), tuple(range(H)),
                  batch_size, progress, mask)


def restore(model, clean, corrupted, target: Target, where: dict, *, site: str = "resid_pre",
            mask=None) -> float:
    """The share restored by patching several sites together in one corrupted pass: `where`
    maps a block to its tokens (site "resid_pre") or heads ("z"), e.g. {2: range(50)}."""
    row = [(int(layer), int(c)) for layer, cols in where.items() for c in cols]
    return float(_exact(model, clean, corrupted, target, site, [row], (1,), (), 1, None,
                        mask).grid[0])


def _name(site: str, layer: int) -> str:
    if site not in ("resid_pre", "z"):
        raise ValueError(f"'{site}' is not a patched site; choose resid_pre or z.")
    return f"blocks.{layer}.resid_pre" if site == "resid_pre" else f"blocks.{layer}.attn.z"


def _exact(model, clean, corrupted, target, site, rows, shape, columns, batch_size, progress,
           mask) -> Patching:
    """One corrupted pass per row of `rows` (each a list of (block, column) sites patched
    together), `batch_size` rows per batch."""
    t0 = time.perf_counter()
    clean, corrupted = _batch1(clean), _batch1(corrupted)
    names = [_name(site, layer) for layer in range(model.config.depth)]
    s_clean, kept = _clean(model, clean, target, names, mask)
    with torch.no_grad():
        s_corrupt = float(score(model, corrupted, target, mask=mask)[0])
    _difference(s_clean, s_corrupt)
    out = torch.empty(len(rows), dtype=torch.float64)
    chunks = range(0, len(rows), batch_size)
    for done, start in enumerate(chunks, 1):
        chunk = rows[start:start + batch_size]
        x = corrupted.expand(len(chunk), -1, -1, -1)
        with torch.no_grad():
            s = score(model, x, target, hooks=_row_hooks(site, chunk, kept), mask=mask)
        out[start:start + len(chunk)] = s.double()
        tick(progress, done, len(chunks))
    grid = ((out - s_corrupt) / (s_clean - s_corrupt)).view(shape).float()
    return Patching(grid, site, columns, s_clean, s_corrupt, "exact", time.perf_counter() - t0)


def _row_hooks(site: str, chunk, kept) -> dict:
    """One hook per block named in `chunk`: row i of the batch gets the clean values at its own
    sites (tokens of resid_pre [B, S, D], or heads of z [B, H, S, d_k])."""
    by_layer: dict[int, list[tuple[int, int]]] = {}
    for row, sites in enumerate(chunk):
        for layer, col in sites:
            by_layer.setdefault(layer, []).append((row, col))

    def write(x: torch.Tensor, name: str) -> torch.Tensor:
        rows, cols = zip(*by_layer[int(name.split(".")[1])], strict=True)
        rows, cols = torch.tensor(rows), torch.tensor(cols)
        x = x.clone()
        x[rows, cols] = kept[name][0, cols].to(x.dtype)  # resid: [n, D]; z: [n, S, d_k]
        return x

    return {_name(site, layer): write for layer in by_layer}


# ---------------------------------------------------------------- attribution patching
def attribute_tokens(model, clean, corrupted, target: Target, *, tokens=None,
                     mask=None) -> Patching:
    """Attribution patching of `resid_pre` at every (block, token): [L, len(tokens)], each
    sum_D grad * (a_clean - a_corrupt) / (s_clean - s_corrupt) (tokens as `patch_tokens`)."""
    return attribute(model, clean, corrupted, target, tokens=tokens, heads=False,
                     mask=mask)["resid_pre"]


def attribute_heads(model, clean, corrupted, target: Target, *, mask=None) -> Patching:
    """Attribution patching of each head's z (every position): [L, H], the gradient times the
    difference summed over positions and d_k."""
    return attribute(model, clean, corrupted, target, tokens=(), mask=mask)["z"]


def attribute(model, clean, corrupted, target: Target, *, tokens=None, heads: bool = True,
              mask=None) -> dict[str, Patching]:
    """Both attribution grids from one clean pass and one corrupted forward + backward:
    {"resid_pre": [L, len(tokens)], "z": [L, H]} (`tokens=()` leaves the first out, `heads=False`
    the second). Each Patching's `seconds` is the whole call's."""
    t0 = time.perf_counter()
    clean, corrupted = _batch1(clean), _batch1(corrupted)
    tokens = positions(model, target) if tokens is None else tuple(int(t) for t in tokens)
    sites = {k: v for k, v in (("resid_pre", tokens),
                               ("z", tuple(range(model.config.num_heads)) if heads else ()))
             if v}
    names = [_name(site, layer) for site in sites for layer in range(model.config.depth)]
    s_clean, kept = _clean(model, clean, target, names, mask)
    held: dict[str, torch.Tensor] = {}

    def hold(x: torch.Tensor, name: str) -> torch.Tensor:  # the tensor the pass goes on with
        if not x.requires_grad:  # frozen weights: make the first site a leaf to differentiate
            x = x.detach().requires_grad_(True)
        held[name] = x
        return x

    with torch.enable_grad():
        s = score(model, corrupted, target, hooks={n: hold for n in names}, mask=mask)[0]
        grads = dict(zip(names, torch.autograd.grad(s, [held[n] for n in names]), strict=True))
    s_corrupt = float(s.detach())
    d = _difference(s_clean, s_corrupt)
    out = {}
    for site, columns in sites.items():
        rows = []
        for layer in range(model.config.depth):
            n = _name(site, layer)
            term = (grads[n] * (kept[n] - held[n].detach()))[0].double()  # [S, D] / [H, S, d_k]
            rows.append(term.sum(-1)[list(columns)] if site == "resid_pre"
                        else term.sum((1, 2)))
        out[site] = Patching((torch.stack(rows) / d).float(), site, columns, s_clean,
                             s_corrupt, "attribution", time.perf_counter() - t0)
    return out


# ---------------------------------------------------------------- agreement
def agreement(exact: Patching, approx: Patching, k: int = 5) -> Agreement:
    """Pearson and Spearman correlation over every cell of two grids of one shape, and the
    share of the exact grid's k cells of largest |r| that are also among the other's k."""
    if exact.grid.shape != approx.grid.shape:
        raise ValueError(f"The grids differ in shape: {tuple(exact.grid.shape)} and "
                         f"{tuple(approx.grid.shape)}.")
    a, b = exact.grid.flatten().double(), approx.grid.flatten().double()
    k = min(k, a.numel())
    top_a = set(a.abs().topk(k).indices.tolist())
    top_b = set(b.abs().topk(k).indices.tolist())
    return Agreement(_pearson(a, b), _pearson(_ranks(a), _ranks(b)),
                     len(top_a & top_b) / k, k)


def _pearson(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a - a.mean(), b - b.mean()
    return float((a * b).sum() / (a.norm() * b.norm()))


def _ranks(a: torch.Tensor) -> torch.Tensor:
    """Ranks 0..n-1 (ties, which float grids rarely have, broken by position)."""
    r = torch.empty_like(a)
    r[a.argsort()] = torch.arange(a.numel(), dtype=a.dtype)
    return r
