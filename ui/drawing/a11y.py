"""Accessibility fixes for every page that the app's own widgets cannot carry (see
docs/accessibility.md).

Installed once per page (app.py), as ui/drawing/phone.py installs its touch script: a stylesheet
and one
script in an invisible frame, run in the page's realm (parent.Function) and set up once per
document, whatever the reruns do.

- Captions at a contrast of 4.5:1 or more (WCAG 1.4.3), not Streamlit's 3.7:1; a metric's grey
  delta, a file uploader's hint and a toast's "view more" in the text's colour (Streamlit's
  greys there: 3.4:1, 3.7:1, 3.7:1).
- A focus ring that shows where the keyboard is (WCAG 2.4.7), FOCUS on any background of the
  light or dark theme at ≥ 3:1 (1.4.11). A radio's, a checkbox's or a toggle's input is drawn
  invisible by Streamlit (its picture is a sibling), so the ring goes around its label; a
  slider's input too, so the ring goes around its thumb.
- Streamlit's sidebar is a <section> with aria-expanded, which that element may not carry (axe
  `aria-allowed-attr`; the sidebar's own collapse button says whether it is open): removed.
  A closed sidebar (a phone's, or one the user closed) stays in the page, off the screen, and
  its 30-odd controls were tab stops a keyboard went through unseen (WCAG 2.4.3, 2.4.7): closed,
  it is `inert` (no tab stop, nothing for a screen reader) until it opens.
- A box that scrolls (an equation wider than a phone, a wide table) is a tab stop with a name,
  so a keyboard can scroll it (axe `scrollable-region-focusable`, WCAG 2.1.1).
- An equation drawn with its words (ui/drawing/equation.py) is read as those words, its MathML
  (one symbol at a time) hidden; a scrolling one's tab stop is named by them.
- A popover opened from the keyboard gets the focus (its first control): Streamlit leaves it on
  the button, and its body, drawn at the end of the document, was out of Tab's reach (2.1.1).
- A Material icon in a button or a message box with words (its ligature's name, "arrow_back")
  is hidden from screen readers: Chromium named the button "arrow_back Previous", and Orca read
  a revealed answer (st.info, a live region) as "… lightbulb".
- A slider is named once ("Layer"), not "Layer Layer" (its input labelled by itself and by its
  group, both with the widget's label).
- The invisible frames that carry a script (ui/drawing/phone.py's, this one's, the clicker's) are no
  tab stops and hidden from screen readers.
- A picture Streamlit drew with a caption and no text alternative gets its caption as `alt`
  (ui/show.image sets its own; this covers an st.image drawn elsewhere with a caption).
- A live class's move is said: when the teacher moves on, a following student's screen reader
  read the new step's sentence but not which step it is (Orca); the banner's "Attention, step
  3/6: …" is copied, when it changes, into a status region of the document's own (ANNOUNCE_ID:
  outside Streamlit's tree, it stays across reruns, so a change in it is read out).
"""

from __future__ import annotations

import json

import streamlit as st

from ui import keys
from ui.drawing.equation import SAID, SAY

FOCUS = "#1a73e8"  # ≥ 3:1 on white (4.5), the sidebar's grey (4.0) and the dark theme's (4.2)
# Streamlit draws a caption (st.caption, a picture's) as text at opacity 0.6: 3.7:1 on white.
# At 0.75 it is 5.7:1 on white and 5.3:1 on the sidebar's grey, still fainter than the text.
CAPTION_OPACITY = 0.75
ANNOUNCE_ID = "vit-announce"  # the status region that says a live class's move
MOVED = "The class moved to "  # what it says first

CSS = f"""<style>
:focus-visible {{ outline: 3px solid {FOCUS} !important; outline-offset: 2px !important; }}
label:has(input:is([type="radio"], [type="checkbox"]):focus-visible) {{
  outline: 3px solid {FOCUS} !important; outline-offset: 2px; border-radius: 4px; }}
[data-testid="stSlider"] div:has(> div > input[type="range"]:focus-visible) {{
  outline: 3px solid {FOCUS} !important; outline-offset: 2px; }}
[data-baseweb="select"] > div:has(input:focus-visible) {{
  outline: 3px solid {FOCUS} !important; outline-offset: 2px; }}
/* a figure's text alternative (ui/lesson/deck._describe): a caption's look under the figure;
   on a slide visually hidden, still read by a screen reader */
.figure-alt {{ font-size: 0.9rem; color: inherit; opacity: {CAPTION_OPACITY}; margin: 0.2rem 0; }}
/* the element of a hidden text alternative and of an equation's words (ui/drawing/equation.py)
   out of the column's flow: no gap */
[data-testid="stElementContainer"]:has(> [data-testid="stHtml"] :is(.figure-alt.sr-only,
  .{SAID})) {{
  position: absolute !important; width: 1px; height: 1px; overflow: hidden; margin: 0; }}
.sr-only {{ position: absolute !important; width: 1px; height: 1px; padding: 0; margin: -1px;
  overflow: hidden; clip: rect(0, 0, 0, 0); white-space: nowrap; border: 0; }}
[data-testid="stCaptionContainer"] {{ opacity: {CAPTION_OPACITY} !important; }}
/* a metric's grey delta ("4× this model's 49"): Streamlit's #7b7d84 on its #eaebec pill is
   3.4:1; the text's own colour there (the app's deltas are all grey: delta_color="off") */
[data-testid="stMetricDelta"] {{ color: inherit !important; }}
/* a file uploader's "20MB per file • PNG, JPG, …" and a toast's "view more": Streamlit's
   #83858c on white is 3.7:1 */
[data-testid="stFileUploaderDropzoneInstructions"] span {{ color: inherit !important;
  opacity: {CAPTION_OPACITY}; }}
[data-testid="stToastViewButton"] {{ color: inherit !important; text-decoration: underline; }}
/* the script's frame and its wrapper out of the page's flow: no gap for an empty row */
.st-key-{keys.A11Y_JS}, [data-testid="stLayoutWrapper"]:has(> .st-key-{keys.A11Y_JS}) {{
  position: absolute; width: 0; height: 0; overflow: hidden; }}
</style>"""

# What may scroll sideways or down inside the page, and the name its tab stop gets (only a box
# that does scroll gets one; the audit found equations on a phone).
SCROLLERS = {
    ".katex-display": "Equation (scrolls sideways)",
    '[data-testid="stMarkdownContainer"] pre': "Code (scrolls)",
    '[data-testid="stTable"]': "Table (scrolls)",
    '[data-testid="stMarkdownContainer"] table': "Table (scrolls)",
}

# The invisible frames that only carry a script (the touch fix's, this module's, the clicker's):
# no tab stop (a Tab into an empty frame showed nothing), nothing for a screen reader.
HIDDEN_FRAMES = ", ".join(f".st-key-{k} iframe" for k in (keys.PHONE_JS, keys.A11Y_JS,
                                                          keys.PRESENTER_KEYS))

SCRIPT = """
const doc = window.parent.document;
if (doc.__vitA11y) return;
doc.__vitA11y = true;
const SCROLLERS = %SCROLLERS%;
const HIDDEN_FRAMES = %FRAMES%;
// the stylesheet in the document's head too: a page's own elements are cleared while another
// page's run draws them again, the head is not
const sheet = doc.createElement('style');
sheet.id = 'vit-a11y';
sheet.textContent = %CSS%;
doc.head.appendChild(sheet);
// a live class's move, said (a polite status region the page's reruns never redraw)
const said = doc.createElement('div');
said.id = %ANNOUNCE_ID%;
said.className = 'sr-only';
said.setAttribute('role', 'status');
doc.body.appendChild(said);
let where = null;  // the step the banner names ("Attention, step 3/6: …"), when following
const announce = () => {
  const b = doc.querySelector('.st-key-%BANNER% [data-testid="stMarkdownContainer"]');
  const text = b ? b.textContent.trim() : '';
  if (!text.includes('Following class')) return;  // exploring, or no class: nothing to say
  // "… · on your own image · 4 · Attention heads, step 3/6: …" (a stage's title is "N · name")
  const found = text.match(/(?:^|· )((?:\\d+ · )?[^·]+, step \\d+\\/\\d+: .*)$/);
  if (!found) return;
  const now = found[1];
  if (where !== null && now !== where) said.textContent = %MOVED% + now + '.';
  where = now;
};
// a box scrolls along an axis its overflow lets scroll (auto or scroll, as axe reads it): KaTeX's
// display box is a few px taller than its frame, but clipped (overflow-y hidden), not scrolled
const axis = (v) => v === 'auto' || v === 'scroll';
// a box's own size changes with no mutation (its column narrows as the page lays out): looked at
// again then
const sized = new window.parent.ResizeObserver(() => later());
const scrolls = (e) => {
  const s = getComputedStyle(e);
  return axis(s.overflowX) && e.scrollWidth > e.clientWidth + 1 ||
         axis(s.overflowY) && e.scrollHeight > e.clientHeight + 1;
};
// an icon is a ligature ("arrow_back"): read aloud it came before a button's name ("arrow back
// Previous") and after a message (Orca: "… | lightbulb"); hidden where its button, link, label
// or message box (role status or alert; its icon is Streamlit's stAlertDynamicIcon) has words
// of its own. At once on a change, not a frame
// later: a message box is a live region, read out as it appears.
const hideIcons = () => {
  for (const i of doc.querySelectorAll(':is([data-testid="stIconMaterial"], ' +
                                       '[data-testid="stAlertDynamicIcon"]):not([aria-hidden])')) {
    const host = i.closest('button, a, summary, label, [role="button"], [role="status"], ' +
                           '[role="alert"]');
    if (host && host.textContent.replace(i.textContent, '').trim())
      i.setAttribute('aria-hidden', 'true');
  }
};
const fix = () => {
  for (const s of doc.querySelectorAll('section[data-testid="stSidebar"]')) {
    if (s.hasAttribute('aria-expanded')) {  // kept as data, read below
      s.dataset.vitOpen = s.getAttribute('aria-expanded');
      s.removeAttribute('aria-expanded');
    }
    const open = s.dataset.vitOpen ? s.dataset.vitOpen === 'true'
                                   : s.getBoundingClientRect().right > 1;
    if (s.inert === open) s.inert = !open;  // closed: out of Tab's way and a reader's
  }
  for (const [sel, name] of Object.entries(SCROLLERS))
    for (const e of doc.querySelectorAll(sel)) {
      if (!e.dataset.vitSeen) { e.dataset.vitSeen = '1'; sized.observe(e); }
      const now = scrolls(e);
      if (now && !e.hasAttribute('tabindex')) {
        e.setAttribute('tabindex', '0');
        e.setAttribute('role', 'region');
        e.setAttribute('aria-label', name);
        e.dataset.vitScrolls = '1';
      } else if (!now && e.dataset.vitScrolls) {  // wide enough now (a wider window)
        for (const a of ['tabindex', 'role', 'aria-label']) e.removeAttribute(a);
        delete e.dataset.vitScrolls;
      }
    }
  // an equation drawn with its words (ui/drawing/equation.py: the paragraph right after it):
  // its MathML, read one symbol at a time (Orca: "𝑄 | 𝐾 | ⊤ | 32" for QK⊤/√32, the fraction and
  // the root lost), hidden from screen readers, so they read the words. Where the equation
  // scrolls, the words name its tab stop (a Tab there reads the name, not the next line) and
  // the paragraph is hidden (Orca's Say All read the region's name and then the paragraph)
  for (const said of doc.querySelectorAll('.%SAID%')) {
    const box = said.closest('[data-testid="stElementContainer"]');
    const before = box && box.previousElementSibling;
    const eq = before && before.querySelector('.katex');
    if (!eq) continue;
    if (eq.getAttribute('aria-hidden') !== 'true') eq.setAttribute('aria-hidden', 'true');
    const stop = eq.closest('.katex-display[tabindex]');
    const name = SCROLLERS['.katex-display'] + ': ' + said.textContent.replace(%SAY%, '');
    if (stop && stop.getAttribute('aria-label') !== name) stop.setAttribute('aria-label', name);
    if (stop && !said.hasAttribute('aria-hidden')) said.setAttribute('aria-hidden', 'true');
    if (!stop && said.hasAttribute('aria-hidden')) said.removeAttribute('aria-hidden');
  }
  hideIcons();
  // a slider's input is labelled by its own label and its group's, both the widget's label:
  // Chromium named it "Layer Layer" (Orca: "Layer Layer horizontal slider 5"); its own alone
  for (const i of doc.querySelectorAll('[data-testid="stSlider"] input[aria-labelledby]')) {
    const group = i.closest('[role="group"]');
    if (group && group.getAttribute('aria-label') === i.getAttribute('aria-label'))
      i.removeAttribute('aria-labelledby');
  }
  // a chart's drawing (its layers, tick labels and titles: 75 utterances on a heatmap, none
  // paired with a value) is hidden from screen readers: the "Figure:" line under it says its
  // axes, colour, range and largest value. Plotly's toolbar, outside the drawing, stays.
  for (const svg of doc.querySelectorAll('.js-plotly-plot svg.main-svg:not([aria-hidden])'))
    svg.setAttribute('aria-hidden', 'true');
  for (const f of doc.querySelectorAll(HIDDEN_FRAMES))
    if (f.getAttribute('tabindex') !== '-1') {
      f.setAttribute('tabindex', '-1');
      f.setAttribute('aria-hidden', 'true');
    }
  for (const img of doc.querySelectorAll('[data-testid="stImage"] img:not([alt])')) {
    const cap = img.closest('[data-testid="stImage"]')
                   .querySelector('[data-testid="stImageCaption"]');
    const text = cap && cap.textContent.trim();
    if (text) img.setAttribute('alt', text);
  }
  announce();
};
// A popover opened from the keyboard (Enter or Space on its button): Streamlit draws its body
// at the end of the document and leaves the focus on the button, so Tab went on down the page
// and never reached what the popover shows; the focus goes to its first control (Escape
// closes it and gives the focus back to the button).
const FOCUSABLE = ['input:not([type="hidden"])', 'button', 'a[href]', 'summary', 'select',
                   'textarea', '[tabindex]'].map(
                   s => s + ':not([disabled]):not([tabindex="-1"])').join(', ');
let keyOpened = 0;
doc.addEventListener('keydown', (e) => {
  if ((e.key === 'Enter' || e.key === ' ') && e.target.closest &&
      e.target.closest('[data-testid="stPopover"]')) keyOpened = performance.now();
}, true);
const intoPopover = () => {
  if (!keyOpened || performance.now() - keyOpened > 5000) return;
  const body = doc.querySelector('[data-testid="stPopoverBody"]');
  const first = body && body.querySelector(FOCUSABLE);
  if (!first || body.contains(doc.activeElement)) return;
  keyOpened = 0;
  first.focus();
};
let queued = false;
const later = () => {
  if (queued) return;
  queued = true;
  requestAnimationFrame(() => { queued = false; fix(); intoPopover(); });
};
new MutationObserver(() => { hideIcons(); later(); }).observe(doc.body, {childList: true,
  subtree: true, attributes: true, attributeFilter: ['aria-expanded']});
window.parent.addEventListener('resize', later);
// an equation's fonts load after it is drawn: it may scroll only then (no mutation says so)
if (doc.fonts) doc.fonts.addEventListener('loadingdone', later);
fix();
""".replace("%SCROLLERS%", json.dumps(SCROLLERS)).replace(
    "%ANNOUNCE_ID%", json.dumps(ANNOUNCE_ID)).replace("%MOVED%", json.dumps(MOVED)).replace(
    "%BANNER%", keys.LIVE_BANNER).replace(
    "%FRAMES%", json.dumps(HIDDEN_FRAMES)).replace("%SAID%", SAID).replace(
    "%SAY%", json.dumps(SAY)).replace(
    "%CSS%", json.dumps(CSS.removeprefix("<style>").removesuffix("</style>")))


def install() -> None:
    """The stylesheet and the script, on every page (app.py)."""
    st.html(CSS)
    with st.container(key=keys.A11Y_JS):
        st.iframe("<script>new window.parent.Function(" + json.dumps(SCRIPT) + ")();</script>",
                  height=1)
