"""Presenter mode, for a projector and a clicker: no sidebar, one step of one stage per screen.

The header is one row: ◀ Previous, Next ▶, "Stage 4/10 · step 2/5" with the step's title, ✕ Exit
and a "Model and image" popover (the sidebar's own widgets, drawn there instead of in the hidden
sidebar). → and PageDown press Next, ← and PageUp press Previous (a clicker sends
those keys). The stage's story is said on its first step; the questions to ask the class, with
answers computed from this trace, come under its last step.
"""

from __future__ import annotations

import streamlit as st

from . import keys, questions, session, state, steps
from .narrative import NARRATIVE

# No zoom: a zoomed block makes plotly measure the wrong width and clip its own figures. The
# type grows with the screen instead, and every figure keeps its container's width.
CSS = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stHeader"] { display: none; }
[data-testid="stMainBlockContainer"] { max-width: 100%; padding: 0.6rem 1.5rem 3rem; }
[data-testid="stMainBlockContainer"] h1 { display: none; }  /* the header names the stage */
.st-key-%KEYS% { position: absolute; width: 0; height: 0; overflow: hidden; }
.st-key-%PREV% button, .st-key-%NEXT% button,
.st-key-%EXIT% button { white-space: nowrap; min-width: max-content; }
@media (min-width: 1600px) { html { font-size: 19px; } }
</style>""".replace("%KEYS%", keys.PRESENTER_KEYS).replace("%PREV%", keys.PRESENTER_PREV).replace(
    "%NEXT%", keys.PRESENTER_NEXT).replace("%EXIT%", keys.PRESENTER_EXIT)

# The clicker: a key listener on the app's own page (the component's iframe is same-origin).
# It is created in the parent's realm (parent.Function), so it outlives the iframe, and
# registered once per page (a flag on the document), whatever the reruns do.
KEYS_JS = """<script>
const doc = window.parent.document;
if (!doc.__vitPresenterKeys) {
  doc.__vitPresenterKeys = true;
  const onKey = new window.parent.Function("event", `
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
    const dir = {ArrowRight: "NEXT", PageDown: "NEXT",
                 ArrowLeft: "PREV", PageUp: "PREV"}[event.key];
    if (!dir) return;
    const t = event.target;
    if (t && (["INPUT", "TEXTAREA", "SELECT"].includes(t.tagName) || t.isContentEditable ||
              (t.closest && t.closest('[role="slider"], [role="listbox"], [role="combobox"], ' +
                                      '[role="radiogroup"], [role="tablist"], [role="dialog"]'))))
      return;
    const b = document.querySelector(".st-key-" + (dir === "NEXT" ? "%NEXT%" : "%PREV%") +
                                      " button");
    if (!b || b.disabled) return;
    event.preventDefault();
    b.click();`);
  doc.addEventListener("keydown", onKey);
}
</script>""".replace("%NEXT%", keys.PRESENTER_NEXT).replace("%PREV%", keys.PRESENTER_PREV)


def header(stages: dict, slug: str):
    """Draw the header row (Previous / Next, where we are, Exit) and the story on a stage's
    first step; returns the row's "Model and image" popover, for sidebar.draw.

    Call before sidebar.draw, after steps.sync. Next / Previous past a stage's last / first
    step switch page here, before anything else is drawn."""
    goto = st.session_state.pop(keys.PRESENTER_GOTO, None)
    if goto in stages and goto != slug:
        go_to(stages, goto)
    config = model_config()
    st.html(CSS)
    with st.container(key=keys.PRESENTER_KEYS):
        st.iframe(KEYS_JS, height=1)
    slugs = list(stages)
    i = slugs.index(slug) if slug in slugs else 0
    k, n_steps = steps.current(), steps.count(slug, config)
    bar = st.container(horizontal=True, vertical_alignment="center", gap="small")
    bar.button("◀ Previous", key=keys.PRESENTER_PREV, disabled=i == 0 and k == 0,
               on_click=steps.move, args=(slugs, slug, config, -1),
               help="Previous step (← or PageUp)")
    bar.button("Next ▶", key=keys.PRESENTER_NEXT, type="primary",
               disabled=i == len(slugs) - 1 and k == n_steps - 1,
               on_click=steps.move, args=(slugs, slug, config, +1),
               help="Next step, then the next stage (→ or PageDown)")
    title = stages[slugs[i]][1].split(" · ", 1)[-1]  # "4 · Attention heads" -> "Attention heads"
    n = len(slugs) - 1  # the overview comes before stage 1
    stage = f"Stage {i}/{n}" if i else "Overview"
    what = (f"then {n} stages, from pixels to logits" if not i else
            f"{title}: *{steps.titles(slug, config)[k]}*")
    bar.markdown(f"**{stage} · step {k + 1}/{n_steps}** · {what}")
    bar.button("✕ Exit", key=keys.PRESENTER_EXIT, on_click=leave,
               help="Back to the normal view with the sidebar (model, image, sharing).")
    popover = bar.popover("Model and image", icon=":material/tune:",
                          help="The model, the image and the mask: the sidebar's choices, here "
                               "while the sidebar is hidden.")
    if k == 0 and NARRATIVE.get(slug):
        st.success(NARRATIVE[slug])
    return popover


def model_config():
    """The config of the model in the session (the default one's if it cannot be loaded: the
    sidebar, drawn next, says why and switches to it)."""
    import vit_core

    try:
        return state.get_model(st.session_state[keys.MODEL]).config
    except (vit_core.CheckpointError, ValueError, OSError, KeyError):
        return state.get_model(vit_core.default_model_name()).config


def ask(slug: str, config) -> None:
    """Under a stage's last step: the questions to ask the class, each with its answer from
    this model and image behind a Reveal toggle."""
    if steps.current() != steps.count(slug, config) - 1:
        return
    inp, name = session.current()
    model = state.get_model(name)
    tr = state.trace(inp, name, mask=session.chosen_mask())
    gen = (state.generation(inp, name, mask=session.chosen_mask())
           if slug == "logits" and config.has_text else None)
    if slug == "shapes" and config.has_text:  # the shape trace counts the pass with its text
        tr = state.caption_pass(inp, name, mask=session.chosen_mask())[2]
    found = _questions(inp.key, name, session.chosen_mask(), slug,
                       questions.Selection.of(st.session_state), model, tr, gen)
    if not found:
        return
    with st.container(border=True):
        st.markdown("**Ask the class**")
        for j, q in enumerate(found):
            st.markdown(q.question)
            if st.toggle("Reveal", key=keys.reveal(slug, j)):
                st.info(q.answer)


@state.held
def _questions(key: str, model_name: str, mask: str | None, slug: str, sel, _model, _tr, _gen):
    """The stage's questions, computed once per image, model, mask, stage and selection (the
    answers read every block of a lean trace, which recomputes blocks when read)."""
    return questions.for_stage(slug, _model, _tr, sel, _gen)


def go_to(stages: dict, slug: str) -> None:
    from .share import current_params

    st.switch_page(stages[slug][0], query_params=current_params(slug))


def leave() -> None:
    """on_click: switch presenter mode off before the sidebar's toggle is drawn."""
    st.session_state[keys.PRESENTER] = False
    st.session_state[keys.kept(keys.PRESENTER)] = False
