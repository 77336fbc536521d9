"""Is a presenter slide whole on the screen? Read from the page in Chromium (Playwright): how
far it scrolls, where the key figure's box is, what it cuts off, what is wider than the screen,
and whether the header's labels are whole (tests/test_deck_browser.py, tests/test_live_browser.py).
"""

from __future__ import annotations

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
              '[data-testid="stCaptionContainer"], [data-testid="stRadio"], .katex-display, ' +
              '[data-testid="stHtml"]';
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


STILL_JS = """() => [...document.querySelectorAll(
    '[data-testid="stMain"] [data-testid="stElementContainer"], .st-key-deck_figure img')]
    .map(e => Math.round(e.getBoundingClientRect().height)).join(',')"""


def settle(page, most_ms: int = 8000) -> None:
    """Wait until the layout holds still: plotly draws, and re-sizes to the slide, after the
    run has ended (and after a resize), pictures are fitted to their box."""
    page.wait_for_timeout(100)
    last, still = None, 0
    for _ in range(most_ms // 100):
        now = page.evaluate(STILL_JS)
        still = still + 1 if now == last else 0
        if still >= 2:
            return
        last = now
        page.wait_for_timeout(100)


# Every text in the key figure as drawn: a chart's SVG text (its font size times the scale it is
# drawn at), the HTML text (captions, a table's cells), and the text drawn into a picture that
# declares it (ui/show.image's `text_px`: a container keyed picture_text_<px>_…, scaled as the
# picture is), and a table on a canvas (st.dataframe) at the size Streamlit's theme draws it.
TEXT_JS = """() => {
  const fig = document.querySelector('.st-key-deck_figure');
  if (!fig) return {texts: []};
  const out = [];
  const shown = e => { const r = e.getBoundingClientRect(), s = getComputedStyle(e);
    return r.width >= 1 && r.height >= 1 && s.visibility !== 'hidden' && s.display !== 'none'; };
  for (const t of fig.querySelectorAll('svg text')) {
    const text = (t.textContent || '').trim();
    if (!text || !shown(t)) continue;
    const m = t.getScreenCTM();
    out.push({px: parseFloat(getComputedStyle(t).fontSize) * (m ? Math.hypot(m.a, m.b) : 1),
              text, what: 'chart'});
  }
  const walk = document.createTreeWalker(fig, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const e = n.parentElement, text = n.textContent.replace(/\u200b/g, '').trim();
    if (!text || e.closest('svg, button, .katex, [data-testid="stTooltipIcon"]') || !shown(e))
      continue;  // a chart's text is read above; an equation's scripts go with their symbol
    out.push({px: parseFloat(getComputedStyle(e).fontSize), text, what: 'html'});
  }
  for (const box of fig.querySelectorAll('[class*="st-key-picture_text_"]')) {
    const px = parseFloat(box.className.match(/st-key-picture_text_(\\d+)/)[1]);
    for (const img of box.querySelectorAll('img')) {
      if (!img.naturalWidth || !shown(img)) continue;
      out.push({px: px * img.getBoundingClientRect().width / img.naturalWidth,
                text: `drawn into a ${img.naturalWidth}×${img.naturalHeight} picture`,
                what: 'picture'});
    }
  }
  // st.dataframe draws its cells on a canvas at the theme's "sm" size, 0.875rem
  const rem = parseFloat(getComputedStyle(document.documentElement).fontSize);
  for (const t of fig.querySelectorAll('[data-testid="stDataFrame"]'))
    if (shown(t)) out.push({px: 0.875 * rem, text: 'a table on a canvas', what: 'table'});
  return {texts: out};
}"""


def small_text(page, where: str, least: float = 14) -> list[str]:
    """Text in the key figure drawn smaller than `least` CSS px (issue 39: readable from the
    back of the room), the smallest first."""
    found = page.evaluate(TEXT_JS)
    small = sorted((t for t in found["texts"] if t["px"] < least - 0.05), key=lambda t: t["px"])
    return [f"{where}: {len(small)} texts under {least:g} px, e.g. " + ", ".join(
        f"{t['text'][:30]!r} ({t['what']}) {t['px']:.1f} px" for t in small[:4])] if small else []


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
    found += small_text(page, where)
    for key in ("prev", "next", "exit"):  # whole labels: never "Previo…"
        button = page.locator(f".st-key-presenter_{key} button").first
        if button.evaluate(CUT_JS):
            found.append(f"{where}: the label of {button.inner_text()!r} is cut")
    return found
