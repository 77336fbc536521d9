"""Tables built from a trace (plain data; no streamlit)."""

from __future__ import annotations

from vit_core.trace import TRACE_NAMES, name_pattern


def stage_table(tr, blocks: tuple[int, ...] | None = None) -> list[dict]:
    """One row per trace tensor: name, live shape, symbolic shape, meaning.

    Args:
        blocks: which block indices to list (default: the first and the last).
    """
    depth = tr.config.depth
    keep = set(blocks if blocks is not None else {0, depth - 1})
    rows = []
    for name in tr.names():
        if name.startswith("blocks.") and int(name.split(".")[1]) not in keep:
            continue
        symbols, meaning = TRACE_NAMES[name_pattern(name)]
        rows.append({"tensor": name, "shape": " × ".join(map(str, tr[name].shape)),
                     "in symbols": symbols, "what it is": meaning})
    return rows
