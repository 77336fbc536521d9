"""Wording that several stages share: what reads the output, what the output is, what CLS
sees under a mask, token names. Worded from the config and the trace's mask; no Streamlit."""

from __future__ import annotations

from vit_core.explain.attention import allowed_from_mask
from vit_core.explain.readout import prefix_sees_no_patch
from vit_core.masks import parse_window


def labels(c) -> list[str]:
    g = c.grid
    return [*c.prefix_names, *(f"patch {i} ({i // g},{i % g})" for i in range(c.num_patches))]


def reader(c) -> str:
    """What the output reads (said in answers about order and positions)."""
    if c.has_text:
        return "the text tokens, which read every image token,"
    if c.global_pool == "avg":
        return "the mean of the patch tokens, which the class head reads,"
    if c.num_classes:
        return ("the CLS and DIST tokens, which the class heads read," if c.dist_token else
                "the CLS token, which the class head reads,")
    return ("the CLS token" if c.class_token else "the mean of the patch tokens")


def output(c) -> str:
    """What the model gives, as a plural noun phrase."""
    if c.has_text:
        return "the text logits"
    if c.num_classes:
        return "the class logits"
    return ("the final CLS vector and everything read from it" if c.class_token else
            "the final patch tokens' mean and everything read from it")


def image_block_full(tr) -> bool:
    n_img = tr.config.num_image_tokens
    return bool(allowed_from_mask(tr.mask)[:n_img, :n_img].all())


def reads_prefix(c) -> bool:
    """The output is read from CLS (and DIST) alone: a class head on CLS, or a headless model's
    CLS vector (as `_reader` and `_output` say)."""
    return c.class_token and not c.has_text and (c.global_pool != "avg" or not c.num_classes)


def prefix_blind(tr) -> bool:
    """Under this trace's mask, no CLS or DIST token sees a patch."""
    return prefix_sees_no_patch(tr.config, tr.mask)


def prefix_sight(tr) -> str:
    """What CLS (and DIST) see under this trace's mask, read from the mask: 'CLS sees only
    itself, and DIST only CLS and itself'."""
    names = tr.config.prefix_names
    allowed = allowed_from_mask(tr.mask)
    said = []
    for i, name in enumerate(names):
        seen = [("itself" if j == i else names[j]) for j in range(len(names))
                if bool(allowed[..., i, j].all())]  # in every block, for a per-block mask
        said.append(f"{name}{' sees' if not said else ''} only {' and '.join(seen)}")
    return ", and ".join(said)


def smaller_patch(c) -> int | None:
    """The other patch size the question asks about: half of P when it divides the image (16 ->
    8), else the largest size below P that does; None if there is none."""
    if c.patch_size % 2 == 0 and c.img_size % (c.patch_size // 2) == 0:
        return c.patch_size // 2
    return next((s for s in range(c.patch_size - 1, 1, -1) if c.img_size % s == 0), None)


WINDOW_SIZES = (1, 2, 3, 4)  # window sides M offered (those smaller than the grid)


def window_sizes(c) -> tuple[int, ...]:
    """The window sides M offered for a model with config `c`: those smaller than its grid."""
    return tuple(m for m in WINDOW_SIZES if m < c.grid)


def mask_label(name: str) -> str:
    """How a mask is named in a picker: 'causal', 'window 2×2', 'window 2×2, shifted'."""
    parsed = parse_window(name)
    if parsed is None:
        return name
    m, shifted = parsed
    return f"window {m}×{m}" + (", shifted" if shifted else "")


def offered(sizes: dict[str, int], right: str, order: list[str]) -> tuple[list[str], int]:
    """Choose-one options: `right`, and of the rest of `sizes` (name -> size; those as large as
    `right` are left out, being right too) the largest, the middle one and the smallest: at most
    4, in `order` (the table's) so that where the right one stands tells nothing.
    Returns (the names, the right one's index)."""
    rest = sorted((k for k in sizes if sizes[k] != sizes[right]), key=lambda k: -sizes[k])
    picks = sorted({right, *(rest[i] for i in {0, len(rest) // 2, -1} if rest)}, key=order.index)
    return picks, picks.index(right)
