"""Presenter mode, for a projector and a clicker: no sidebar, one step of one stage per slide.

The header is one row: Previous, Next, "Stage 4/10 · step 2/5" with the step's title, Speaker
notes, Exit and a "Model and image" popover (the sidebar's own widgets, drawn there instead of in
the hidden sidebar). → and PageDown press Next, ← and PageUp press Previous (a clicker sends
those keys). The slide under the header (ui/deck.py) is one screen high: the step's controls,
its figure filling the height that is left, its words and its question; the story and the longer
explanation are in the speaker notes, so they never push the figure off the screen.
"""

from __future__ import annotations

import json

import streamlit as st

from . import deck, keys, stages, state, steps
from .live import teacher

# No zoom: a zoomed block makes plotly measure the wrong width and clip its own figures. The
# type grows with the screen instead. The slide is a column one screen high; the key figure's
# container (deck.FIGURE) takes the height the other rows leave, and its charts and pictures
# are sized to that container (plotly with height="stretch", pictures by container units).
CSS = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stHeader"] { display: none; }
[data-testid="stMainBlockContainer"] { max-width: 100%; height: 100vh;
  padding: 0.5rem 1.5rem 0.5rem; }
[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"] { height: 100%;
  flex-wrap: nowrap; }
[data-testid="stMainBlockContainer"] h1 { display: none; }  /* the header names the stage */
[data-testid="stLayoutWrapper"]:has(> .st-key-%FIG%) { flex: 1 1 0 !important;
  min-height: 9rem; }
.st-key-%FIG% { height: 100% !important; container-type: size; overflow: hidden;
  flex-wrap: nowrap; }
.st-key-%FIG% [data-testid="stImage"] img { max-height: calc(100cqh - 2.6rem);
  width: auto !important; max-width: 100%; }
.st-key-%FIG% [data-testid="stHorizontalBlock"] { height: 100%; }
.st-key-%FIG% [data-testid="stElementContainer"], .st-key-%FIG% [data-testid="stLayoutWrapper"],
.st-key-%FIG% [data-testid="stFullScreenFrame"], .st-key-%FIG% [data-testid="stColumn"],
.st-key-%FIG% [data-testid="stHorizontalBlock"],
.st-key-%FIG% [data-testid="stVerticalBlock"] { min-height: 0; }
.st-key-%FIG% [data-testid="stHorizontalBlock"] > [data-testid="stColumn"] { height: 100%; }
.st-key-%FIG% [data-testid="stColumn"] > [data-testid="stVerticalBlock"] { height: 100%; }
.st-key-%FIG% [class*="st-key-png_"] { display: none; }  /* downloads: the normal page's */
.st-key-%FIG% [data-testid="stCaptionContainer"] { margin-bottom: 0; }
.st-key-%KEYS% { position: absolute; width: 0; height: 0; overflow: hidden; }
.st-key-%PREV% button, .st-key-%NEXT% button,
.st-key-%EXIT% button { white-space: nowrap; min-width: max-content; }
.st-key-%BAR% { flex-wrap: nowrap; }
.st-key-%BAR% [data-testid="stPopover"] button p { white-space: nowrap; }
/* where we are: one line that gives way (cut with …) so the header stays one row */
.st-key-%WHERE%, [data-testid="stLayoutWrapper"]:has(> .st-key-%WHERE%) {
  flex: 1 1 0 !important; min-width: 0; }
.st-key-%WHERE% p { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
@media (min-width: 1600px) { html { font-size: 19px; } }
</style>""".replace("%KEYS%", keys.PRESENTER_KEYS).replace("%PREV%", keys.PRESENTER_PREV).replace(
    "%NEXT%", keys.PRESENTER_NEXT).replace("%EXIT%", keys.PRESENTER_EXIT).replace(
    "%FIG%", deck.FIGURE).replace("%WHERE%", keys.PRESENTER_WHERE).replace(
    "%BAR%", keys.PRESENTER_BAR)

# The clicker and the slide, in the app's own page (the component's iframe is same-origin). The
# code runs in the parent's realm (parent.Function), so it outlives the iframe, and is set up once
# per page (a flag on the document), whatever the reruns do:
# - → / PageDown press Next, ← / PageUp press Previous, unless typing in a field or a list;
# - after a click on anything else (a Reveal toggle, Play, a figure, a radio) the focus goes back
#   to the page, so the clicker's next key moves the deck again;
# - when the header's step changes, the slide is shown from its top;
# - the key figure fits its box: its pictures (keeping their shape) and charts shrink until
#   nothing in the box is cut, and grow back on the next step, when the screen is resized, or
#   (twice at most per step) when the slide leaves them room they were shrunk out of.
DECK_JS = r"""
const doc = document;
if (doc.__vitDeck) return;
doc.__vitDeck = true;
const KEEP = '[role="slider"], [role="listbox"], [role="combobox"], [role="dialog"], ' +
             '[data-baseweb="popover"], [data-baseweb="select"]';
const typing = (t) => {
  if (!t || !t.tagName) return false;
  if (t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable) return true;
  if (t.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(t.type))
    return true;
  return !!(t.closest && t.closest(KEEP));
};
doc.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
  const dir = {ArrowRight: "%NEXT%", PageDown: "%NEXT%",
               ArrowLeft: "%PREV%", PageUp: "%PREV%"}[event.key];
  if (!dir || typing(event.target)) return;
  const b = doc.querySelector(".st-key-" + dir + " button");
  if (!b || b.disabled) return;
  event.preventDefault();
  b.click();
}, true);
doc.addEventListener("click", (event) => {
  if (typing(event.target)) return;
  setTimeout(() => { const a = doc.activeElement;
                     if (a && a !== doc.body && !typing(a)) a.blur(); }, 0);
}, true);
const FITTED = "data-vit-fitted";
const unfit = () => {
  for (const e of doc.querySelectorAll("[" + FITTED + "]")) {
    e.style.maxHeight = ""; e.style.height = ""; e.style.flex = ""; e.removeAttribute(FITTED);
  }
};
const bottomOf = (el) => {  // where el's content ends, also what overflows a shrunk child
  let b = el.getBoundingClientRect().top;
  for (const c of el.children) {
    const r = c.getBoundingClientRect();
    b = Math.max(b, r.bottom, r.height ? r.top + c.scrollHeight : 0);
  }
  return b;
};
let regrown = 0;  // times this step's figure was given back its room (a bound: no ping-pong)
const fit = () => {
  const fig = doc.querySelector(".st-key-%FIG%");
  if (!fig) return;
  const limit = fig.getBoundingClientRect().bottom;
  // shrunk while the slide was still filling in (its words came later), the figure may now
  // leave room unused: let it take its room again, and fit it once more
  if (regrown < 2 && fig.querySelector("[" + FITTED + "]") && limit - bottomOf(fig) > 24) {
    regrown += 1;
    unfit();
    requestAnimationFrame(fit);
    return;
  }
  if (bottomOf(fig) - limit <= 1) return;
  const set = (e, prop, px) => {
    const want = Math.max(48, Math.floor(px)) + "px";
    if (e.style[prop] !== want) { e.style[prop] = want; e.setAttribute(FITTED, ""); }
  };
  // each picture or chart shrinks by what its own column (or the figure) overflows
  const over = (e) => {
    const col = e.closest('[data-testid="stColumn"]');
    const inner = col && fig.contains(col) ? col.querySelector('[data-testid="stVerticalBlock"]')
                                           : null;
    return bottomOf(inner || fig) - limit;
  };
  for (const im of fig.querySelectorAll('[data-testid="stImage"] img')) {
    const o = over(im);
    if (o > 1) set(im, "maxHeight", im.getBoundingClientRect().height - o - 2);
  }
  for (const chart of fig.querySelectorAll('[data-testid="stPlotlyChart"]')) {
    const holder = chart.closest('[data-testid="stElementContainer"]');
    const o = holder ? over(holder) : 0;
    if (o <= 1) continue;
    holder.style.flex = "0 0 auto";
    set(holder, "height", holder.getBoundingClientRect().height - o - 2);
  }
};
let where = null, pending = false, later = null;
const soon = () => {  // fit now, and again once pictures have loaded and plotly has drawn
  if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; fit(); }); }
  clearTimeout(later);
  later = setTimeout(() => { fit(); setTimeout(fit, 700); }, 300);
};
doc.addEventListener("load", (e) => { if (e.target && e.target.tagName === "IMG") soon(); }, true);
new MutationObserver(() => {
  const w = doc.querySelector(".st-key-%WHERE%");
  const now = w ? w.textContent : null;
  if (now !== null && now !== where) {
    where = now;
    regrown = 0;
    unfit();
    const main = doc.querySelector('[data-testid="stMain"]');
    if (main) main.scrollTop = 0;
    window.scrollTo(0, 0);
  }
  soon();
}).observe(doc.body, {childList: true, subtree: true, characterData: true, attributes: true,
                      attributeFilter: ["src", "style"]});
window.addEventListener("resize", () => { unfit(); requestAnimationFrame(fit); });
""".replace("%NEXT%", keys.PRESENTER_NEXT).replace("%PREV%", keys.PRESENTER_PREV).replace(
    "%WHERE%", keys.PRESENTER_WHERE).replace("%FIG%", deck.FIGURE)
KEYS_JS = ("<script>new window.parent.Function(" + json.dumps(DECK_JS) + ")();</script>")


def header(routes: dict, slug: str):
    """Draw the header row (Previous / Next, where we are, speaker notes, Exit); returns the
    row's "Model and image" popover, for sidebar.draw.

    Call before sidebar.draw, after steps.sync. Next / Previous past a stage's last / first
    step switch page here, before anything else is drawn."""
    goto = st.session_state.pop(keys.PRESENTER_GOTO, None)
    if goto in routes and goto != slug:
        go_to(routes, goto)
    config = model_config()
    st.html(CSS)
    with st.container(key=keys.PRESENTER_KEYS):
        st.iframe(KEYS_JS, height=1)
    tour = list(routes)
    t = tour.index(slug) if slug in tour else 0
    slugs = teacher.stages_walked(tour[t])  # Next / Previous: a class's lesson, else the whole tour
    i = slugs.index(tour[t])
    stage = stages.get(tour[t])
    titles = [s.title_for(config) for s in stage.steps_for(config)]
    k = min(steps.current(), len(titles) - 1)
    bar = st.container(horizontal=True, vertical_alignment="center", gap="small",
                       key=keys.PRESENTER_BAR)
    bar.button("Previous", key=keys.PRESENTER_PREV, disabled=i == 0 and k == 0,
               icon=":material/arrow_back:",
               on_click=steps.move, args=(slugs, slug, config, -1),
               help="Previous step (← or PageUp)")
    bar.button("Next", key=keys.PRESENTER_NEXT, type="primary", icon=":material/arrow_forward:",
               disabled=i == len(slugs) - 1 and k == len(titles) - 1,
               on_click=steps.move, args=(slugs, slug, config, +1),
               help="Next step, then the next stage (→ or PageDown)")
    n = len(tour) - 1  # the overview comes before stage 1
    name = stage.title.split(" · ", 1)[-1]  # "4 · Attention heads" -> "Attention heads"
    where = f"Stage {t}/{n}" if t else "Overview"
    with bar.container(key=keys.PRESENTER_WHERE, width="content"):
        st.markdown(f"**{where} · step {k + 1}/{len(titles)}** · {name}: *{titles[k]}*")
    notes = bar.popover("Notes", icon=":material/speaker_notes:",
                        help="The story of this stage and the longer explanation of this step, "
                             "for the teacher: they stay off the slide.")
    bar.button("Exit", key=keys.PRESENTER_EXIT, on_click=leave, icon=":material/close:",
               help="Back to the normal view with the sidebar (model, image, sharing).")
    popover = bar.popover("Model and image", icon=":material/tune:",
                          help="The model, the image and the mask: the sidebar's choices, here "
                               "while the sidebar is hidden.")
    teacher.header(bar, slug, config)
    st.session_state[keys.PRESENTER_NOTES] = notes  # deck.run writes this step's notes into it
    return popover


def model_config():
    """The config of the model in the session (the default one's if it cannot be loaded: the
    sidebar, drawn next, says why and switches to it)."""
    import vit_core

    from .session import model_name

    try:
        return state.get_model(model_name()).config  # at the sidebar's input size
    except (vit_core.CheckpointError, ValueError, OSError, KeyError):
        return state.get_model(vit_core.default_model_name()).config


def go_to(routes: dict, slug: str) -> None:
    from .share import current_params

    st.switch_page(routes[slug][0], query_params=current_params(slug, private=True))


def leave() -> None:
    """on_click: switch presenter mode off before the sidebar's toggle is drawn."""
    st.session_state[keys.PRESENTER] = False
    st.session_state[keys.kept(keys.PRESENTER)] = False
