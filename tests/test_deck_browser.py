"""Presenter mode is a slide deck, in a real browser (Chromium, Playwright, `streamlit run`).

For every step of every stage, on the bundled classifier, a captioner and a ViT-B/16-size preset,
at 1280×720, 1024×768 and 1920×1080: nothing scrolls (the page is at most the screen's height)
and the key figure is whole on the screen. After a Reveal, Play or a click on a figure the
clicker still moves the deck; after scrolling, the next step opens at its top.
"""


import pytest

from tools.browser import IDLE_JS, ROOT, serve, wait_idle

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

SHOTS = ROOT / "screenshots" / "deck"
SCREENS = [(1280, 720), (1024, 768), (1920, 1080)]
ORDER = ["overview", "patches", "embeddings", "qkv", "attention", "masks", "mlp", "logits",
         "shapes", "segmentation", "experiments"]

# How the slide sits on the screen: how far the page scrolls, where the key figure's box is, and
# any part of the figure (a chart, a picture, a table, a line of text) that its box cuts off.
SLIDE_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const vh = window.innerHeight;
  const out = {scroll: Math.max(main.scrollHeight - main.clientHeight,
                                document.documentElement.scrollHeight - vh),
               top: main.scrollTop, vh, figure: null, cut: []};
  const fig = document.querySelector('.st-key-deck_figure');
  if (!fig) return out;
  const r = fig.getBoundingClientRect();
  out.figure = {top: r.top, bottom: r.bottom, height: r.height};
  const sel = '[data-testid="stPlotlyChart"], [data-testid="stImage"] img, ' +
              '[data-testid="stDataFrame"], [data-testid="stTable"], [data-testid="stMarkdown"], ' +
              '[data-testid="stCaptionContainer"], [data-testid="stRadio"], .katex-display';
  for (const el of fig.querySelectorAll(sel)) {
    const e = el.getBoundingClientRect();
    if (e.height < 2 || e.width < 2) continue;
    if (e.bottom > r.bottom + 1 || e.top < r.top - 1 || e.bottom > vh + 1)
      out.cut.push((el.getAttribute('data-testid') || el.tagName) + ' ' +
                   (el.innerText || '').slice(0, 40).replace(/\\s+/g, ' ') +
                   ` ${Math.round(e.top)}..${Math.round(e.bottom)} in ` +
                   `${Math.round(r.top)}..${Math.round(r.bottom)}`);
  }
  return out;
}"""


# Every chart, image, table and iframe: inside the screen's width and inside its parent frame
# (its column or block), and a plotly chart's drawing inside its own box; is one above the fold?
LAYOUT_JS = """() => {
  const vw = document.documentElement.clientWidth, vh = window.innerHeight, bad = [];
  let shown = 0, above = 0;
  const sel = '[data-testid="stPlotlyChart"], [data-testid="stImage"], ' +
              '[data-testid="stDataFrame"], [data-testid="stTable"], iframe';
  for (const el of document.querySelectorAll(sel)) {
    if (el.closest('.st-key-presenter_keys, [data-testid="stSidebar"]')) continue;
    const r = el.getBoundingClientRect();
    if (r.width < 2 || r.height < 2) continue;  // not shown (a closed popover)
    shown += 1;
    const text = el.innerText || el.getAttribute('title') || '';
    const name = (el.getAttribute('data-testid') || el.tagName) + ' ' +
                 text.slice(0, 40).replace(/\\s+/g, ' ');
    if (r.left < -1 || r.right > vw + 1)
      bad.push(`wider than the screen: ${name} ${Math.round(r.left)}..${Math.round(r.right)} ` +
               `of ${vw}`);
    const frame = el.parentElement.closest(
        '[data-testid="stColumn"], [data-testid="stVerticalBlock"]');
    if (frame) {
      const f = frame.getBoundingClientRect();
      if (r.left < f.left - 1 || r.right > f.right + 1)
        bad.push(`outside its frame: ${name} ${Math.round(r.left)}..${Math.round(r.right)} in ` +
                 `${Math.round(f.left)}..${Math.round(f.right)}`);
    }
    for (const inner of el.querySelectorAll('.main-svg, img')) {
      const i = inner.getBoundingClientRect();
      if (i.width > 0 && (i.left < r.left - 1 || i.right > r.right + 1))
        bad.push(`cut inside its box: ${name} ${Math.round(i.left)}..${Math.round(i.right)} ` +
                 `in ${Math.round(r.left)}..${Math.round(r.right)}`);
    }
    if (r.top < vh && r.bottom > 0) above += 1;
  }
  return {bad, shown, above};
}"""


CUT_JS = "b => [b, ...b.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1)"



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
        out += [f"{f'Stage {i}/10' if i else 'Overview'} · step {k + 1}/{n}" for k in range(n)]
    return out


def at(page, header: str) -> None:
    """Wait for the step's header, then for the run to end."""
    page.locator(".st-key-presenter_where").get_by_text(header).wait_for(timeout=90_000)
    page.wait_for_function(IDLE_JS, timeout=120_000)


STILL_JS = """() => [...document.querySelectorAll(
    '[data-testid="stMain"] [data-testid="stElementContainer"], .st-key-deck_figure img')]
    .map(e => Math.round(e.getBoundingClientRect().height)).join(',')"""


def settle(page, most_ms: int = 8000) -> None:
    """Wait until the layout holds still: plotly draws, and re-sizes to the slide, after the
    run has ended (and after a resize), pictures are fitted to their box."""
    page.wait_for_timeout(200)
    last, still = None, 0
    for _ in range(most_ms // 150):
        now = page.evaluate(STILL_JS)
        still = still + 1 if now == last else 0
        if still >= 2:
            return
        last = now
        page.wait_for_timeout(150)


def problems_on(page, where: str) -> list[str]:
    s = page.evaluate(SLIDE_JS)
    found = []
    if s["scroll"] > 1:
        found.append(f"{where}: scrolls by {s['scroll']} px")
    if s["figure"] is None:
        found.append(f"{where}: no key figure")
    else:
        if s["figure"]["bottom"] > s["vh"] + 1 or s["figure"]["top"] < -1:
            found.append(f"{where}: the figure's box {s['figure']} is off the screen")
        if s["figure"]["height"] < 100:
            found.append(f"{where}: the figure has {s['figure']['height']:.0f} px")
        found += [f"{where}: cut: {c}" for c in s["cut"]]
    found += [f"{where}: {p}" for p in page.evaluate(LAYOUT_JS)["bad"]]
    for key in ("prev", "next", "exit"):  # whole labels: never "Previo…"
        button = page.locator(f".st-key-presenter_{key} button").first
        if button.evaluate(CUT_JS):
            found.append(f"{where}: the label of {button.inner_text()!r} is cut")
    return found


# The bundled classifier on every screen; the captioner at the narrowest (1024×768, where text
# wraps most) and the ViT-B/16-size preset at the shortest (1280×720): a walk costs about a
# second per step and screen, and the three walks share the CI's budget.
WALKS = [("shapes-classifier", SCREENS), ("shapes-captioner-causal", [SCREENS[1]]),
         ("vit-b16", [SCREENS[0]])]


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
        at(page, header)
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
    at(page, "Stage 4/10 · step 3/6")
    page.get_by_text("Reveal").first.click()  # the question's answer shows
    page.get_by_text("In block 5").first.wait_for(timeout=30_000)
    wait_idle(page)
    page.keyboard.press("ArrowRight")
    at(page, "Stage 4/10 · step 4/6")
    for k in (3, 2, 1):  # one key at a time: each is a run of the app
        page.keyboard.press("ArrowLeft")
        at(page, f"Stage 4/10 · step {k}/6")
    page.get_by_role("button", name="Play").click()
    page.get_by_role("button", name="Pause").wait_for(timeout=30_000)
    page.keyboard.press("ArrowRight")
    at(page, "Stage 4/10 · step 2/6")
    page.keyboard.press("ArrowLeft")
    at(page, "Stage 4/10 · step 1/6")
    page.get_by_role("button", name="Pause").click()  # stop playing
    wait_idle(page)
    box = page.locator(".st-key-deck_figure [data-testid='stPlotlyChart']").first
    box.wait_for()
    settle(page)
    box.click()
    page.keyboard.press("ArrowRight")
    at(page, "Stage 4/10 · step 2/6")
    ctx.close()


def test_after_scrolling_the_next_step_opens_at_its_top(browser, server):
    """On a screen too short for the slide (the figure keeps a minimum height) the page
    scrolls; the next step must not open scrolled down."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 360})
    page = ctx.new_page()
    page.goto(f"{server}/?page=attention&presenter=1")
    at(page, "Stage 4/10 · step 1/6")
    settle(page)
    scrolled = page.evaluate("""() => { const m = document.querySelector('[data-testid="stMain"]');
        m.scrollTop = m.scrollHeight; return m.scrollTop; }""")
    assert scrolled > 0, "the short screen should scroll"
    page.keyboard.press("ArrowRight")
    at(page, "Stage 4/10 · step 2/6")
    settle(page)
    top = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop")
    assert top == 0
    ctx.close()
