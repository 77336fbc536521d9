"""The teacher's side of a live class, in presenter mode: start it, show its code, move it,
reveal answers, watch the answers come in, download them, end it.

Only a session holding the class's secret (ui/live/session.py: the teacher's own address) gets
here; every action also checks the secret against the store (ui/live/classes.py), so a student
who sends the same actions without it changes nothing.
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import urlencode

import plotly.graph_objects as go
import streamlit as st

from ui import keys, stages
from ui.drawing import palette
from ui.drawing.readable import readable
from ui.lesson import share, steps
from ui.live import classes, follow, session
from ui.live.store import StoreDown
from ui.serving.ticking import ticking

TALLY_EVERY = 2.0  # s between refreshes of the answer counts on the teacher's screen
RIGHT, WRONG, UNMARKED = "right for their own image", "not right", "not marked"


def join_link(code: str) -> str:
    return share.root_url()[0] + "?" + urlencode({keys.LIVE_JOIN: code})


def publish(stage: str, config) -> None:
    """Call once per presenter run, before the page is drawn: the class moves where the
    teacher is (stage, step, layer, head, patch and the stage's other settings: ui/live/follow.py);
    nothing is written when nothing moved."""
    if session.role() != "teacher":
        return
    ss = st.session_state
    here = stages.get(stage).steps_for(config)
    step = here[steps.index_in(stage, len(here))]
    position = follow.position(ss, stage, step.key, config.grid)
    _act(lambda store, code, secret: classes.move(store, code, secret, position))


def _act(action):
    """Run a teacher's action; one sentence on screen when it is refused or the store is down
    (and the session leaves a class that has ended)."""
    ss = st.session_state
    if session.role() != "teacher":  # left the class earlier in this run
        return None
    try:
        return action(session.store(), ss[keys.LIVE_CODE], ss[keys.LIVE_SECRET])
    except classes.ClassError as e:
        session.leave(str(e))
    except StoreDown:
        ss[keys.LIVE_NOTICE] = session.NOTICE_DOWN
    return None


def _start(stage: str, step: str, grid: int) -> None:
    """on_click of "Start a class"."""
    ss = st.session_state
    chosen = ss.get(keys.LIVE_LESSON) or []
    tour = list(stages.BY_SLUG)
    lesson = () if set(tour) <= set(chosen) else tuple(s for s in tour if s in chosen)
    try:
        c, secret = classes.start(session.store(), follow.position(ss, stage, step, grid), lesson)
    except StoreDown:
        ss[keys.LIVE_NOTICE] = session.NOTICE_DOWN
        return
    ss.pop(keys.LIVE_JOIN, None)
    ss[keys.LIVE_CODE], ss[keys.LIVE_SECRET] = c.code, secret
    ss.pop(keys.LIVE_NOTICE, None)


def _end() -> None:
    """on_click of "End the class": its answers are deleted with it."""
    _act(classes.end)
    session.leave("The class has ended and its answers are deleted.")


def header(bar, stage: str, config) -> None:
    """The header's "Class" popover and, in a class, its code and how many follow."""
    ss = st.session_state
    c = session.current() if session.role() == "teacher" else None
    if c is not None and not classes.is_teacher(c, ss.get(keys.LIVE_SECRET)):
        session.leave("This address does not hold the teacher's secret of class "
                      f"{classes.pretty(c.code)}, so it cannot move it: join it as a student.")
        c = None
    if ss.get(keys.LIVE_NOTICE):
        st.toast(ss.pop(keys.LIVE_NOTICE), icon=":material/groups:")
    with bar.popover("Class", icon=":material/groups:",
                     help="A live class: students follow your steps on their own laptops and "
                          "images and answer each step's question."):
        if c is None:
            _offer(stage, config)
        else:
            _panel(c)
    if c is not None:
        with bar.container(key=keys.LIVE_HEADER, width="content"):
            _followers(c.code)


def _offer(stage: str, config) -> None:
    st.markdown("Start a class: students open its link (or type its code) and follow your "
                "steps on their own image and model, answer each step's question on their "
                "screen, and see the answer, computed for their image, when you reveal it.")
    if session.shared_store_missing():
        st.warning("Classes need the shared store when the app runs behind a load balancer "
                   "(students on another copy would never see the class): start every copy "
                   "with VIT_EXPLAINER_REDIS_URL set (docs/deployment.md).")
        return
    here = stages.get(stage).steps_for(config)
    step = here[steps.index_in(stage, len(here))].key
    tour = list(stages.BY_SLUG)
    st.multiselect("Today's stages", tour, default=tour, key=keys.LIVE_LESSON,
                   format_func=_stage_title,
                   help="Next and Previous walk these, in the tour's order (a stage opened "
                        "from the menu is walked too), and the students' laptops prepare "
                        "them ahead: leave out the stages you will skip.")
    st.button("Start a class", key=keys.LIVE_START, type="primary", on_click=_start,
              args=(stage, step, config.grid), icon=":material/play_circle:")


def _stage_title(slug: str) -> str:
    return stages.get(slug).nav_title


def stages_walked(slug: str) -> list[str]:
    """The stages the presenter's Next and Previous go through: in a class the teacher leads,
    its lesson's (with this one); else the whole tour."""
    c = session.current() if session.role() == "teacher" else None
    return stages.walk(c.lesson if c else (), slug)


def _panel(c: classes.Class) -> None:
    link = join_link(c.code)
    st.markdown(f"### Code {classes.pretty(c.code)}")
    if c.lesson:
        st.caption("Today's stages: " + " → ".join(_stage_title(s) for s in c.lesson))
    st.markdown(f"Students open **{link}** or scan the code, or type the code under "
                f"*Join a class* in the sidebar.")
    st.image(share.qr_png(link), width=180, caption="QR code of the class's link",
             alt="QR code of the class's link")
    answers = _act(classes.answers) or []
    st.download_button("Download the answers (CSV)", key=keys.LIVE_CSV,
                       data=classes.to_csv(answers), file_name=f"class-{c.code}.csv",
                       mime="text/csv", icon=":material/download:",
                       help=f"{len(answers)} answers so far: one row per answer, students by "
                            f"an anonymous id (and the nickname they chose, if any).")
    st.caption("Your address holds this class's teacher secret (it lets you move the class): "
               "keep the browser's address bar off the projector (full screen, F11).")
    st.button("End the class", key=keys.LIVE_END, on_click=_end, icon=":material/stop_circle:",
              help="Every student goes back to exploring alone; the class's answers are "
                   "deleted (download them first).")


@ticking(TALLY_EVERY)
def _followers(code: str) -> None:
    try:
        n = classes.following(session.store(), code)
    except StoreDown:
        st.markdown(f"**{classes.pretty(code)}** · store not answering")
        return
    st.markdown(f"Join: **{classes.pretty(code)}** · {n} following")


# ---------------------------------------------------------------- a step's question
def question_box(stage: str, step: str, q) -> None:
    """The question for the class: Reveal (on every screen), and the answers as they come."""
    c = session.current()
    if c is None:
        return
    left, right = st.columns([6, 2], vertical_alignment="center")
    left.markdown(f"**Ask the class:** {q.question}")
    if c.is_revealed(stage, step):
        right.markdown(":material/visibility: Revealed")
        st.info(q.answer, icon=":material/lightbulb:")
    else:
        right.button("Reveal to the class", key=keys.reveal_class(stage, step),
                     on_click=lambda: _act(lambda s, code, secret: classes.reveal(
                         s, code, secret, stage, step)),
                     help="Shows the answer on every screen, each computed for that student's "
                          "own image.")
    _tally(stage, step, q.reply)


@ticking(TALLY_EVERY)
def _tally(stage: str, step: str, reply=None) -> None:
    found = _act(lambda s, code, secret: classes.counts(s, code, secret, stage, step))
    if found is None:
        return
    if not found:
        st.caption("No answer yet.")
        return
    marks = Counter(RIGHT if a.right else WRONG if a.right is False else UNMARKED
                    for a in found)
    st.caption(f"{len(found)} answered: " + ", ".join(
        f"{marks[m]} {m}" for m in (RIGHT, WRONG, UNMARKED) if marks[m]) + ".")
    worded = getattr(reply, "summary", None)
    if callable(worded):  # answers with scores (a guess): the reply words the class's
        st.markdown(worded(found))
        with st.popover("Answers", icon=":material/table:"):
            st.dataframe([{"student": a.nickname or a.student, "answer": a.value, **{
                k: v for k, v in a.scores.items() if k != "patches"}} for a in found],
                hide_index=True, key=keys.tally(stage, step))
        return
    with st.popover("Answers", icon=":material/bar_chart:"):
        if found[0].kind == "words":
            for a in found:
                st.markdown(f"- {a.value}" + (f" *({a.nickname})*" if a.nickname else ""))
        else:
            st.plotly_chart(tally_figure(found), key=keys.tally(stage, step))


def tally_figure(found: list) -> go.Figure:
    """How many students gave each answer, split by whether it was right for their image (its
    text at the figures' floor, ui/drawing/readable.py: the teacher projects it)."""
    order = [v for v, _ in Counter(a.value for a in found).most_common(12)]
    fig = go.Figure()
    for mark, colour, hatch in ((RIGHT, palette.RIGHT, ""), (WRONG, palette.WRONG, "/"),
                                (UNMARKED, palette.UNMARKED, ".")):  # not colour alone
        n = [sum(1 for a in found if a.value == v and
                 (RIGHT if a.right else WRONG if a.right is False else UNMARKED) == mark)
             for v in order]
        if any(n):
            fig.add_bar(y=order, x=n, name=mark, orientation="h", text=n, textposition="inside",
                        marker=dict(color=colour, pattern=palette.hatch(hatch, colour)),
                        insidetextfont=dict(color=palette.ink_on(colour)))
    most = max(Counter(a.value for a in found).values())
    fig.update_layout(barmode="stack", height=110 + 28 * len(order), width=460,
                      margin=dict(l=10, r=10, t=40, b=40), showlegend=True,
                      legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0),
                      xaxis=dict(title="students who gave it", tickformat="d",
                                 dtick=max(1, -(-most // 5)), rangemode="tozero"),
                      yaxis=dict(title="answer", autorange="reversed"))
    return readable(fig)
