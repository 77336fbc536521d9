"""How the app prints numbers: one formatter for shares (`pct`), and ranges (`span`).
No Streamlit here."""

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


def pct(x: float, decimals: int | None = None) -> str:
    """A share in percent, as the whole app prints one: one decimal under 10 % and from 99.5 %,
    none between (unless `decimals` is given); never 0 % above 0 nor 100 % below 1."""
    d = decimals if decimals is not None else (1 if x < 0.1 or 0.995 <= x < 1 else 0)
    return percent(x, d)


def pct_at_least(x: float, figures: int = 2) -> str:
    """A small share with `figures` significant digits (0.24 %, not 0.2 %), so that a bound
    printed from it ("no class gets more than ...") is not smaller than what a chart shows."""
    import math

    if x <= 0:
        return "0%"
    digits = max(0, figures - 1 - math.floor(math.log10(x * 100)))
    return percent(x, digits)


def points(d: float) -> str:
    """The size of a difference of two shares in percentage points: '12 points', '1 point',
    '<1 point' for a non-zero one that rounds to 0 (the sign is the caller's to word)."""
    n = round(abs(d) * 100)
    if n == 0 and d != 0:
        return "<1 point"
    return f"{n} point{'' if n == 1 else 's'}"


def span(lo: str, hi: str) -> str:
    """'9–12', or '9' when both ends print the same."""
    return lo if lo == hi else f"{lo}–{hi}"
