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


# A phone (tests/test_phone_browser.py). The size of every text node drawn in a figure laid out
# for the phone (the containers ui/phone.both shows on a narrow screen): [[px, text], ...].
PHONE_TEXT_JS = """() => {
  const out = [];
  for (const box of document.querySelectorAll('[class*="st-key-phone_only_"]')) {
    if (box.getBoundingClientRect().width < 2) continue;  // not shown
    for (const t of box.querySelectorAll('.main-svg text')) {
      if (t.closest('.hoverlayer') || !t.textContent.trim()) continue;
      const r = t.getBoundingClientRect();
      if (r.width < 1 || r.height < 1) continue;
      out.push([parseFloat(getComputedStyle(t).fontSize), t.textContent.slice(0, 40)]);
    }
  }
  return out;
}"""

# The labels of a figure in the container with this key: how many, and every two whose boxes
# overlap (by more than 1 px each way): [count, [[text, text], ...]].
MAP_OVERLAPS_JS = """key => {
  const box = document.querySelector('.st-key-' + key);
  const nodes = [...box.querySelectorAll('.main-svg text')].filter(
      t => !t.closest('.hoverlayer') && t.textContent.trim());
  const rects = nodes.map(t => t.getBoundingClientRect());
  const pairs = [];
  for (let i = 0; i < rects.length; i++)
    for (let j = i + 1; j < rects.length; j++) {
      const a = rects[i], b = rects[j];
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 1 && h > 1) pairs.push([nodes[i].textContent, nodes[j].textContent]);
    }
  return [nodes.length, pairs];
}"""

# The plotting areas (plotly's drag layers: one per subplot) of shown charts of two or more
# panels narrower than `px`: [[chart, width], ...]: panels side by side squeezed onto a phone
# (one panel narrow by its own aspect, e.g. square cells, is not this).
NARROW_PANELS_JS = """px => {
  const out = [];
  for (const chart of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
    const drags = chart.querySelectorAll('.nsewdrag');
    if (chart.getBoundingClientRect().width < 2 || drags.length < 2) continue;  // one panel
    for (const drag of drags) {
      const w = drag.getBoundingClientRect().width;
      if (w > 0 && w < px) out.push([(chart.closest('[class*="st-key-"]') || chart).className
                                     .match(/st-key-\\S+/)?.[0] || '', Math.round(w)]);
    }
  }
  return out;
}"""

# The texts of shown charts that run past their chart's left or right edge (plotly never wraps
# a title): [text, ...].
TEXT_OFF_CHART_JS = """() => {
  const out = [];
  for (const chart of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
    const r = chart.getBoundingClientRect();
    if (r.width < 2) continue;  // not shown
    for (const t of chart.querySelectorAll('.main-svg text')) {
      if (t.closest('.hoverlayer') || !t.textContent.trim()) continue;
      const e = t.getBoundingClientRect();
      if (e.width >= 1 && (e.right > r.right + 1 || e.left < r.left - 1))
        out.push(t.textContent.slice(0, 50));
    }
  }
  return out;
}"""
