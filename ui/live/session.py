"""This session's place in a live class: the teacher of one, a student in one, or neither.

The teacher's address holds the class code and the teacher's secret (`?class=…&teach=…`); a
student's holds the code and an anonymous id (`?join=…&me=…`). Both are read once per session
(`load_once`, like the rest of the view: ui/lesson/share.py) and written back with the view, so a
reload, or a replica restarting under the balancer, brings the session back into its class with
the same id: the same answers count as theirs.
"""

from __future__ import annotations

import streamlit as st

from ui import keys
from ui.live import classes, push
from ui.live.store import StoreDown, open_store
from ui.selection import models

NOTICE_DOWN = ("The class store is not answering, so the class cannot be reached right now; "
               "the app goes on without it and tries again on the next click.")


def store():
    return open_store()


@st.cache_resource(show_spinner=False)
def pages() -> push.Pages:
    """This process's students' pages, rerun when their class changes (ui/live/push.py)."""
    return push.Pages(mark=lambda code, student: classes.seen(open_store(), code, student))


@st.cache_resource(show_spinner=False)
def watcher() -> classes.Watcher:
    """One per process: every session of this process asks it about its class; each change
    reruns the pages that show an older state of it."""
    p = pages()
    w = classes.Watcher(open_store(), then=p.changed)
    p.latest = w.latest
    return w


def load_once() -> None:
    """Read the class from the address into the session, once (share.load_once's pattern)."""
    ss = st.session_state
    if ss.get(keys.LIVE_LOADED):
        return
    ss[keys.LIVE_LOADED] = True
    q = st.query_params
    if q.get(keys.LIVE_CODE) and q.get(keys.LIVE_SECRET):
        ss[keys.LIVE_CODE], ss[keys.LIVE_SECRET] = q[keys.LIVE_CODE], q[keys.LIVE_SECRET]
    elif q.get(keys.LIVE_JOIN):
        join(q[keys.LIVE_JOIN], student=q.get(keys.LIVE_ME))


def join(text: str, student: str | None = None) -> bool:
    """A student joins the class with this code (the address's or typed); False with a notice
    when the code is wrong, the tries are used up or the store is down."""
    ss = st.session_state
    try:
        c = classes.join(store(), text, address())
    except classes.ClassError as e:
        ss[keys.LIVE_NOTICE] = str(e)
        return False
    except StoreDown:
        ss[keys.LIVE_NOTICE] = NOTICE_DOWN
        return False
    ss.pop(keys.LIVE_SECRET, None)
    ss.pop(keys.LIVE_CODE, None)
    ss[keys.LIVE_JOIN] = c.code
    ss[keys.LIVE_ME] = student if _plausible_id(student) else classes.new_student()
    follow_afresh()
    ss.pop(keys.LIVE_NOTICE, None)
    return True


def follow_afresh() -> None:
    """Follow the teacher from now on, the teacher's layer / head / patch included (on joining,
    and on "Follow again")."""
    ss = st.session_state
    ss[keys.LIVE_FOLLOW] = True
    ss[keys.LIVE_VERSION] = None
    ss[keys.LIVE_APPLIED] = {}
    ss[keys.LIVE_OWN] = set()


def _plausible_id(student: str | None) -> bool:
    return bool(student) and 8 <= len(student) <= 24 and student.replace("-", "").replace(
        "_", "").isalnum()


def address() -> str:
    """Who is asking, for counting wrong codes: the browser's address (the first
    X-Forwarded-For behind the balancer, which sets it)."""
    forwarded = st.context.headers.get("X-Forwarded-For")
    if isinstance(forwarded, str) and forwarded:
        return forwarded.split(",")[0].strip()
    ip = st.context.ip_address
    return ip if isinstance(ip, str) and ip else "unknown"


def role() -> str | None:
    """"teacher", "student" or None (not in a class)."""
    ss = st.session_state
    if ss.get(keys.LIVE_CODE) and ss.get(keys.LIVE_SECRET):
        return "teacher"
    if ss.get(keys.LIVE_JOIN):
        return "student"
    return None


def code() -> str | None:
    ss = st.session_state
    return ss.get(keys.LIVE_CODE) if role() == "teacher" else ss.get(keys.LIVE_JOIN)


def following() -> bool:
    return role() == "student" and bool(st.session_state.get(keys.LIVE_FOLLOW))


def current() -> classes.Class | None:
    """The session's class as this process last heard of it (None: none, ended, or the store
    is down, which the notice says)."""
    c = code()
    if c is None:
        return None
    try:
        found = watcher().latest(c)
    except StoreDown:
        st.session_state[keys.LIVE_NOTICE] = NOTICE_DOWN
        return None
    if found is None:
        hours = classes.LIFETIME / 3600
        leave(f"Class {classes.pretty(c)} has ended (a class ends when its teacher ends it, or "
              f"{hours:g} hours after its last move): start a new one under Class."
              if role() == "teacher" else
              "The class has ended: you are exploring on your own now.")
    return found


def leave(notice: str | None = None) -> None:
    """Out of the class (it ended, or the teacher ended it here)."""
    ss = st.session_state
    for key in (keys.LIVE_CODE, keys.LIVE_SECRET, keys.LIVE_JOIN, keys.LIVE_FOLLOW):
        ss.pop(key, None)
    if notice:
        ss[keys.LIVE_NOTICE] = notice


def params() -> dict[str, str]:
    """The class's part of this session's address (never in a link made for someone else)."""
    ss = st.session_state
    if role() == "teacher":
        return {keys.LIVE_CODE: ss[keys.LIVE_CODE], keys.LIVE_SECRET: ss[keys.LIVE_SECRET]}
    if role() == "student":
        return {keys.LIVE_JOIN: ss[keys.LIVE_JOIN], keys.LIVE_ME: ss[keys.LIVE_ME]}
    return {}


def shared_store_missing() -> bool:
    """Behind the balancer (replicas) with classes kept in this process's memory: students on
    other replicas would never see the class, so starting one is refused."""
    return models.through_proxy() and not store().shared
