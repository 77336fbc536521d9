"""Presenter mode is a slide deck, in a real browser (Chromium, Playwright, `streamlit run`).

For every step of every stage on the bundled classifier at 1280×720, and of the stages up to UNTIL
on a ViT-B/16-size preset at 1280×720 and a captioner at 1024×768 (WALKS): nothing scrolls (the page
is at most the screen's height) and the key figure is whole on the screen, has half of the slide, no
text in it is drawn under 14 px (slides.small_text), and its pictures keep their shape; nothing on
the slide is cut or drawn over, reached with → or by a link; every formula parses. After a Reveal,
Play, a click on a figure, a slider moved or a choice made with the mouse the clicker still moves
the deck; after scrolling, the next step opens at its top; the speaker notes have their own window.
"""


import pytest

from tests.slides import KATEX_ERRORS_JS, figure_problems, problems_on, settle
from tools.browser import IDLE_JS, ROOT, serve, wait_idle
from ui import keys, stages
from ui.stages import BY_SLUG as ROUTES

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
    from the stages' declarations for this model (up to its UNTIL stage)."""
    from ui import stages
    from vit_core import load_model

    c = load_model(model).config
    out = []
    for i, slug in enumerate(ORDER):
        if slug == UNTIL.get(model):
            break
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


# The bundled classifier and the ViT-B/16-size preset on the projector (1280×720), the captioner
# on the narrowest screen (1024×768, where text wraps most). A walk costs about a second per
# step and screen, and the walks share the CI's 15 minutes: the classifier at 1024×768 too
# (~40 s more) and 1920×1080 (more room both ways than both) are `tools/screenshots.py
# --presenter --width W --height H`, which shows every step there.
WALKS = [("shapes-classifier", [SCREENS[0]]), ("shapes-captioner-causal", [SCREENS[1]]),
         ("vit-b16", [SCREENS[0]])]
# axe-core's audit: the bundled classifier's walk at 1280×720 and on a phone (PHONE: the window
# resized, no second session), one audit a step and size (0.15-1 s each on a loaded 2-core
# machine; the walk 64 -> 100 s alone); every step of the other models and a following
# student's screen at every step: `tools/axe.py --walk [--model …]` (docs/accessibility.md)
AXE_WALK = ("shapes-classifier", SCREENS[0])
PHONE = (390, 844)  # the classifier's walk audits every slide on a phone too (the window resized)
# a walk that ends before this stage (the CI's 15 minutes): the ViT-B/16-size preset's walk
# covers the stages whose key figures grow with the model (12 blocks and heads, 14×14 patches,
# 768 and 3072 features, 1000 classes); from the Shape trace on, its slides are tables and
# words (Shapes), one sentence (Segmentation: it has no such head), the classifier's (Training:
# any preset's, MAE: the bundled MAE's) or minutes of both cores (Why): `tools/screenshots.py
# --presenter --model vit-b16` shows them. The captioner's walk ends before the Why stage: its
# slides are the classifier's (that walk has them) but for the caption's words, whose numbers
# tests/test_why_words.py checks; on the server they are the captioner's six maps, table, Sanity
# and exact patching (`tools/screenshots.py --presenter --model shapes-captioner-causal`)
UNTIL = {"vit-b16": "shapes", "shapes-captioner-causal": "why"}


# slides the classifier's walk also opens by a link: those that once differed from the same
# slide reached with → (Logits step 1, Overview step 2), and pictures side by side
# (Segmentation, MAE)
LINKED = [("overview", 2), ("logits", 1), ("segmentation", 2), ("mae", 1)]


FOCUS_JS = "() => (document.activeElement || document.body).outerHTML.slice(0, 160)"


@pytest.mark.parametrize(("model", "screens"), WALKS, ids=[m for m, _ in WALKS])
def test_every_step_fits_every_projector(browser, server, axe, model, screens):
    """Presenter mode from the overview's first step to the last stage's last, one ArrowRight
    at a time; at every step, the slide on every screen of the walk (tests/slides.py: nothing
    scrolls or is cut, the key figure has half of the slide, pictures keep their shape), and
    axe-core's WCAG 2.1 A/AA rules on the walk's first screen and (the classifier) on a phone
    (tools/axe.py: 0 violations outside its documented list); then (the classifier) a few
    slides opened by a link. The ViT-B/16-size walk stops before the Shape trace and the
    captioner's before the Why stage (UNTIL: why there); the classifier's walks every stage
    (tests/test_why_held.py draws the big model's waiting steps). Every formula on a slide must
    parse (KaTeX's errors)."""
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
            found += figure_problems(page, f"{header} at {w}×{h}")
            if (w, h) == (w0, h0):  # every formula parsed (the same formulas on every screen)
                found += [f"{header}: {p}" for p in dict.fromkeys(page.evaluate(KATEX_ERRORS_JS))]
            if (model, (w, h)) == AXE_WALK:
                found += axe(page, f"{header} at {w}×{h}")
            if found:
                page.screenshot(path=str(SHOTS / f"{model}-{i}-{w}.png"))
            problems += found
        if model == AXE_WALK[0]:  # the same slide on a phone: its layout, its tab stops
            page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
            settle(page)
            found = axe(page, f"{header} at {PHONE[0]}×{PHONE[1]}")
            if found:
                page.screenshot(path=str(SHOTS / f"{model}-{i}-{PHONE[0]}.png"))
            problems += found
        page.set_viewport_size({"width": w0, "height": h0})
        if i < len(sequence) - 1:
            page.keyboard.press("ArrowRight")
    # the same slides opened by a link (?step=), on the walk's first screen: a slide drawn
    # first, not after the step before it (reached with →, Logits step 1 once lost its equation)
    for slug, k in LINKED if model == AXE_WALK[0] else []:  # (how a slide is opened: one model)
        stage = ORDER.index(slug)
        header = next((x for x in sequence if x.startswith(
            f"{f'Stage {stage}/{LAST}' if stage else 'Overview'} · step {k}/")), None)
        if header is None:  # the stage has fewer steps for this model
            continue
        page.goto(f"{server}/?page={slug}&presenter=1&step={k}&model={model}")
        at(page, header)
        settle(page)
        problems += problems_on(page, f"{header} by link at {w0}×{h0}")
        problems += figure_problems(page, f"{header} by link at {w0}×{h0}")
    page.close()
    assert not problems, "\n".join(problems)


def press(page, key: str, header: str) -> None:
    """Press a clicker's key and wait until the deck stands at `header` (generous waits: a busy
    2-core machine runs a step in seconds); if it never does, say where the deck stood, what
    held the focus and whether the app was still running."""
    page.keyboard.press(key)
    try:
        at(page, header)
    except playwright.TimeoutError:
        state = page.evaluate("() => (document.querySelector('[data-testid=\"stApp\"]') || "
                              "document.body).getAttribute('data-test-script-state')")
        raise AssertionError(f"{key} did not reach {header!r}: the header says "
                             f"{page.locator('.st-key-presenter_where').inner_text()!r}, the "
                             f"focus is on {page.evaluate(FOCUS_JS)!r}, the app is {state}"
                             ) from None


def test_the_clicker_moves_on_after_reveal_play_and_a_click_on_the_figure(browser, server):
    """Each key is pressed once the page has settled (the thing clicked has done its part: the
    answer shown, the layers playing), and the deck must then stand at the next step. Red when
    the clicker is broken: a toggle, a button or a chart that keeps the focus eats the key."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    page.goto(f"{server}/?page=attention&presenter=1&step=3")
    at(page, f"Stage 4/{LAST} · step 3/6")
    page.get_by_text("Reveal").first.click()  # the question's answer shows
    page.locator(".st-key-ask_attention_heads [data-testid='stAlert']").wait_for(timeout=120_000)
    wait_idle(page, 240_000)
    press(page, "ArrowRight", f"Stage 4/{LAST} · step 4/6")
    for k in (3, 2, 1):  # one key at a time: each is a run of the app
        press(page, "ArrowLeft", f"Stage 4/{LAST} · step {k}/6")
    page.get_by_role("button", name="Play").click()
    page.get_by_role("button", name="Pause").wait_for(timeout=120_000)  # it plays: keys now
    press(page, "ArrowRight", f"Stage 4/{LAST} · step 2/6")
    press(page, "ArrowLeft", f"Stage 4/{LAST} · step 1/6")
    pause = page.get_by_role("button", name="Pause")
    if pause.count():  # still playing (a slow machine): stop, so the page holds still
        pause.click()
    page.get_by_role("button", name="Play").wait_for(timeout=120_000)
    wait_idle(page, 240_000)
    box = page.locator(".st-key-deck_figure [data-testid='stPlotlyChart']").first
    box.wait_for(timeout=60_000)
    settle(page)
    box.click()
    wait_idle(page, 240_000)
    press(page, "ArrowRight", f"Stage 4/{LAST} · step 2/6")
    ctx.close()


SLIDER_JS = ("k => { const e = document.querySelector(`.st-key-${k} input[type=range]`); "
             "return e ? +e.value : null; }")


def drag(page, key: str, to: float) -> int:
    """Click a slider's track with the mouse at `to` (0..1 of its width); its value after."""
    page.locator(f".st-key-{key} input[type=range]").wait_for(state="attached", timeout=120_000)
    wait_idle(page, 240_000)
    before = page.evaluate(SLIDER_JS, key)
    track = page.locator(f".st-key-{key} [role=group] > div").first.bounding_box()
    page.mouse.click(track["x"] + track["width"] * to, track["y"] + track["height"] / 2)
    page.wait_for_function(f"k => ({SLIDER_JS})(k) !== {before}", arg=key, timeout=60_000)
    wait_idle(page, 240_000)
    return page.evaluate(SLIDER_JS, key)


def choose(page, key: str, option: str) -> None:
    """Open a list (a select or a multiselect) with the mouse and click one of its options."""
    page.locator(f".st-key-{key} [role=combobox]").first.click()
    page.get_by_role("option", name=option, exact=True).click()
    wait_idle(page, 240_000)


def test_the_clicker_moves_on_after_a_slider_and_a_list_changed_with_the_mouse(browser, server):
    """→ and PageDown move the deck after a slider moved and a choice made with the mouse (the
    control must not keep the keys: red when → moves the slider or the list eats PageDown);
    a slider reached with Tab keeps its arrows (a keyboard user), PageDown still moves on."""
    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    page.goto(f"{server}/?page=attention&presenter=1&step=1")
    at(page, f"Stage 4/{LAST} · step 1/6")
    head = drag(page, keys.HEAD, 0.9)
    press(page, "ArrowRight", f"Stage 4/{LAST} · step 2/6")
    assert page.evaluate(SLIDER_JS, keys.HEAD) == head, "→ moved the slider, not only the deck"
    layer = drag(page, keys.LAYER, 0.1)
    press(page, "PageDown", f"Stage 4/{LAST} · step 3/6")
    assert page.evaluate(SLIDER_JS, keys.LAYER) == layer
    for _ in range(40):  # a keyboard user tabs to the layer slider
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.matches('.st-key-layer input')"):
            break
    else:
        raise AssertionError(f"Tab never reached the layer slider: {page.evaluate(FOCUS_JS)}")
    page.keyboard.press("ArrowRight")
    wait_idle(page, 240_000)
    assert "step 3/6" in page.locator(".st-key-presenter_where").inner_text(), "→ left the slider"
    page.wait_for_function(f"k => ({SLIDER_JS})(k) === {layer + 1}", arg=keys.LAYER,
                           timeout=60_000)  # the slider reached with Tab moved
    press(page, "PageDown", f"Stage 4/{LAST} · step 4/6")

    page.goto(f"{server}/?page=experiments&presenter=1&step=1")
    at(page, f"Stage {ORDER.index('experiments')}/{LAST} · step 1/3")
    page.get_by_text("Switch off attention heads").click()
    page.locator(f".st-key-{keys.EXP_HEADS}").wait_for(timeout=120_000)
    wait_idle(page, 240_000)
    choose(page, keys.EXP_HEADS, "head 1")
    assert "head 1" in page.locator(f".st-key-{keys.EXP_HEADS}").inner_text()
    press(page, "ArrowRight", f"Stage {ORDER.index('experiments')}/{LAST} · step 2/3")
    press(page, "ArrowLeft", f"Stage {ORDER.index('experiments')}/{LAST} · step 1/3")
    page.get_by_text("Apply another attention mask").click()
    page.locator(f".st-key-{keys.EXP_MASK}").wait_for(timeout=120_000)
    wait_idle(page, 240_000)
    options = page.locator(f".st-key-{keys.EXP_MASK}").inner_text()
    page.locator(f".st-key-{keys.EXP_MASK} [role=combobox]").first.click()
    other = [o for o in page.get_by_role("option").all_inner_texts() if o not in options][0]
    page.get_by_role("option", name=other, exact=True).click()
    wait_idle(page, 240_000)
    press(page, "PageDown", f"Stage {ORDER.index('experiments')}/{LAST} · step 2/3")
    page.close()


def test_after_scrolling_the_next_step_opens_at_its_top(browser, server):
    """On a screen too short for the slide (the figure keeps a minimum height) the page
    scrolls; the next step must not open scrolled down."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 300})
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


def test_the_speaker_notes_open_in_their_own_window_and_follow_the_deck(browser, server):
    """Notes opens a window of its own (nothing is drawn over the projected slide), showing this
    step's notes (on a stage's first step, its story), and the next step's after →. Red when
    the notes are a popover on the slide (no window opens)."""
    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    page.goto(f"{server}/?page=attention&presenter=1&step=1")
    at(page, f"Stage 4/{LAST} · step 1/6")
    # the slide drawn whole first: the run can end while the controls' row (Layer, Head, patch,
    # Play) still shows 40-px placeholders for widgets whose code is still loading; drawn, the
    # row is 28 px taller and the figure below it moves down (seen on a fresh clone under load)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stSkeleton\"]')",
                           timeout=120_000)
    settle(page)
    before = page.locator(".st-key-deck_figure").bounding_box()
    with page.expect_popup(timeout=60_000) as opened:
        page.locator(f".st-key-{keys.PRESENTER_NOTES_OPEN} button").first.click()
    notes = opened.value
    notes.wait_for_function("() => document.body.innerText.includes('step 1/6')",
                            timeout=60_000)
    story = " ".join(stages.get("attention").story.replace("*", "").split()[:6])
    assert story in " ".join(notes.inner_text("body").split())
    wait_idle(page, 240_000)
    assert page.locator("[data-testid='stPopoverBody']").count() == 0  # nothing over the slide
    assert page.locator(".st-key-deck_figure").bounding_box() == before
    press(page, "ArrowRight", f"Stage 4/{LAST} · step 2/6")
    notes.wait_for_function("() => document.body.innerText.includes('step 2/6')",
                            timeout=60_000)
    assert story not in " ".join(notes.inner_text("body").split())
    page.close()
