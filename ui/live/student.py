"""A student's side of a live class: join with a code, follow the teacher's steps on their own
image and model (or explore alone and follow again), answer each step's question, and see the
answer for their own image when the teacher reveals it.

Following: every run applies the class's position before anything is drawn (`follow`): the
stage (switching page), the step (by its key: a step this model does not have gives the nearest
one before it), and the teacher's layer / head / patch and every other setting that decides
what the step shows (ui/live/follow.py: the experiment, the training step, the input size, the
mask, M, T, …, each fitted to the student's model or skipped where it has none), except those
the student changed since (then theirs stay, until "Follow again"). The server reruns the page
when the class moves or reveals an answer (ui/live/push.py: the banner notes what the page
shows), and marks the student as still there while the page is open: nothing on the page polls.
"""

from __future__ import annotations

import logging
import threading

import streamlit as st

from ui import keys, stages
from ui.drawing import figures
from ui.lesson import deck, replies, share
from ui.live import classes, push, session
from ui.live import follow as follow_settings
from ui.live.store import StoreDown
from ui.serving.worker import Busy


# ---------------------------------------------------------------- following
def follow(stage: str, routes: dict) -> None:
    """Apply the class's position to this session (call before widgets are drawn); switches
    page when the class is on another stage."""
    if not session.following():
        return
    c = session.current()
    if c is None:
        return
    ss = st.session_state
    ss[keys.LIVE_VERSION] = c.version
    p = c.position
    if p.stage not in routes:
        return
    follow_settings.apply(ss, p)  # may change the model's step or size: its config afresh
    config = follow_settings.Model(ss).config
    ss[keys.PRESENTER_AT], ss[keys.PRESENTER_STEP] = p.stage, step_index(p.stage, p.step, config)
    if p.stage != stage:
        params = share.current_params(p.stage, own=session.params())
        st.switch_page(routes[p.stage], query_params=params)


def step_index(stage: str, step: str, config) -> int:
    """Where the teacher's step is among this model's steps of the stage: the same step, or
    the nearest one before it that this model has (the first if none)."""
    declared = stages.get(stage).steps
    here = stages.get(stage).steps_for(config)
    names = [s.key for s in declared]
    at = names.index(step) if step in names else 0
    before = [i for i, s in enumerate(here) if names.index(s.key) <= at]
    return before[-1] if before else 0


def _explore() -> None:
    st.session_state[keys.LIVE_FOLLOW] = False


def banner(config) -> None:
    """Atop a student's page: the class, where it is, Explore / Follow again; and the watch."""
    ss = st.session_state
    if ss.get(keys.LIVE_NOTICE):
        st.info(ss.pop(keys.LIVE_NOTICE), icon=":material/groups:")
    if session.role() != "student":
        session.pages().forget(push.here())
        return
    c = session.current()
    if c is None:
        return
    p = c.position
    stage = stages.BY_SLUG.get(p.stage)
    where = ""
    if stage is not None:
        here = stage.steps_for(config)
        k = step_index(p.stage, p.step, config)
        where = f"{stage.title}, step {k + 1}/{len(here)}: *{here[k].title_for(config)}*"
    with st.container(border=True, key=keys.LIVE_BANNER, horizontal=True,
                      vertical_alignment="center"):
        if session.following():
            st.markdown(f":material/groups: **Following class {classes.pretty(c.code)}** · "
                        f"on your own image · {where}", width="stretch")
            st.button("Explore on my own", on_click=_explore, icon=":material/explore:",
                      help="Stop following: move freely; the class's questions stay here.")
        else:
            st.markdown(f":material/explore: **Exploring on your own** · class "
                        f"{classes.pretty(c.code)} is on {where}", width="stretch")
            st.button("Follow again", on_click=session.follow_afresh, type="primary",
                      icon=":material/groups:", help="Back to the class's step.")
        ss[keys.LIVE_WATCH] = (c.version, c.revealed)
    session.pages().note(push.here(), c.code, session.following(), ss[keys.LIVE_WATCH],
                         ss.get(keys.LIVE_ME))  # (marks a new follower as still here)


# ---------------------------------------------------------------- joining (the sidebar)
def _join_typed() -> None:
    session.join(st.session_state.get(keys.LIVE_CODE_INPUT, ""))


def _leave() -> None:
    session.leave("You left the class: you are exploring on your own.")


def sidebar_box() -> None:
    """Join a class by its code; in one: the nickname and Leave."""
    if session.role() == "teacher":
        return
    if session.role() == "student":
        code = st.session_state[keys.LIVE_JOIN]
        with st.expander(f"Class {classes.pretty(code)}", expanded=False,
                         icon=":material/groups:"):
            st.text_input("Nickname (optional)", key=keys.LIVE_NICK, max_chars=30,
                          help="Shown to the teacher with your answers; nobody else sees it.")
            st.button("Leave the class", on_click=_leave)
        return
    with st.expander("Join a class", icon=":material/groups:"):
        st.text_input("Code on the projector", key=keys.LIVE_CODE_INPUT, max_chars=12,
                      placeholder="ABC-DEF")
        st.button("Join", on_click=_join_typed, type="primary")


# ---------------------------------------------------------------- answering
def _send(stage: str, step: str, q, kind: str, value) -> None:
    """on_click of Send: the answer, marked against this student's own image."""
    ss = st.session_state
    c = session.current()
    if c is None or value is None or (kind == "words" and not str(value).strip()):
        return
    try:
        scores = _scores(q.reply, value)
        took = classes.answer(session.store(), c, ss[keys.LIVE_ME], ss.get(keys.LIVE_NICK, ""),
                              stage, step, q.question, kind, replies.shown(q.reply, value),
                              replies.judge(q.reply, value), scores)
    except Busy as e:
        ss[keys.LIVE_NOTICE] = f"Your answer was not sent: {e}"
        return
    except StoreDown:
        ss[keys.LIVE_NOTICE] = ("The class store is not answering, so your answer was not "
                                "saved: send it again in a moment.")
        return
    if not took:
        ss[keys.LIVE_NOTICE] = "You already answered this question: the first answer counts."
        return
    if scores.get(replies.PENDING) and callable(getattr(q.reply, "later", None)):
        _score_later(q.reply.later, tuple(value), c.code, ss[keys.LIVE_ME], stage, step)
    # said apart from the page (a toast: if the class moved meanwhile, the page shows the next
    # step), by the box's run after this callback: an element drawn inside a fragment's callback
    # makes Streamlit warn that it may replace the top of the page (the server's log, each Send)
    ss[keys.LIVE_SAVED] = f"Your answer to “{q.question}” was saved."


def _scores(reply, value) -> dict:
    """The numbers a reply computes for an answer on this student's own image (a guess's
    AUCs: ui/lesson/replies.PatchSet), kept with it in the class's store and CSV."""
    scorer = getattr(reply, "scores", None)
    return scorer(tuple(value)) if callable(scorer) else {}


def _score_later(later, value: tuple, code: str, student: str, stage: str, step: str) -> None:
    """On a thread of its own (the page goes on): wait for the answer's scores (`later`) and
    put them in place of the pending ones, in the store the teacher's tally and CSV read."""
    store = session.store()

    def go() -> None:
        try:
            classes.rescore(store, code, student, stage, step, later(value))
        except Exception:  # (the store down) the answer stays pending, as the tally says
            logging.getLogger(__name__).exception("scoring %s/%s later failed", stage, step)

    threading.Thread(target=go, name="score-later", daemon=True).start()


KINDS = {replies.Choice: "choice", replies.Number: "number", replies.PatchPick: "patch",
         replies.PatchSet: "patches", replies.Words: "words"}


def answer_box(stage: str, step: str, q, view) -> bool:
    """The question with an input that fits it; the answer once the teacher reveals it.
    False when the session is not in a class after all (the caller draws the usual box)."""
    if session.current() is None:
        return False
    _answer(stage, step, q, view)
    return True


@st.fragment
def _answer(stage: str, step: str, q, view) -> None:
    """The box's inside, a fragment: choosing an answer and sending it rerun the box alone,
    not the student's page (its figures are not built again for a click)."""
    ss = st.session_state
    c = session.current()
    if c is None:  # the class ended since the page was drawn: the page says so
        st.rerun(scope="app")
    if ss.get(keys.LIVE_NOTICE):  # from Send (the page's banner shows it on a full run)
        st.warning(ss.pop(keys.LIVE_NOTICE), icon=":material/groups:")
    if ss.get(keys.LIVE_SAVED):
        st.toast(ss.pop(keys.LIVE_SAVED), icon=":material/check:")
    st.markdown(f"**Question for the class:** {q.question}")
    try:
        mine = classes.answered(session.store(), c.code, ss[keys.LIVE_ME], stage, step)
    except StoreDown:
        st.caption(session.NOTICE_DOWN)
        return
    if mine is None:
        _input(stage, step, q, view)
    else:
        st.markdown(f"Your answer: **{mine.value}** (sent)")
    if c.is_revealed(stage, step):
        st.info(q.answer, icon=":material/lightbulb:")
        if mine is not None and mine.right is not None:
            (st.success if mine.right else st.warning)(
                "Your answer was right for your image." if mine.right else
                "Your answer was not right for your image: the answer above is computed from "
                "it.")
    else:
        st.caption("The answer, computed for your image, appears here when the teacher "
                   "reveals it.")


def asked(stage: str, step: str) -> deck.Asked | None:
    """The student's own answer to a step and whether it was revealed (None: in no class)."""
    c = session.current()
    if c is None:
        return None
    try:
        mine = classes.answered(session.store(), c.code, st.session_state[keys.LIVE_ME], stage,
                                step)
    except StoreDown:
        mine = None
    return deck.Asked(mine, c.is_revealed(stage, step))


def _input(stage: str, step: str, q, view) -> None:
    reply, key = q.reply, keys.answer(stage, step)
    kind = KINDS[type(reply)]
    if isinstance(reply, replies.Choice):
        value = st.radio(reply.prompt, reply.options, index=None, key=key)
    elif isinstance(reply, replies.Number):
        value = st.number_input(f"{reply.prompt} ({reply.unit})" if reply.unit else
                                reply.prompt, value=None, key=key, format="%g")
    elif isinstance(reply, replies.PatchPick):
        value = _patch_input(view, key, keys.answer_grid(stage, step), reply.prompt,
                             keys.answer_typed(stage, step))
    elif isinstance(reply, replies.PatchSet):  # chosen on the step's own figure
        value = reply.chosen if len(reply.chosen) == reply.k else None
        st.caption(f"{reply.prompt}: {len(reply.chosen)} of {reply.k} chosen"
                   + (f" ({replies.shown(reply, reply.chosen)})." if reply.chosen else "."))
    else:
        value = st.text_input("Your answer", key=key, max_chars=classes.MAX_WORDS)
    st.button("Send", key=keys.answer_send(stage, step), on_click=_send,
              args=(stage, step, q, kind, value),
              disabled=value is None or value == "", icon=":material/send:")


def _patch_input(view, key: str, chart: str, prompt: str, typed: str) -> int | None:
    """Click a patch of your own image's grid, or type its number (a keyboard cannot click a
    chart's cell)."""
    ss = st.session_state

    def typed_in() -> None:
        if ss.get(typed) is not None:
            ss[key] = int(ss[typed])

    def clicked() -> None:
        points = (ss.get(chart) or {}).get("selection", {}).get("points", [])
        if points and points[0].get("customdata") is not None:
            data = points[0]["customdata"]
            ss[key] = int(data[0] if isinstance(data, list) else data)

    c = view.c
    chosen = ss.get(key)
    st.caption(f"{prompt} to answer." if chosen is None else
               f"Chosen: patch {chosen} (click another to change).")
    st.plotly_chart(figures.patch_grid(view.prep.crop, c.patch_size, selected=chosen,
                                       show_index=c.grid <= 16, height=320),
                    key=chart, on_select=clicked, selection_mode="points",
                    config={"displayModeBar": False})  # its toolbar covered the top row
    n = c.grid * c.grid
    st.number_input(f"…or type the patch's number (0 to {n - 1}, as printed on the grid)"
                    if c.grid <= 16 else f"…or type the patch's number (0 to {n - 1})",
                    min_value=0, max_value=n - 1, value=None, step=1, key=typed,
                    on_change=typed_in)
    return chosen
