"""The trace of the session's image as a download: every trace name in one .npz."""

from __future__ import annotations

import io

import numpy as np

from ui.selection.inputs import Input
from ui.serving.state import caption_pass, get_model, trace


def trace_npz(inp: Input, model_name: str, mask: str | None) -> bytes:
    """The trace as a compressed .npz: every trace name, plus `mask` (the additive mask used)
    and, for a captioner, `text_ids`: its pass with [SOS] and its greedy caption's words (the
    one that wrote the caption's last token), so the text logits are there, not 0 rows.

    A download button calls this when clicked, on a thread of its own where st.session_state
    does not exist: the caller passes the sidebar's mask, read in the script run.
    """
    if get_model(model_name).config.has_text:
        tr = caption_pass(inp, model_name, mask=mask)[2]
        extra = {"mask": tr.mask.numpy(), "text_ids": tr.text_ids.numpy()}
    else:
        tr = trace(inp, model_name, mask=mask)
        extra = {"mask": tr.mask.numpy()}
    buf = io.BytesIO()
    np.savez_compressed(buf, **{name: t.numpy() for name, t in tr.items()}, **extra)
    return buf.getvalue()
