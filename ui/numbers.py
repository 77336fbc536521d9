"""How the app prints a share: percent that never rounds a non-zero value to 0 % or a value
under 1 to 100 % (no Streamlit here)."""

from __future__ import annotations


def percent(p: float, digits: int = 0) -> str:
    """p in percent with `digits` decimals; '<1%' / '>99%' (or '<0.1%' / '>99.9%' with one
    decimal) where rounding would print 0 % for a non-zero value or 100 % for one under 1."""
    text = f"{p:.{digits}%}"
    step = 10.0 ** -digits
    if p > 0 and float(text[:-1]) == 0:
        return f"<{step:g}%"
    if p < 1 and float(text[:-1]) == 100:
        return f">{100 - step:g}%"
    return text
