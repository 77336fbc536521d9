"""What tests/test_figure_alt.py and tests/test_figure_alt_more.py share: a page opened once per
(stage, model) and its figures' text alternatives as drawn, and how a printed number is read
back (its value and how far the true one may be from it). The words are
ui/drawing/describe.py's."""

from __future__ import annotations

import html
import json
import re

from tests.support import open_app
from ui.stages.why.keys import WHY_GUESS_GRID, WHY_GUESS_PICK, WHY_GUESS_TEST
from vit_core import load_model
from vit_core.explain.why_guess_facts import guess_size

ALT = re.compile(r"<p class='figure-alt[^']*' id='alt-([a-z_0-9]+)-([\w-]+)'>"
                 r"<strong>Figure:</strong> (.*?)</p>", re.S)
# a printed number on its own ('0.83', '-1.5', '1,234', '12%', '<1%'): the checks' patterns
NUM = r"[<>]?-?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?%?"
# every number a sentence states, none glued to a word, a bound or a shape ('7×7')
STATED = re.compile(r"(?<![\w.<>])([-+−]?\d[\d,]*(?:\.\d+)?(?:\s?%)?)(?![\w.]*×)")

_pages: dict = {}
GUESS_GRID: dict = {}  # model -> the why page's guess step before the test: (its alt, its grid)


def page_of(slug: str, model: str):
    """The app's page `slug` on `model` under AppTest, opened once for every test that reads it
    (no st.error allowed). The why page with a guess tested (`_guess_tested`)."""
    if (slug, model) not in _pages:
        if slug == "why":
            _pages[(slug, model)] = _guess_tested(model)
        else:
            _pages[(slug, model)] = open_app(slug, model, no_error=True)
    return _pages[(slug, model)]


def _guess_tested(model: str):
    """The why page as a student alone has it after a guess: the first k patches chosen (the
    grid it draws then kept in GUESS_GRID) and "Test my guess" pressed, so that the guess step
    shows its scores and no later step is held back."""
    k = guess_size(load_model(model).config.grid)
    at = open_app("why", model, no_error=True, state={WHY_GUESS_PICK: list(range(k))})
    grid = [json.loads(e.proto.spec) for e in at.get("plotly_chart")
            if e.proto.id.endswith("-" + WHY_GUESS_GRID)]
    if not grid:  # no guess on this model (a headless encoder: no answer to explain)
        return at
    GUESS_GRID[model] = (alternatives(at, "why")["guess"], grid[0])
    at.button(key=WHY_GUESS_TEST).click().run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    return at


def alternatives(at, slug: str) -> dict[str, str]:
    """Step key -> the text of its `figure-alt` element, read from the page's st.html bodies."""
    return {m[2]: html.unescape(m[3]) for body in (e.proto.body for e in at.get("html"))
            for m in ALT.finditer(body) if m[1] == slug}


def printed(text: str) -> tuple[float, float]:
    """A printed number as (value, how far the true one may be): the half of its last digit;
    '<1%' as anything from 0 to 1 %."""
    t = text.replace(",", "").replace(" ", "").replace("−", "-")
    scale = 0.01 if t.endswith("%") else 1.0
    t = t.rstrip("%")
    if t[0] in "<>":
        bound = float(t[1:]) * scale
        return (bound / 2, bound / 2) if t[0] == "<" else ((bound + scale * 100) / 2,
                                                           (scale * 100 - bound) / 2)
    mant, _, exp = t.partition("e")
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    return float(t) * scale, 0.5 * 10.0 ** (int(exp or 0) - decimals) * scale


def close(text: str, actual: float, what: str = "") -> None:
    """The printed `text` is `actual` at its own precision."""
    v, tol = printed(text)
    assert abs(v - float(actual)) <= tol * 1.001 + 1e-6 * max(1.0, abs(float(actual))), (
        what, text, float(actual))


def numbers(text: str) -> list[tuple[float, float, str]]:
    """Every number a sentence states: (value, how far the true one may be, as printed)."""
    return [(*printed(s), s) for s in STATED.findall(text)]


def stated_in(value: float, tol: float, pool: list[float]) -> bool:
    """Some value of `pool` prints as `value` (within `tol`)."""
    return any(abs(value - p) <= tol * (1 + 1e-6) + 1e-9 for p in pool)
