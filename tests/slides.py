"""Is a presenter slide whole on the screen? Read from the page in Chromium (Playwright): how
far it scrolls, where the key figure's box is, what it cuts off, what is wider than the screen,
and whether the header's labels are whole (tests/test_deck_browser.py, tests/test_live_browser.py).
"""

from __future__ import annotations

from tests.read_aloud import CHARTS_READ_JS, EQUATIONS_READ_JS

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
    found = [f"{where}: {p}" for p in page.evaluate(CHARTS_READ_JS)]
    found += [f"{where}: {p}" for p in page.evaluate(EQUATIONS_READ_JS)]
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


# The key figure on the slide, read from the page: the share of the slide's height below the
# header that its charts and pictures take (from the top of the first to the bottom of the last;
# a picture counted where it is drawn, object-fit included) and of the figure's width (a picture
# wider than the slide's shape fills the width before it reaches half the height), each
# picture's drawn shape against its file's (naturalWidth / naturalHeight), and every element of
# the slide that is cut: by the screen's edges, by a box that hides its overflow, or drawn over
# another one (what a row squeezed shorter than its content shows: it spills over the next).
FIGURE_JS = """() => {
  const vh = window.innerHeight, bar = document.querySelector('.st-key-presenter_bar');
  const below = bar ? bar.getBoundingClientRect().bottom : 0;
  const fig = document.querySelector('.st-key-deck_figure');
  const out = {slide: vh - below, top: null, bottom: null, left: null, right: null,
               width: fig ? fig.getBoundingClientRect().width : 0, pictures: [], cut: [],
               other: 0};
  if (!fig) return out;
  out.other = fig.querySelectorAll('.katex-display, [data-testid="stDataFrame"], ' +
                                   '[data-testid="stMetric"], ' +
                                   '[data-testid="stTable"], table').length;
  const drawn = (img) => {  // where an <img> draws its picture inside its box
    const r = img.getBoundingClientRect(), fit = getComputedStyle(img).objectFit;
    if (!['contain', 'scale-down'].includes(fit) || !img.naturalWidth) return r;
    let s = Math.min(r.width / img.naturalWidth, r.height / img.naturalHeight);
    if (fit === 'scale-down') s = Math.min(s, 1);
    const w = img.naturalWidth * s, h = img.naturalHeight * s;
    const pos = getComputedStyle(img).objectPosition.split(' ').map(v => parseFloat(v) / 100);
    const left = r.left + (r.width - w) * pos[0], top = r.top + (r.height - h) * pos[1];
    return {top, bottom: top + h, left, right: left + w, width: w, height: h};
  };
  const grow = (r) => {
    if (r.height < 2 || r.width < 2) return;
    out.top = out.top === null ? r.top : Math.min(out.top, r.top);
    out.bottom = out.bottom === null ? r.bottom : Math.max(out.bottom, r.bottom);
    out.left = out.left === null ? r.left : Math.min(out.left, r.left);
    out.right = out.right === null ? r.right : Math.max(out.right, r.right);
  };
  const charts = fig.querySelectorAll('[data-testid="stPlotlyChart"]');
  for (const c of charts) grow(c.getBoundingClientRect());
  out.charts = charts.length;
  for (const img of fig.querySelectorAll('img')) {
    const d = drawn(img);
    grow(d);
    if (img.naturalWidth && d.height >= 2)
      out.pictures.push({natural: img.naturalWidth / img.naturalHeight, drawn: d.width / d.height,
                         size: `${img.naturalWidth}×${img.naturalHeight} drawn ` +
                               `${Math.round(d.width)}×${Math.round(d.height)}`});
  }
  const main = document.querySelector('[data-testid="stMain"]');
  const sel = '[data-testid="stPlotlyChart"], [data-testid="stImage"] img, ' +
              '[data-testid="stMarkdown"], .katex-display, [data-testid="stSlider"], ' +
              '[data-testid="stNumberInput"], [data-testid="stSelectbox"], ' +
              '[data-testid="stMultiSelect"], [data-testid="stRadio"], [data-testid="stButton"], ' +
              '[data-testid="stCheckbox"], [data-testid="stAlert"], [data-testid="stDataFrame"], ' +
              '[data-testid="stTable"], [data-testid="stCaptionContainer"]';
  const name = (el) => (el.getAttribute('data-testid') || el.tagName) + ' ' +
                       (el.innerText || '').slice(0, 40).replace(/\\s+/g, ' ');
  const shown = [];
  for (const el of main.querySelectorAll(sel)) {
    if (el.closest('.st-key-presenter_keys, [data-testid="stPopoverBody"]') ||
        el.parentElement.closest('[data-testid="stSlider"]')) continue;  // a slider's own
    const r = el.getBoundingClientRect();
    if (r.height < 2 || r.width < 2 || getComputedStyle(el).visibility === 'hidden') continue;
    const where = `${Math.round(r.top)}..${Math.round(r.bottom)}`;
    if (r.top < -1 || r.bottom > vh + 1) { out.cut.push(`${name(el)} ${where} off the screen`);
                                           continue; }
    for (let a = el.parentElement; a && a !== main; a = a.parentElement) {
      const b = a.getBoundingClientRect(), o = getComputedStyle(a);
      const hides = o.overflowY !== 'visible' || o.overflowX !== 'visible';
      if (hides && (r.bottom > b.bottom + 2 || r.top < b.top - 2)) {
        out.cut.push(`${name(el)} ${where} cut by its box ` +
                     `${Math.round(b.top)}..${Math.round(b.bottom)}`);
        break;
      }
    }
    shown.push([el, r]);
  }
  for (let i = 0; i < shown.length; i++)
    for (let j = i + 1; j < shown.length; j++) {
      const [a, p] = shown[i], [b, q] = shown[j];
      if (a.contains(b) || b.contains(a)) continue;
      const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
      const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
      if (w > 4 && h > 4) out.cut.push(`${name(a)} and ${name(b)} overlap by ${Math.round(h)} px`);
    }
  return out;
}"""

# KaTeX draws what it cannot parse in red instead of raising: a .katex-error span, coloured
# #cc0000 (also the colour of an unknown command inside a formula that otherwise parsed).
KATEX_ERRORS_JS = """() => {
  const bad = [];
  document.querySelectorAll('.katex-error').forEach(e => bad.push(
      'katex-error: ' + (e.getAttribute('title') || e.textContent).slice(0, 160)));
  document.querySelectorAll('body *').forEach(e => {
    if (getComputedStyle(e).color === 'rgb(204, 0, 0)')
      bad.push('#cc0000: ' + (e.textContent || '').slice(0, 80));
  });
  return bad;
}"""


FIGURE_SHARE = 0.5  # the key figure takes at least half of the slide's height below the header
WHOLE_WIDTH = 0.95  # ... or, pictures wider than that, they span the slide's whole width
ASPECT = 0.02  # a picture's drawn shape within 2 % of its file's


def figure_problems(page, where: str) -> list[str]:
    """The key figure's share of the slide, the pictures' shapes and anything cut on the slide."""
    f = page.evaluate(FIGURE_JS)
    for _ in range(100):  # a table's grid (st.dataframe) loads its code lazily, after the run
        if f["top"] is not None or f["other"]:
            break
        page.wait_for_timeout(100)
        f = page.evaluate(FIGURE_JS)
    found = [f"{where}: {c}" for c in f["cut"]]
    if f["top"] is None:  # an equation or a table (as tall as its rows): no share to check
        return found if f["other"] else found + [f"{where}: the key figure draws nothing"]
    share = (f["bottom"] - f["top"]) / f["slide"]
    # pictures wider than the slide's shape can be no taller than the width allows (a chart
    # has no shape of its own: it gets the height)
    wide = 0 if f["charts"] else (f["right"] - f["left"]) / f["width"]
    if share < FIGURE_SHARE and wide < WHOLE_WIDTH:
        found.append(f"{where}: the key figure has {share:.0%} of the slide's {f['slide']:.0f} px "
                     f"below the header ({f['bottom'] - f['top']:.0f} px) and {wide:.0%} of "
                     f"its width")
    for p in f["pictures"]:
        if abs(p["drawn"] / p["natural"] - 1) > ASPECT:
            found.append(f"{where}: a picture {p['size']} is drawn at another shape")
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
