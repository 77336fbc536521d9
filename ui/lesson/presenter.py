"""Presenter mode, for a projector and a clicker: no sidebar, one step of one stage per slide.

The header is one row: Previous, Next, "Stage 4/10 · step 2/5" with the step's title, Notes
(the speaker notes, in a window of their own), Exit and a "Model and image" popover (the
sidebar's own widgets, drawn there instead of in the hidden sidebar). → and PageDown press Next,
← and PageUp press Previous (a clicker sends those keys). The slide under the header
(ui/lesson/deck.py) is one screen high: the step's controls, its figure filling the height that is
left, its words and its question; the story and the longer explanation are in the speaker
notes, so they never push the figure off the screen.
"""

from __future__ import annotations

import json

import streamlit as st

import vit_core
from ui import keys, stages
from ui.lesson import deck, steps
from ui.lesson.share import current_params
from ui.selection.session import model_name
from ui.serving import state

# No zoom: a zoomed block makes plotly measure the wrong width and clip its own figures. The
# type grows with the screen instead. The slide is a column one screen high; the key figure's
# container (deck.FIGURE) takes the height the other rows leave, and its charts and pictures
# are sized to that container by CSS alone (plotly with height="stretch", pictures filling
# their box drawn with object-fit: contain, so they keep their shape).
# What grows in the figure's box: an element or a row that holds a chart, a picture or a table.
GROW = (':has([data-testid="stPlotlyChart"]), :has([data-testid="stImage"]), '
        ':has([data-testid="stDataFrame"]), [data-testid="stPlotlyChart"], '
        '[data-testid="stImage"], [data-testid="stDataFrame"]')
# a question box with a class's tally under it (a fragment: its own block, the box's last row)
ASKED = ('[class*="st-key-ask_"]:has(> :last-child:not(:first-child) > '
         '[data-testid="stVerticalBlock"])')
CSS = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stHeader"] { display: none; }
[data-testid="stMainBlockContainer"] { max-width: 100%; height: 100vh;
  padding: 0.5rem 1.5rem 0.5rem; }
[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"] { height: 100%;
  flex-wrap: nowrap; gap: 0.5rem; }
/* the words and the question: the room they take is the figure's */
[data-testid="stMainBlockContainer"] [data-testid="stAlert"] > div { padding: 0.5rem 1rem; }
[data-testid="stMainBlockContainer"] [class*="st-key-ask_"] { padding: 0.5rem 1rem; }
/* a class's question: its row on top, under it the answer and the tally side by side, the
   tally's count and its Answers in one row (stacked, they took the figure's room) */
.%ASKED% { display: grid; grid-template-columns: minmax(0, 1fr) auto; gap: 0.25rem 1rem;
  align-items: center; }
.%ASKED% > :first-child { grid-column: 1 / -1; }
.%ASKED% > :last-child > [data-testid="stVerticalBlock"] { flex-direction: row; gap: 0.75rem;
  align-items: center; flex-wrap: nowrap; }
.%ASKED% > :last-child > [data-testid="stVerticalBlock"] > * { flex: 0 0 auto; width: auto; }
.%ASKED% > :last-child [data-testid="stPopover"] button p { white-space: nowrap; }
[data-testid="stMainBlockContainer"] h1 { display: none; }  /* the header names the stage */
[data-testid="stLayoutWrapper"]:has(> .st-key-%FIG%) { flex: 1 1 0 !important;
  min-height: 9rem; }
.st-key-%FIG% { height: 100% !important; overflow: hidden; flex-wrap: nowrap; gap: 0.5rem; }
/* in the figure's box, what holds a chart or a picture (a row of columns, a column's element)
   shares the height the rest leaves; the rest (a title, an equation, a control) keeps its own
   height, never squeezed under a chart */
.st-key-%FIG% > *, .st-key-%FIG% [data-testid="stVerticalBlock"] > * { flex: 0 0 auto; }
.st-key-%FIG% > :is(%GROW%),
.st-key-%FIG% [data-testid="stVerticalBlock"] > :is(%GROW%) { flex: 1 1 0 !important;
  min-height: 0; }
.st-key-%FIG% [data-testid="stHorizontalBlock"],
.st-key-%FIG% [data-testid="stHorizontalBlock"] > [data-testid="stColumn"],
.st-key-%FIG% [data-testid="stColumn"] > [data-testid="stVerticalBlock"] { height: 100%;
  min-height: 0; flex-wrap: nowrap; }
.st-key-%FIG% :is(%GROW%) :is([data-testid="stFullScreenFrame"],
  [data-testid="stFullScreenFrame"] > div, [data-testid="stImage"],
  [data-testid="stImageContainer"]) { height: 100%; min-height: 0; }
/* a picture fills its box and is drawn in it whole, at its own shape (object-fit) */
.st-key-%FIG% [data-testid="stImageContainer"] { display: flex; flex-direction: column; }
.st-key-%FIG% [data-testid="stElementContainer"]:has([data-testid="stImage"]),
.st-key-%FIG% :has(> [data-testid="stImage"]), .st-key-%FIG% [data-testid="stImage"],
.st-key-%FIG% [data-testid="stImageContainer"] {
  width: 100% !important; max-width: 100% !important; }
.st-key-%FIG% [data-testid="stImage"] img { flex: 1 1 0; min-height: 0; width: 100% !important;
  max-width: 100%; object-fit: contain; }
.st-key-%FIG% [data-testid="stImageCaption"] { flex: 0 0 auto; }
.st-key-%FIG% [class*="st-key-png_"] { display: none; }  /* downloads: the normal page's */
.st-key-%FIG% [data-testid="stCaptionContainer"] { margin-bottom: 0; }
.st-key-%KEYS% { position: absolute; width: 0; height: 0; overflow: hidden; }
[data-testid="stLayoutWrapper"]:has(> .st-key-%NOTES%), .st-key-%NOTES% { display: none; }
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
    "%BAR%", keys.PRESENTER_BAR).replace("%GROW%", GROW).replace(
    ".%ASKED%", ASKED).replace(
    "%NOTES%", keys.PRESENTER_NOTES_BOX)

# The clicker and the slide, in the app's own page (the component's iframe is same-origin). The
# code runs in the parent's realm (parent.Function), so it outlives the iframe, and is set up once
# per page (a flag on the document), whatever the reruns do:
# - PageDown presses Next and PageUp Previous, whatever has the focus;
# - → presses Next and ← Previous too, unless the focus is in a field being typed in (a text box,
#   a number's field) or on a control the keyboard reached (Tab): a slider or a list reached with
#   Tab keeps its arrows; one changed with the mouse (or a finger) does not keep the focus;
# - after a pointer's click or drag in the slide (a Reveal toggle, Play, a figure, a radio, a
#   slider, a choice in a list), the focus goes back to the page, so the clicker's next key moves
#   the deck: only a list being opened and a field to type in keep it;
# - when the header's step changes, the slide is shown from its top.
# The slide's layout itself is CSS (above): nothing here measures or resizes the figure.
DECK_JS = r"""
const doc = document;
if (doc.__vitDeck) return;
doc.__vitDeck = true;
const MOVE = {ArrowRight: "%NEXT%", PageDown: "%NEXT%", ArrowLeft: "%PREV%", PageUp: "%PREV%"};
const CONTROL = 'input[type="range"], input[type="radio"], [role="slider"], [role="listbox"], ' +
                '[role="option"], [role="combobox"], [role="radiogroup"], [data-baseweb="select"]';
const writing = (t) => {  // typing into a field: its arrows move the caret
  if (!t || !t.tagName) return false;
  if (t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable) return true;
  return t.tagName === "INPUT" && t.getAttribute("role") !== "combobox" &&
         !["checkbox", "radio", "button", "submit", "range"].includes(t.type);
};
const LIST = '[data-testid="stSelectbox"], [data-testid="stMultiSelect"], [role="combobox"], ' +
             '[aria-haspopup="listbox"], [data-baseweb="select"]';
const MENU = '[data-testid="stPopoverBody"]';  // a popover the teacher opened (Model and image)
let tabbed = false;  // the focus was last moved by the keyboard (Tab), not by a pointer
const release = () => {  // give the focus back to the page (closes an open list)
  const a = doc.activeElement;
  if (a && a !== doc.body && !writing(a) && a.closest('[data-testid="stMain"]')) a.blur();
};
doc.addEventListener("keydown", (event) => {
  if (event.key === "Tab") { tabbed = true; return; }
  if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
  const dir = MOVE[event.key];
  if (!dir) return;
  const t = event.target;
  // arrows stay with a text box, with a control reached with Tab, and with a control in an
  // open popover (a menu the teacher opened: they are setting it); PageDown/PageUp never do
  if (event.key.startsWith("Arrow") && (writing(t) ||
      (t && t.closest && t.closest(CONTROL) && (tabbed || t.closest(MENU))))) return;
  const b = doc.querySelector(".st-key-" + dir + " button");
  if (!b || b.disabled) return;
  event.preventDefault();
  event.stopPropagation();
  release();
  b.click();
}, true);
doc.addEventListener("pointerdown", () => { tabbed = false; }, true);
doc.addEventListener("pointerup", (event) => {
  const t = event.target;
  if (!t || !t.closest || writing(t)) return;
  if (t.closest(LIST)) return;  // a list opening: its choice comes next
  if (t.closest('[role="dialog"], ' + MENU) &&
      !t.closest('[role="option"]')) return;  // the header's popovers keep their focus
  setTimeout(release, 0);
}, true);
// the speaker notes: Notes opens a window of their own (a click: no popup blocker), and every
// change of the page copies the step's notes (the hidden box) into it
let notes = null;
const copyNotes = () => {
  if (!notes || notes.closed) return;
  const box = doc.querySelector(".st-key-%NOTES%"), w = doc.querySelector(".st-key-%WHERE%");
  const html = "<h3>" + (w ? w.innerHTML : "") + "</h3>" + (box ? box.innerHTML : "");
  if (notes.document.body.innerHTML !== html) notes.document.body.innerHTML = html;
};
doc.addEventListener("click", (event) => {
  const t = event.target;
  if (!t || !t.closest || !t.closest(".st-key-%OPEN% button")) return;
  notes = window.open("", "vit-speaker-notes", "width=640,height=760");
  if (!notes) return;
  notes.document.title = "Speaker notes";
  notes.document.head.innerHTML = "<style>body { font: 20px/1.5 sans-serif; margin: 1.5rem; }" +
                                  "</style>";
  copyNotes();
}, true);
let where = null;
new MutationObserver(() => {
  copyNotes();
  const w = doc.querySelector(".st-key-%WHERE%");
  const now = w ? w.textContent : null;
  if (now !== null && now !== where) {
    where = now;
    const main = doc.querySelector('[data-testid="stMain"]');
    if (main) main.scrollTop = 0;
    window.scrollTo(0, 0);
  }
}).observe(doc.body, {childList: true, subtree: true, characterData: true});
""".replace("%NEXT%", keys.PRESENTER_NEXT).replace("%PREV%", keys.PRESENTER_PREV).replace(
    "%WHERE%", keys.PRESENTER_WHERE).replace("%NOTES%", keys.PRESENTER_NOTES_BOX).replace(
    "%OPEN%", keys.PRESENTER_NOTES_OPEN)
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
    slugs = deck.lesson().walk(tour[t], tour)  # Next / Previous: a class's lesson, else the tour
    i = slugs.index(tour[t])
    stage = stages.get(tour[t])
    walk = [stages.get(s) for s in slugs]  # the ui.lesson.deck.Stages steps.move goes through
    titles = [s.title_for(config) for s in stage.steps_for(config)]
    k = min(steps.current(), len(titles) - 1)
    bar = st.container(horizontal=True, vertical_alignment="center", gap="small",
                       key=keys.PRESENTER_BAR)
    bar.button("Previous", key=keys.PRESENTER_PREV, disabled=i == 0 and k == 0,
               icon=":material/arrow_back:",
               on_click=steps.move, args=(walk, stage, config, -1),
               help="Previous step (← or PageUp; a slider or a list reached with Tab or in "
                    "Model and image keeps ← and →)")
    bar.button("Next", key=keys.PRESENTER_NEXT, type="primary", icon=":material/arrow_forward:",
               disabled=i == len(slugs) - 1 and k == len(titles) - 1,
               on_click=steps.move, args=(walk, stage, config, +1),
               help="Next step, then the next stage (→ or PageDown; a slider or a list "
                    "reached with Tab or in Model and image keeps ← and →, PageDown still "
                    "moves on)")
    n = len(tour) - 1  # the overview comes before stage 1
    name = stage.title.split(" · ", 1)[-1]  # "4 · Attention heads" -> "Attention heads"
    where = f"Stage {t}/{n}" if t else "Overview"
    with bar.container(key=keys.PRESENTER_WHERE, width="content"):
        st.markdown(f"**{where} · step {k + 1}/{len(titles)}** · {name}: *{titles[k]}*")
    bar.button("Notes", key=keys.PRESENTER_NOTES_OPEN, icon=":material/speaker_notes:",
               help="The speaker notes (the story of this stage, the longer explanation of this "
                    "step) in a window of their own, off the slide: put it on your own screen; "
                    "it follows the deck.")
    bar.button("Exit", key=keys.PRESENTER_EXIT, on_click=leave, icon=":material/close:",
               help="Back to the normal view with the sidebar (model, image, sharing).")
    popover = bar.popover("Model and image", icon=":material/tune:",
                          help="The model, the image and the mask: the sidebar's choices, here "
                               "while the sidebar is hidden.")
    deck.lesson().header(bar, slug, config)  # a live class's Class popover (ui/live/lesson.py)
    # deck.run writes this step's notes into this hidden box; DECK_JS copies it to the notes' window
    st.session_state[keys.PRESENTER_NOTES] = st.container(key=keys.PRESENTER_NOTES_BOX)
    return popover


def model_config():
    """The config of the model in the session (the default one's if it cannot be loaded: the
    sidebar, drawn next, says why and switches to it)."""
    try:
        return state.get_model(model_name()).config  # at the sidebar's input size
    except (vit_core.CheckpointError, ValueError, OSError, KeyError):
        return state.get_model(vit_core.default_model_name()).config


def go_to(routes: dict, slug: str) -> None:
    own = deck.lesson().address()  # the session's place in a live class stays in its address
    st.switch_page(routes[slug], query_params=current_params(slug, own=own))


def leave() -> None:
    """on_click: switch presenter mode off before the sidebar's toggle is drawn."""
    st.session_state[keys.PRESENTER] = False
    st.session_state[keys.kept(keys.PRESENTER)] = False
