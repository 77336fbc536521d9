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
        rows.append({"tensor": name, "shape": " × ".join(map(str, tr.shape(name))),
                     "in symbols": symbols,
                     "what it is": for_this_model(name, meaning, tr.config, tr.n_text)})
    return rows


def for_this_model(name: str, meaning: str, c, n_text: int = 0) -> str:
    """TRACE_NAMES' general meaning, said for this model: which prefix tokens it has, whether
    it has a final LayerNorm, and where its logits come from."""
    if name == "embed":
        prefix = "".join(f"{n}; " for n in c.prefix_names)
        text = ""
        if c.has_text:
            text = (" (then the text tokens + P_txt)" if n_text else
                    " (text tokens + P_txt would follow; none here: this pass was fed no text)")
        return f"block 0 input: [{prefix}patch_embed] + E_pos" + text
    if name == "ln_final" and c.fc_norm:
        return ("no final LayerNorm in this model (it normalises after pooling, with "
                "fc_norm): the last block's output, unchanged")
    if name == "logits":
        if c.has_text:
            return ("next-token logits at each text position" + (
                "" if n_text else " (none here: this pass was fed no text)"))
        if c.global_pool == "avg":
            return "class logits from the mean of the final patch tokens" + (
                " (after fc_norm)" if c.fc_norm else "")
        if c.dist_token:
            return "class logits: the mean of the CLS head's and the DIST head's"
        return "class logits from the final CLS token"
    return meaning
