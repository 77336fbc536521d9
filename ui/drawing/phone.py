"""A phone is a first-class screen (390×844, 360×740, touch).

The server never learns the screen's width (Streamlit sends it no such thing), so where a
figure needs another layout on a phone, both layouts are drawn, each in a container whose key
names the screens it is for (`both`), and a CSS media query shows one. This is robust: nothing
waits for the browser to report its size, no rerun follows a rotation, and the wide layout is
what the page had before. It costs one more figure's JSON on those few steps.

Below NARROW px (Streamlit's own breakpoint: columns stack there too) the phone layout shows.

Two touch fixes for every page (`install`):
- plotly's toolbar (modebar) is hidden where there is no mouse: it sat over the top row of a
  patch grid, and a tap on patch 3 pressed "Zoom";
- a tap on a chart selects the point under the finger at once. plotly selects "the point under
  the mouse" from its last hover, which a finger only sets at the end of the tap, so a tap chose
  the previous tap's patch (two taps per answer). A touchstart now hovers first (TOUCH_JS).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import streamlit as st

from ui import keys
from ui.selection.sidebar import UPLOAD_TYPES

NARROW = 640  # px: at most this wide, a screen gets the phone layout (st.columns stack here)
PHONE, WIDE = "phone_only_", "wide_only_"  # key prefixes of the two layouts' containers

CSS = f"""<style>
@media (max-width: {NARROW}px) {{ [class*="st-key-{WIDE}"] {{ display: none !important; }}
  [data-testid="stImage"] * {{ max-width: 100% !important; }}
  [data-testid="stImage"] img {{ height: auto !important; }} }}
@media (min-width: {NARROW + 1}px) {{ [class*="st-key-{PHONE}"] {{ display: none !important; }} }}
@media (hover: none), (pointer: coarse) {{ .modebar-container {{ display: none !important; }} }}
.st-key-{keys.PHONE_JS} {{ position: absolute; width: 0; height: 0; overflow: hidden; }}
</style>"""

# A following student's page names the stage and step in its banner (ui/live/student.py): on a
# phone the page's big title, said again under it, would push the step off the first screen.
FOLLOWING_CSS = f"""<style>
@media (max-width: {NARROW}px) {{ [data-testid="stMainBlockContainer"] h1 {{ display: none; }} }}
</style>"""

# Runs in the page (as ui/presenter's KEYS_JS does), once per page: a touch on a chart's drag
# layer first moves plotly's hover there, so the selection on tap is the touched point; and
# when a following student's banner names another step, the page goes back to its top (the
# new step's figure, not the middle of the page where the last question was answered).
TOUCH_JS = """
const doc = window.parent.document;
if (!doc.__vitTouch) {
  doc.__vitTouch = true;
  doc.addEventListener('touchstart', e => {
    const drag = e.target.closest && e.target.closest('.nsewdrag');
    if (!drag || e.touches.length !== 1) return;
    const t = e.touches[0];
    drag.dispatchEvent(new MouseEvent('mousemove', {clientX: t.clientX, clientY: t.clientY,
                                                    bubbles: true}));
  }, {capture: true, passive: true});
  let step = null;
  new MutationObserver(() => {
    const banner = doc.querySelector('.st-key-%BANNER% p');
    const now = banner && banner.textContent.includes('Following class')
                ? banner.textContent : null;
    if (now && step && now !== step) {
      const main = doc.querySelector('[data-testid="stMain"]');
      if (main) main.scrollTo(0, 0);
    }
    step = now;
  }).observe(doc.body, {childList: true, subtree: true, characterData: true});
}""".replace("%BANNER%", keys.LIVE_BANNER)


def install(following: bool = False) -> None:
    """The phone CSS and the touch script, on every page (app.py); `following`: the session
    follows a live class (ui/live/session.following)."""
    st.html(CSS + (FOLLOWING_CSS if following else ""))
    with st.container(key=keys.PHONE_JS):
        st.iframe("<script>new window.parent.Function(" + json.dumps(TOUCH_JS) + ")();</script>",
                  height=1)


def both(key: str, wide: Callable[[], None], phone: Callable[[], None]) -> None:
    """Draw `wide` and `phone`, each in its own container; the screen's width shows one."""
    with st.container(key=WIDE + key):
        wide()
    with st.container(key=PHONE + key):
        phone()


# ---------------------------------------------------------------- the image, atop the page
def image_picker() -> None:
    """On a phone, "Your image" atop every page: upload a photo or take one, without opening
    the sidebar (where the picker sits below the 13 stage links). Its widgets are drawn only
    while it is open (as the sidebar's Share box), and what they take becomes the sidebar's
    upload (keys.UPLOAD), so the sidebar shows it and can stop using it."""
    with st.container(key=PHONE + "image"):
        box = st.popover("Your image", icon=":material/add_a_photo:", key=keys.PHONE_IMAGE,
                         on_change="rerun")
        if not box.open:
            return
        with box:
            st.file_uploader("Upload a photo", type=UPLOAD_TYPES, key=_upload_key(),
                             on_change=_take_upload)
            st.camera_input("…or take one", key=keys.PHONE_CAMERA, on_change=_take_photo)
            st.caption("The model and the sample scenes are in the sidebar (» at the top left).")


def _upload_key() -> str:
    return keys.phone_upload(st.session_state.get(keys.UPLOAD_ROUND, 0))


def _take_upload() -> None:
    file = st.session_state.get(_upload_key())
    if file is not None:
        _use(file.name, file.getvalue())


def _take_photo() -> None:
    photo = st.session_state.get(keys.PHONE_CAMERA)
    if photo is not None:
        _use("camera photo", photo.getvalue())


def _use(name: str, data: bytes) -> None:
    """As the sidebar's uploader does (sidebar._take_upload): the photo is the session's image,
    the uploaders get fresh keys (so they are empty again)."""
    ss = st.session_state
    ss[keys.UPLOAD] = (name, data)
    ss[keys.UPLOAD_ROUND] = ss.get(keys.UPLOAD_ROUND, 0) + 1
    ss[keys.PHONE_IMAGE] = False  # close the popover: the page shows the new image
