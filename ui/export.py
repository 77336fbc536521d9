"""The trace of the session's image as a download: every trace name in one .npz."""

from __future__ import annotations

import io

import numpy as np

from .inputs import Input
from .state import trace


def trace_npz(inp: Input, model_name: str, mask: str | None) -> bytes:
    """The trace as a compressed .npz: every trace name, plus `mask` (the additive mask used).

    A download button calls this when clicked, on a thread of its own where st.session_state
    does not exist: the caller passes the sidebar's mask, read in the script run.
    """
    tr = trace(inp, model_name, mask=mask)
    buf = io.BytesIO()
    np.savez_compressed(buf, **{name: t.numpy() for name, t in tr.items()},
                        mask=tr.mask.numpy())
    return buf.getvalue()
