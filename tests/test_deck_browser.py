"""Presenter mode is a slide deck, in a real browser (Chromium, Playwright, `streamlit run`).

For every step of every stage, on the bundled classifier, a captioner and a ViT-B/16-size preset,
at 1280×720, 1024×768 and 1920×1080: nothing scrolls (the page is at most the screen's height)
and the key figure is whole on the screen. After a Reveal, Play or a click on a figure the
clicker still moves the deck; after scrolling, the next step opens at its top.
"""


import pytest

from tests.slides import problems_on, settle
from tools.browser import IDLE_JS, ROOT, serve, wait_idle
from ui.routes import STAGES as ROUTES

LAST = len(ROUTES) - 1  # the numbered stages: 'Stage 1/LAST' … (the overview is not numbered)

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

SHOTS = ROOT / "screenshots" / "deck"
SCREENS = [(1280, 720), (1024, 768), (1920, 1080)]
ORDER = list(ROUTES)

@pytest.fixture(scope="module")
def server():
    with serve() as srv:
        yield srv.url


def headers(model: str) -> list[str]:
    """'Overview · step 1/1', 'Stage 1/10 · step 1/3', …: every step of every stage, in order,
    from the stages' declarations for this model."""
    from ui import stages
    from vit_core import load_model

    c = load_model(model).config
    out = []
    for i, slug in enumerate(ORDER):
        n = len(stages.get(slug).steps_for(c))
        out += [f"{f'Stage {i}/{LAST}' if i else 'Overview'} · step {k + 1}/{n}" for k in range(n)]
    return out


def at(page, header: str) -> None:
    """Wait for the step's header, for the run to end, and for the clicker's keys to be heard
    (ui/presenter.DECK_JS sets them up from a component's iframe, which may load after the run:
    a key pressed before is lost)."""
    page.locator(".st-key-presenter_where").get_by_text(header).wait_for(timeout=90_000)
    page.wait_for_function(IDLE_JS, timeout=120_000)
    page.wait_for_function("() => document.__vitDeck === true", timeout=60_000)


# The bundled classifier on the projector (1280×720) and the narrowest screen (1024×768, where
# text wraps most); the captioner at the narrowest and the ViT-B/16-size preset at the projector's
# size. A walk costs about a second per step and screen, and the walks share the CI's budget:
# 1920×1080 (more room both ways than both): `tools/screenshots.py --presenter --width 1920
# --height 1080` shows every step there.
WALKS = [("shapes-classifier", SCREENS[:2]), ("shapes-captioner-causal", [SCREENS[1]]),
         ("vit-b16", [SCREENS[0]])]


FOCUS_JS = "() => (document.activeElement || document.body).outerHTML.slice(0, 160)"


@pytest.mark.parametrize(("model", "screens"), WALKS, ids=[m for m, _ in WALKS])
def test_every_step_fits_every_projector(browser, server, model, screens):
    """Presenter mode from the overview's first step to the experiments' last, one ArrowRight
    at a time; at every step, the slide on every screen of the walk."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    w0, h0 = screens[0]
    page = browser.new_page(viewport={"width": w0, "height": h0})
    page.goto(f"{server}/?page=overview&presenter=1&model={model}")
    sequence = headers(model)
    problems = []
    for i, header in enumerate(sequence):
        try:
            at(page, header)
        except playwright.TimeoutError:  # say where the deck stood and what held the focus
            page.screenshot(path=str(SHOTS / f"{model}-{i}-stuck.png"))
            raise AssertionError(f"{header} never came: the header says "
                                 f"{page.locator('.st-key-presenter_where').inner_text()!r}, "
                                 f"the focus is on {page.evaluate(FOCUS_JS)!r}") from None
        assert page.locator("[data-testid='stException']").count() == 0, header
        for w, h in screens:
            if (w, h) != (w0, h0) or len(screens) > 1:
                page.set_viewport_size({"width": w, "height": h})
            settle(page)
            found = problems_on(page, f"{header} at {w}×{h}")
            if found:
                page.screenshot(path=str(SHOTS / f"{model}-{i}-{w}.png"))
            problems += found
        page.set_viewport_size({"width": w0, "height": h0})
        if i < len(sequence) - 1:
            page.keyboard.press("ArrowRight")
    page.close()
    assert not problems, "\n".join(problems)


def test_the_clicker_moves_on_after_reveal_play_and_a_click_on_the_figure(browser, server):
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    page.goto(f"{server}/?page=attention&presenter=1&step=3")
    at(page, f"Stage 4/{LAST} · step 3/6")
    page.get_by_text("Reveal").first.click()  # the question's answer shows
    page.get_by_text("the top of the maps' shared scale").first.wait_for(timeout=30_000)
    wait_idle(page)
    page.keyboard.press("ArrowRight")
    at(page, f"Stage 4/{LAST} · step 4/6")
    for k in (3, 2, 1):  # one key at a time: each is a run of the app
        page.keyboard.press("ArrowLeft")
        at(page, f"Stage 4/{LAST} · step {k}/6")
    page.get_by_role("button", name="Play").click()
    page.get_by_role("button", name="Pause").wait_for(timeout=30_000)
    page.keyboard.press("ArrowRight")
    at(page, f"Stage 4/{LAST} · step 2/6")
    page.keyboard.press("ArrowLeft")
    at(page, f"Stage 4/{LAST} · step 1/6")
    page.get_by_role("button", name="Pause").click()  # stop playing
    wait_idle(page)
    box = page.locator(".st-key-deck_figure [data-testid='stPlotlyChart']").first
    box.wait_for()
    settle(page)
    box.click()
    page.keyboard.press("ArrowRight")
    at(page, f"Stage 4/{LAST} · step 2/6")
    ctx.close()


def test_after_scrolling_the_next_step_opens_at_its_top(browser, server):
    """On a screen too short for the slide (the figure keeps a minimum height) the page
    scrolls; the next step must not open scrolled down."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 360})
    page = ctx.new_page()
    page.goto(f"{server}/?page=attention&presenter=1")
    at(page, f"Stage 4/{LAST} · step 1/6")
    settle(page)
    scrolled = page.evaluate("""() => { const m = document.querySelector('[data-testid="stMain"]');
        m.scrollTop = m.scrollHeight; return m.scrollTop; }""")
    assert scrolled > 0, "the short screen should scroll"
    page.keyboard.press("ArrowRight")
    at(page, f"Stage 4/{LAST} · step 2/6")
    settle(page)
    top = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop")
    assert top == 0
    ctx.close()
