"""The view lives in the URL: sample or composed scene, model, training step, input size, layer,
head, patch, mask, stage and presenter mode.

On a session's first run the query parameters are read into session state (values checked and
clamped), and after the sidebar is drawn the current view is written back, so the browser's
address bar is always a link to exactly this view. A query parameter has the name of the
session key it fills (ui/keys.py).

The shared link (and its QR code) uses an address the class can open: when the server listens
on the network and the teacher's browser is on localhost, the machine's LAN address and the
server's port replace the browser's 127.0.0.1.
"""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import streamlit as st

import vit_core
from ui import keys
from ui.drawing import figures
from ui.selection import composer, inputs, models
from ui.serving import state
from vit_core.io.ref import ModelRef

EVERY_INTERFACE = ("", "0.0.0.0", "::")  # server.address values that listen on the network
PRIVATE_PROBES = ("10.255.255.255", "192.168.255.255", "172.31.255.255")

INT_KEYS = (keys.SAMPLE, keys.LAYER, keys.HEAD, keys.PATCH)
MASKS = ("trained", "full", "causal", "prefix")


def load_once() -> None:
    """Copy the URL's view into session state, once per session (before widgets exist)."""
    if st.session_state.get(keys.URL_LOADED):
        return
    st.session_state[keys.URL_LOADED] = True
    q = st.query_params
    wanted = q.get(keys.MODEL)
    if wanted and models.needs_fetch(wanted):  # a real ViT this machine has not fetched yet
        here = models.teacher_actions_allowed()
        st.session_state[keys.LINK_NOTICE] = (
            f"This link opens {wanted}, which is not on this machine yet"
            + (": fetch it below." if here else "; showing another model instead."))
        if here:
            st.session_state[keys.FETCHING] = wanted
    elif wanted in models.choices():
        st.session_state[keys.MODEL] = wanted
    elif wanted:
        st.session_state[keys.LINK_NOTICE] = (f"This link opens {wanted}, which this app does "
                                              f"not offer; showing another model instead.")
    for key in INT_KEYS:
        try:
            st.session_state[key] = int(q[key])
        except (KeyError, ValueError):
            pass
    if st.session_state.get(keys.SAMPLE) not in inputs.sample_seeds():
        st.session_state.pop(keys.SAMPLE, None)
    composer.load_link(q.get(keys.SCENE))
    if q.get(keys.SIZE):  # which sizes a model reads, the sidebar knows (sidebar.size_picker)
        st.session_state[keys.SIZE_ASKED] = q[keys.SIZE]
    if q.get(keys.TRAIN_STEP):  # which steps a model was kept at: sidebar.train_step_picker
        st.session_state[keys.TRAIN_STEP_ASKED] = q[keys.TRAIN_STEP]
    if q.get(keys.MASK) in MASKS:
        st.session_state[keys.MASK] = q[keys.MASK]
    if q.get(keys.PRESENTER) in ("1", "true", "on"):
        st.session_state[keys.PRESENTER] = True
        try:  # ?step=2: the second step of the page's stage (ui/lesson/steps.py clamps it)
            st.session_state[keys.PRESENTER_STEP] = int(q[keys.PRESENTER_STEP]) - 1
            st.session_state[keys.PRESENTER_AT] = q.get("page", "overview")
        except (KeyError, ValueError):
            pass


def current_params(stage: str, own: dict[str, str] | None = None) -> dict[str, str]:
    """The view as query parameters; `own` adds the session's place in a live class (the
    teacher's secret, a student's id: ui/live/session.params): the session's own address only,
    never a shared link."""
    ss = st.session_state
    params = {"page": stage, keys.MODEL: ss.get(keys.MODEL)}
    if ss.get(keys.MODEL):  # the size when not its own, the step when not its last
        params.update(ModelRef.parse(state.sized(state.stepped(
            ss[keys.MODEL], ss.get(keys.TRAIN_STEP)), ss.get(keys.SIZE))).link())
    inp = ss.get(keys.INPUT)
    if inp is not None and inp.label.startswith("sample"):
        params[keys.SAMPLE] = ss.get(keys.SAMPLE)
    elif inp is not None and inp.label.startswith("composed"):
        params[keys.SCENE] = ss.get(keys.SCENE)
    for key in (keys.LAYER, keys.HEAD, keys.PATCH):
        params[key] = ss.get(key)
    if ss.get(keys.MASK, "trained") != "trained":
        params[keys.MASK] = ss[keys.MASK]
    if ss.get(keys.PRESENTER):
        params[keys.PRESENTER] = 1
        if ss.get(keys.PRESENTER_AT) == stage and ss.get(keys.PRESENTER_STEP):
            params[keys.PRESENTER_STEP] = ss[keys.PRESENTER_STEP] + 1
    params.update(own or {})
    return {k: str(v) for k, v in params.items() if v is not None}


def write(stage: str, own: dict[str, str] | None = None) -> None:
    """Put the current view (and `own`, the session's place in a live class) into the address
    bar (only when it changed)."""
    params = current_params(stage, own)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)


def link(stage: str) -> str:
    """An absolute link that reopens this view, at the address the class can open."""
    return root_url()[0] + "?" + urlencode(current_params(stage))


def link_caption(stage: str) -> str:
    """What the link above carries, worded from current_params: an uploaded or camera photo is
    not in it (it opens on a sample scene), and a checkpoint loaded from a server path in this
    session is offered to no other session (the link opens another model there)."""
    params = current_params(stage)
    name = params.get(keys.MODEL)
    own = st.session_state.get(keys.LOADED_PATHS, [])
    shared = name is not None and (name not in own or name in (
        models.server_args().weights, *models.models_dir_entries()))
    same = _kept_in_link(params, shared)
    notes = [n for n in (_photo_note(params), None if shared else _checkpoint_note(name)) if n]
    listed = ", ".join(same[:-1]) + " and " + same[-1]
    return " ".join(notes + [f"Link to this view (same {listed}):"])


def _kept_in_link(params: dict, shared: bool) -> list[str]:
    """What a link with `params` opens the same, in the order the caption lists it."""
    scene = keys.SAMPLE in params or keys.SCENE in params
    same = ["stage"] + (["model"] if shared else []) + (["scene"] if scene else [])
    same += [what for what, key in (("input size", keys.SIZE), ("training step", keys.TRAIN_STEP))
             if key in params]
    if shared:  # another model may have fewer layers, heads or patches
        same += [what for what, key in (("layer", keys.LAYER), ("head", keys.HEAD),
                                        ("patch", keys.PATCH)) if key in params]
    return same + ["attention mask"] + (["presenter mode"] if keys.PRESENTER in params else [])


def _photo_note(params: dict) -> str | None:
    """The sentence saying this session's own photo is not in the link (None: it is a scene)."""
    inp = st.session_state.get(keys.INPUT)
    if inp is None or keys.SAMPLE in params or keys.SCENE in params:
        return None
    what = (f"The uploaded photo {inp.label.removeprefix('upload: ')}"
            if inp.label.startswith("upload: ") else
            "The camera photo" if inp.label.startswith("camera") else "This image")
    return f"{what} is not in the link: it opens on a sample scene."


def _checkpoint_note(name: str | None) -> str | None:
    """The sentence saying a checkpoint loaded from a server path stays in this session."""
    if name is None:
        return None
    instead = models.server_args().weights or vit_core.default_model_name()
    file = Path(ModelRef.parse(name).name).name
    return (f"The checkpoint {file} was loaded from a server path in this session only, so the "
            f"link opens {instead} instead.")


@st.cache_resource(ttl=300, show_spinner=False)
def lan_address() -> str | None:
    """This machine's IPv4 address on the local network, or None if it has only loopback.

    Found without network access: "connecting" a UDP socket sends nothing, it only makes the
    kernel pick the interface that would reach a private address; else the host name's
    addresses. 127.x never counts.
    """
    for probe in PRIVATE_PROBES:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((probe, 1))
                found = s.getsockname()[0]
        except OSError:
            continue
        if not found.startswith("127.") and found != "0.0.0.0":
            return found
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
    except OSError:
        return None
    return next((i[4][0] for i in infos if not i[4][0].startswith("127.")), None)


def root_url() -> tuple[str, str]:
    """(root URL of the app for the class, one sentence on who can open it)."""
    browser = (st.context.url or "").split("?")[0]
    parts = urlsplit(browser)
    listen = models.listen_address()
    if models.this_computer_only():
        return (_browser_root(browser) if browser else _root(listen, parts.scheme),
                f"The server listens on this machine only ({listen}), so only this machine "
                f"can open the link: start it with --server.address 0.0.0.0 for the class.")
    if parts.hostname and parts.hostname not in models.LOOPBACK:
        return _browser_root(browser), (f"Built from the address your browser uses "
                                        f"({parts.hostname}): students on the same network "
                                        f"open it, or scan the code.")
    lan = lan_address() if listen in EVERY_INTERFACE else listen
    if lan is None:
        return _root("localhost", parts.scheme), ("This machine has no network address "
                                                  "besides localhost, so only it can open "
                                                  "the link.")
    return _root(lan, parts.scheme), (f"Students on this machine's network open it at {lan}, "
                                      f"port {st.get_option('server.port')}, or scan the code.")


def _browser_root(browser: str) -> str:
    """The browser's address without the page's own path segment."""
    return (browser[: browser.rfind("/") + 1] if browser.count("/") > 2
            else browser.rstrip("/") + "/")


def _root(host: str, scheme: str = "") -> str:
    host = f"[{host}]" if ":" in host else host  # an IPv6 address
    path = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return f"{scheme or 'http'}://{host}:{st.get_option('server.port')}/" + (
        f"{path}/" if path else "")


def draw_qr(url: str) -> None:
    """Who can open the link, and its QR code (under the link in "Share and export")."""
    st.caption(root_url()[1])
    st.image(qr_png(url), output_format="PNG", caption="QR code of the link above",
             alt="QR code of the link above")


@st.cache_resource(max_entries=1024, show_spinner=False)
def qr_png(url: str) -> bytes:
    """The QR code of a share link (figures.qr_png), drawn once per link: the sidebar shows it
    on every script run, and drawing it each time took ~10 % of a classroom's script time."""
    return figures.qr_png(url)
