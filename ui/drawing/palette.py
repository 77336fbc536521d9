"""The figures' colours, named once (issue 43: colour never carries meaning alone; text 4.5:1
and meaningful marks 3:1 against what they are drawn on). Pure: no streamlit, no plotly.

A chart is drawn on the page's own background (Streamlit's chart theme leaves the paper
transparent): white in the light theme, PAGE_DARK in the dark one. So a line, a marker or a bar
that carries meaning must stand out 3:1 against both, which holds for colours whose relative
luminance lies between about 0.12 and 0.30; MARKS are the Okabe–Ito colours (Okabe & Ito 2002,
"Color Universal Design", told apart with every common colour-vision deficiency) moved into
that band where they were outside it (orange, sky blue; yellow and black cannot be: they are
left out). Colour is never the only cue: each categorical figure also gets names (legend, text
in cells) and one of SYMBOLS / DASHES / PATTERNS per category.

Continuous maps: SEQUENTIAL (viridis, perceptually uniform, readable in greyscale and with
every common colour-vision deficiency) and, for values either side of zero, DIVERGING (RdBu:
a red–blue map whose two arms differ in lightness as well as hue, so a red-green deficiency
still tells them apart; zero is the light middle), each with a colour bar saying what colour is.
"""

from __future__ import annotations

PAGE_LIGHT = "#ffffff"  # Streamlit's light theme background (a chart's transparent paper)
PAGE_DARK = "#0e1117"  # its dark theme background
PAGES = (PAGE_LIGHT, PAGE_DARK)

# Okabe–Ito, as published: for fills under dark text (a cell's window, a class map's region)
OKABE_ITO = {"orange": "#E69F00", "sky blue": "#56B4E9", "bluish green": "#009E73",
             "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00",
             "reddish purple": "#CC79A7", "black": "#000000"}

BLUE, VERMILLION, GREEN = "#0072B2", "#D55E00", "#009E73"  # 5.2 / 3.9 / 3.4 : 1 on white
ORANGE, PURPLE, SKY = "#B07A00", "#CC79A7", "#3A8FC0"  # Okabe–Ito's, darkened to >= 3:1
NEUTRAL = "#7A7A7A"  # a reference, a "before", the kept steps: 4.3:1 on white, 4.4:1 on dark
MARKS = (BLUE, VERMILLION, GREEN, ORANGE, PURPLE, SKY, NEUTRAL)  # categories, in this order

BEFORE, AFTER = NEUTRAL, VERMILLION  # a run before a change and after it
POSITIVE, NEGATIVE = BLUE, VERMILLION  # a signed value's bar (blue above zero, red below)
RIGHT, WRONG, UNMARKED = GREEN, VERMILLION, NEUTRAL  # a class's answers

SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star", "cross",
           "triangle-down", "hexagon", "pentagon", "star-square", "hourglass")
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
PATTERNS = ("", "/", ".", "x", "\\", "+", "-", "|")  # a bar's fill pattern, "" plain

SEQUENTIAL = "Viridis"  # one value from low to high
DIVERGING = "RdBu_r"  # a signed value: blue below zero, red above, white at zero

# An outline that carries meaning (a selected cell, a patch, a border between token blocks) is
# drawn twice: OUTLINE_DARK under OUTLINE_LIGHT, thinner. Whatever is under it, one of the two
# stands out: any colour is at least 4.6:1 from black or from white.
OUTLINE_DARK, OUTLINE_LIGHT = "#000000", "#ffffff"
SELECTED = "#FFD60A"  # a selected patch's inner line (on black: 14.7:1)
# white text drawn over a picture gets a dark halo: 4.5:1 against whatever it sits on
HALO = "0 0 2px #000, 0 0 2px #000, 0 0 3px #000"


def mark(i: int) -> dict:
    """Category i's colour, marker symbol, dash and bar pattern, each cycling on its own."""
    return dict(colour=MARKS[i % len(MARKS)], symbol=SYMBOLS[i % len(SYMBOLS)],
                dash=DASHES[i % len(DASHES)], pattern=PATTERNS[i % len(PATTERNS)])


def translucent(colour: str, alpha: float) -> str:
    """A "#rrggbb" colour as CSS rgba with this opacity."""
    h = colour.lstrip("#")
    return "rgba({},{},{},{})".format(*(int(h[i:i + 2], 16) for i in (0, 2, 4)), alpha)


def _linear(channel: int) -> float:
    c = channel / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def luminance(colour: str) -> float:
    """WCAG 2.1's relative luminance of a "#rrggbb" colour."""
    h = colour.lstrip("#")
    r, g, b = (_linear(int(h[i:i + 2], 16)) for i in (0, 2, 4))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2.1's contrast ratio of two colours (1 to 21)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def ink_on(fill: str) -> str:
    """Black or white, whichever reads better on `fill` (never under 4.58:1)."""
    return "#000000" if contrast(fill, "#000000") >= contrast(fill, "#ffffff") else "#ffffff"


def hatch(shape: str, fill: str) -> dict:
    """A bar's fill pattern drawn over its colour `fill` (plotly's default "replace" mode drops
    the colour): lines in whichever of black and white is not the text's ink on `fill`, so the
    text printed in the bar reads on both."""
    lines = "#ffffff" if ink_on(fill) == "#000000" else "#000000"
    return dict(shape=shape, fillmode="overlay", fgcolor=lines, solidity=0.3)


def outlined(shape: dict, width: float = 2, light: str = OUTLINE_LIGHT) -> list[dict]:
    """A shape's line drawn twice (dark, 2 px wider, under `light`); its dash kept on top."""
    line = dict(shape.get("line") or {})
    under = {**shape, "line": {**line, "color": OUTLINE_DARK, "width": width + 2, "dash": "solid"}}
    over = {**shape, "line": {**line, "color": light, "width": width}}
    return [under, over]
