"""ViT Explainer: one page per stage (ui/stages.STAGES) and the shared sidebar. No math here."""

# pandas whole before any session's thread builds a figure: plotly's validators import it on
# first use, and two sessions' first runs importing it at once (the load test's two students)
# got "partially initialized module 'pandas' has no attribute 'Series'" in figures.model_map
import pandas  # noqa: F401, I001

from ui.serving import process

process.tune()  # before torch loads: the OpenMP setting of a server (ui/serving/process.py)

from functools import partial  # noqa: E402

import streamlit as st  # noqa: E402

from ui import keys, stages  # noqa: E402
from ui.drawing import a11y, icon, phone  # noqa: E402
from ui.lesson import deck, presenter, routes, share, steps  # noqa: E402
from ui.live import lesson, student, teacher  # noqa: E402
from ui.live import session as live  # noqa: E402
from ui.selection import controls, sidebar  # noqa: E402
from ui.serving import readahead, worker  # noqa: E402

deck.join(lesson.LESSON)  # the live class joins the deck: its question boxes, header, Next walk

share.load_once()  # a shared link restores its view before any widget exists
live.load_once()  # a teacher's or student's address brings the session back into its class
presenting = bool(st.session_state.get(keys.PRESENTER))
st.set_page_config(page_title="ViT Explainer", page_icon=icon.favicon(), layout="wide",
                   initial_sidebar_state="collapsed" if presenting else "auto")
start = st.query_params.get("page", "overview")
pages = {s.slug: st.Page(partial(deck.run, s), title=s.nav_title, icon=s.icon, url_path=s.slug,
                         default=s.slug == start) for s in stages.STAGES}  # a page: deck.run
routes.register(pages)  # st.switch_page's pages (ui/lesson/navigate.py, presenter, live class)
pg = st.navigation(list(pages.values()), expanded=True)  # all 13 pages: past 10 it folds
stage = next(slug for slug, page in pages.items() if page.url_path == pg.url_path)
controls.keep_shared()  # layer / head / patch survive moving between pages
student.follow(stage, pages)  # a following student: the class's stage, step and settings,
head = None  # before any widget (may switch page)
st.session_state.pop(keys.PRESENTER_NOTES, None)  # one run's popover: the header sets it again
if st.session_state.get(keys.PRESENTER):  # (kept across st.switch_page by keep_shared) the
    # header row first, with the sidebar's widgets in its popover
    steps.sync(stages.get(stage), presenter.model_config())  # before share.write (the link)
    head = presenter.header(pages, stage)
    teacher.publish(stage, presenter.model_config())  # the class follows (a teacher's only)
sidebar.draw(stage, where=head)  # after st.navigation and before pg.run(): uploads reach the
controls.remember_sidebar()  # session reliably
if head is None:
    with st.sidebar:
        student.sidebar_box()
config = presenter.model_config()  # the session's model at the sidebar's input size
controls.clamp(config)
share.write(stage, own=live.params())  # the class's part too: this session's own address
phone.install(live.following())  # the phone's CSS and touch fix (ui/drawing/phone.py)
a11y.install()  # focus ring, names for scrolling boxes (ui/drawing/a11y.py)
if head is None:  # (presenter mode has its own "Model and image")
    phone.image_picker()  # a phone's "Your image", atop the page
student.banner(config)
try:
    pg.run()
    sidebar.fingerprint()
    readahead.schedule()  # the later pages' work for this image, while the worker would idle
except worker.Busy as e:  # a wait for the model past its limit: one sentence, the session goes on
    st.error(str(e), icon=":material/hourglass_top:")
