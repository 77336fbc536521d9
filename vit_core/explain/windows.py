"""What windowed attention saves: the (query, key) pairs a window mask keeps, and the
multiply-adds of Q Kᵀ and A V that a windowed kernel would spend on them, against full attention.

Full attention weighs S² pairs per head and block: Q Kᵀ costs S·S·d_k multiply-adds per head and
A V as many, so 2·S²·D per block over the H heads. A window mask keeps fewer pairs (each patch
reads the M² patches of its window and the prefix tokens), and a kernel that computes only
those (Swin's) spends 2·pairs·D: O(N·M²) instead of O(N²). This app's model still computes all S²
scores and adds −∞ to the blocked ones, so its own pass costs the same; the count says what
attention in windows costs by construction. The other multiplications (Q, K, V, W_O, the MLP) do
not change.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import ViTConfig
from ..masks import window_keys, window_name


@dataclass(frozen=True)
class WindowCost:
    name: str  # the mask, "window:2" or "window:2:shifted"
    size: int  # M: windows of M x M patches
    pairs: tuple[int, ...]  # allowed (query, key) pairs in each block, per head
    full_pairs: int  # S², per head and block, under full attention
    macs: int  # Q Kᵀ and A V multiply-adds of one pass under the window mask, all heads, layers
    full_macs: int  # the same under full attention

    @property
    def ratio(self) -> float:
        """How many times fewer pairs (and Q Kᵀ, A V multiply-adds) than full attention."""
        return self.full_macs / self.macs


def window_cost(c: ViTConfig, size: int, shifted: bool = False, n_text: int = 0) -> WindowCost:
    """The pairs and the Q Kᵀ + A V multiply-adds of windows of size x size patches (shifted on
    odd blocks if `shifted`), against full attention, for one pass with n_text text tokens."""
    name = window_name(size, shifted)
    pairs = tuple(int(n) for n in window_keys(c, name, n_text).sum((1, 2)))  # (L,)
    S = c.num_image_tokens + n_text
    D = c.embed_dim  # H heads of d_k: Q Kᵀ costs pairs·d_k per head, pairs·D over the heads
    return WindowCost(name, size, pairs, S * S, 2 * D * sum(pairs), 2 * D * S * S * c.depth)
