"""Every equation the app draws, with its words for a screen reader (docs/accessibility.md,
"Equations").

KaTeX draws an equation as MathML (what a screen reader gets) and HTML (what the eye gets, hidden
from screen readers); Orca 43 read the MathML one symbol at a time and lost a fraction or a root.
`latex` draws the equation with st.latex and, right after it, its words (ui/drawing/speech.py)
in a visually hidden paragraph; the page's script (ui/drawing/a11y.py) hides the equation's
MathML from screen readers where those words follow it, so a reader says the words instead.
"""

from __future__ import annotations

import html

import streamlit as st

from ui.drawing.speech import spoken

SAID = "eq-said"  # the class of the words' paragraph (ui/drawing/a11y.py's script finds it)
SAY = "Equation: "  # what the words start with


def latex(tex: str, where=None) -> None:
    """Draw the equation `tex` (st.latex, or `where.latex`: a column or a container) and its
    words after it, in the same place."""
    box = st if where is None else where
    box.latex(tex)
    box.html(f"<p class='sr-only {SAID}'>{SAY}{html.escape(spoken(tex))}</p>")
