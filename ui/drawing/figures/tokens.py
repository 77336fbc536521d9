"""Token names and which of them an axis prints: labels for every position, ticks that
never print over each other."""

from __future__ import annotations

from ui.drawing.readable import TEXT_PX


def token_labels(config, words: list[str] | None = None) -> list[str]:
    """A readable name for every token position: CLS (and DIST), patches with (row, col), words.

    Token numbers count from 0 over the whole sequence, so with a CLS token patch p is token
    p + 1: these labels name the patch, never the bare token number."""
    g = config.grid
    labels = list(config.prefix_names)
    labels += [f"patch {i} ({i // g},{i % g})" for i in range(config.num_patches)]
    labels += [f"text {t}: {w}" for t, w in enumerate(words or [])]
    return labels


def token_ticks(labels: list[str], grid: int, min_gap: int = 1) -> list[str]:
    """Which token labels to print on an axis: every CLS / DIST and text token, and the first
    patch of each patch row (every patch when there are few).

    Args:
        min_gap: drop a patch tick closer than this many tokens to the tick before it, so that
            labels on a short axis do not print over each other (CLS / DIST / text stay)."""
    few = len(labels) <= 24
    shown = [lab for lab in labels if few or not lab.startswith("patch ")
             or int(lab.split()[1]) % grid == 0]
    if min_gap <= 1:
        return shown
    where = {lab: i for i, lab in enumerate(labels)}
    kept: list[str] = []
    for lab in shown:
        if lab.startswith("patch ") and kept and where[lab] - where[kept[-1]] < min_gap:
            continue
        kept.append(lab)
    return kept


def tick_gap(n_rows: int, height: int, font_px: int = TEXT_PX) -> int:
    """How many rows apart two tick labels must be so they do not overlap on a heatmap of
    `n_rows` rows drawn `height` pixels tall (about 60 px go to the title and x axis)."""
    return max(1, -(-n_rows * font_px // max(1, height - 60)))



# A tick label turned 90° stands across its axis by the height of its glyphs (ascender to
# descender, about 0.9 em), not by its length: such labels 13 px apart stand side by side at 14 px.
TURNED_GAP_PX = TEXT_PX - 1


def spaced_ticks(labels: list[str], grid: int, span_px: float,
                 min_px: float = TEXT_PX + 2) -> list[str]:
    """Ticks for a token axis `span_px` pixels long that never print over each other: CLS /
    DIST first, then [SOS] and the words, then the first patch of each grid row, each kept only
    if it is at least `min_px` from every tick kept before it."""
    per = span_px / max(1, len(labels))
    prefix = [i for i, t in enumerate(labels) if not t.startswith(("patch ", "text "))]
    words = [i for i, t in enumerate(labels) if t.startswith("text ")]
    rows = [i for i, t in enumerate(labels) if t.startswith("patch ")
            and int(t.split()[1]) % grid == 0]
    kept: list[int] = []
    for i in prefix + words + rows:
        if all(abs(i - j) * per >= min_px for j in kept):
            kept.append(i)
    return [labels[i] for i in sorted(kept)]


def prefix_ticks(labels: list[str], grid: int, prefix_names: tuple[str, ...]) -> tuple[list,
                                                                                     dict]:
    """Ticks for a big token axis that keep CLS / DIST readable: token_ticks without patch 0
    (a boundary line marks where the patches start, and its tick would print over CLS's), and
    with CLS and DIST side by side in a long sequence one tick "CLS, DIST" (theirs would print
    over each other). Returns (ticks, tick_text) for matrix_heatmap."""
    ticks = token_ticks(labels, grid)
    if len(labels) <= 24 or not prefix_names:
        return ticks, {}
    ticks = [t for t in ticks if not t.startswith("patch 0 ")]
    if len(prefix_names) > 1:
        ticks = [t for t in ticks if t not in prefix_names[1:]]
        return ticks, {prefix_names[0]: ", ".join(prefix_names)}
    return ticks, {}
