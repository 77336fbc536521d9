"""'Compose a scene' in the sidebar, a composed scene carried in a link, and a share link (with
its QR code) at an address students can open — driven with AppTest."""

import io
import socket
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
import segno
import torch
from PIL import Image
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest

from tests.support import open_app as _open
from ui import keys
from ui.lesson import share
from ui.selection import models as ui_models
from vit_core import generate, load_image, load_model, preprocess
from vit_core.scenes import world

STAR = world.Composition("star", "blue", "sand", "right", 100, 30, 2, 5)  # code in the link
STAR_CODE = "star_blue_sand_right_100_30_2_5"


def open_app(params: dict, model: str | None = None) -> AppTest:
    """The app opened on a link, with the sidebar's composer and share expanders opened (their
    contents are drawn only while open)."""
    return _open(model=model, params=params,
                 state={keys.COMPOSE_OPEN: True, keys.SHARE_OPEN: True}, same_model=False)


def shown(at) -> np.ndarray:
    """The pixels of the image the app is explaining."""
    return np.asarray(load_image(at.session_state["_input"].data))


def showing(at) -> str:
    return next(c.value for c in at.sidebar.caption if c.value.startswith("Showing "))


def link(at) -> str:
    return at.sidebar.code[0].value


def test_a_link_opens_the_composed_scene_and_the_link_carries_it_on():
    assert STAR.code == STAR_CODE
    at = open_app({"page": "overview", "scene": STAR_CODE})
    assert np.array_equal(shown(at), np.asarray(world.compose(STAR).image))
    assert showing(at).startswith("Showing composed: a blue star on the sand on the right ·")
    assert at.sidebar.toggle(key="compose").value
    assert (at.sidebar.selectbox(key="compose_shape").value,
            at.sidebar.slider(key="compose_rotation").value,
            at.sidebar.number_input(key="compose_variation").value) == ("star", 30, 5)
    assert at.query_params["scene"] == STAR_CODE and "sample" not in at.query_params
    params = parse_qs(urlsplit(link(at)).query)
    assert params["scene"] == [STAR_CODE] and params["page"] == ["overview"]
    again = open_app({k: v[0] for k, v in params.items()})  # a student opens the link
    assert again.session_state["_input"].key == at.session_state["_input"].key
    # the classifier's answer in the sidebar is the model's own on this exact image
    model = load_model("shapes-classifier")
    with torch.no_grad():
        probs = model(preprocess(world.compose(STAR).image, model.config)).softmax(-1)[0]
    k = int(probs.argmax())
    fingerprint = at.sidebar.caption[-1].value
    assert fingerprint.endswith(f"top: {model.config.class_names[k]} {float(probs[k]):.0%}")
    assert not any("only knows generated scenes" in i.value for i in at.info)  # not a photo


def test_composing_in_the_sidebar_changes_the_image_and_the_link():
    at = open_app({"page": "overview"})
    assert showing(at).startswith("Showing sample:") and not at.sidebar.toggle(key="compose").value
    colours = at.sidebar.selectbox(key="compose_colour").options
    assert "green" not in colours and "red" in colours  # the default background is grass
    assert any(c.value.startswith("Not offered on the grass: green") for c in at.sidebar.caption)
    at.sidebar.selectbox(key="compose_shape").set_value("moon").run()  # touching = composing
    assert showing(at).startswith("Showing composed: a red moon on the grass ·")
    at.sidebar.selectbox(key="compose_position").set_value("top").run()
    at.sidebar.selectbox(key="compose_background").set_value("snow").run()
    assert "white" not in at.sidebar.selectbox(key="compose_colour").options
    at.sidebar.slider(key="compose_distractors").set_value(3).run()
    assert not at.exception
    want = world.Composition("moon", "red", "snow", "top", 110, 0, 3, 0)
    assert np.array_equal(shown(at), np.asarray(world.compose(want).image))
    assert showing(at).startswith("Showing composed: a red moon on the snow at the top ·")
    assert at.query_params["scene"] == "moon_red_snow_top_110_0_3_0"
    # a background that rules the colour out: the colour changes and the sidebar says so
    at.sidebar.selectbox(key="compose_background").set_value("snow").run()
    at.sidebar.selectbox(key="compose_colour").set_value("yellow").run()
    at.sidebar.selectbox(key="compose_background").set_value("sand").run()
    assert at.sidebar.selectbox(key="compose_colour").value == "red"
    assert any(c.value == "yellow is never drawn on the sand, so the colour is now red."
               for c in at.sidebar.caption)
    # a size that the new zone does not draw is brought inside it, and said
    at.sidebar.selectbox(key="compose_position").set_value("centre").run()
    at.sidebar.slider(key="compose_size").set_value(150).run()
    at.sidebar.selectbox(key="compose_position").set_value("left").run()
    assert at.sidebar.slider(key="compose_size").value == 124
    assert any("150 px is not drawn on the left, so it is now 124 px." in c.value
               for c in at.sidebar.caption)
    at.sidebar.selectbox(key="compose_shape").set_value("heart").run()
    assert (at.sidebar.slider(key="compose_rotation").min,
            at.sidebar.slider(key="compose_rotation").max) == (-34, 34)
    # choosing a sample scene goes back to the samples
    sample = at.sidebar.selectbox(key="sample")
    sample.set_value(sample.options[3]).run()
    assert showing(at).startswith("Showing sample:") and "scene" not in at.query_params
    assert not at.sidebar.toggle(key="compose").value


def test_closed_expanders_draw_nothing_and_the_composed_scene_stays():
    at = open_app({"page": "overview"})
    at.sidebar.selectbox(key="compose_shape").set_value("moon").run()
    at.sidebar.slider(key="compose_distractors").set_value(2).run()
    moon = world.Composition("moon", "red", "grass", "centre", 110, 0, 2, 0)
    assert np.array_equal(shown(at), np.asarray(world.compose(moon).image))
    drawn = len(at.sidebar.selectbox) + len(at.sidebar.slider) + len(at.sidebar.code)
    at.session_state[keys.COMPOSE_OPEN] = at.session_state[keys.SHARE_OPEN] = False  # closed
    at.run()
    assert not at.exception
    assert [s.key for s in at.sidebar.selectbox] == ["model", keys.SIZE, "mask", "sample"]
    assert not at.sidebar.slider and not at.sidebar.code and not at.sidebar.toggle(
        key="presenter").value and len(at.sidebar.toggle) == 2  # presenter mode, the camera
    assert drawn - (len(at.sidebar.selectbox) + len(at.sidebar.slider)) == 4 + 3 + 1
    # the scene is still the image, in the link too, with every control's value kept
    assert np.array_equal(shown(at), np.asarray(world.compose(moon).image))
    assert showing(at).startswith("Showing composed: a red moon on the grass ·")
    assert at.query_params["scene"] == moon.code
    at.session_state[keys.COMPOSE_OPEN] = True
    at.run()
    assert (at.sidebar.selectbox(key="compose_shape").value,
            at.sidebar.slider(key="compose_distractors").value,
            at.sidebar.toggle(key="compose").value) == ("moon", 2, True)


def test_a_scene_the_world_does_not_draw_falls_back_in_one_sentence():
    for code, why in (("ball_green_grass_left_100_0_0_0", "never draws green on the grass"),
                      ("ball_red_grass_left_999_0_0_0", "70 to 124"),
                      ("nonsense", "shape_colour_background")):
        at = open_app({"page": "overview", "scene": code})
        (warning,) = [w.value for w in at.sidebar.warning]
        assert warning.startswith(f"This link's scene '{code}' cannot be drawn (")
        assert why in warning and warning.endswith("showing a sample scene instead.")
        assert showing(at).startswith("Showing sample:") and "scene" not in at.query_params
    at = open_app({"page": "overview", "scene": "ball_red_[click](http://x.y)_0_0"})
    assert [w.value for w in at.sidebar.warning] == [
        "This link's scene 'ball_red_clickhttpxy_0_0' cannot be drawn (it has characters no "
        "scene code has); showing a sample scene instead."]  # no link in the sidebar


def test_a_captioner_writes_about_the_composed_scene():
    c = world.Composition("box", "yellow", "grass", "bottom", 90, 20, 1, 3)
    at = open_app({"page": "overview", "scene": c.code}, model="shapes-captioner-prefix")
    assert at.session_state["model"] == "shapes-captioner-prefix"
    model = load_model("shapes-captioner-prefix")
    text = generate(model, preprocess(world.compose(c).image, model.config)).text
    assert text == "a yellow box on the grass at the bottom"  # this one the model gets right
    assert any(f"**“{text}”**" in m.value for m in at.markdown)


# ---- a link students can open ----

@pytest.fixture
def captured_media(monkeypatch) -> dict:
    """Every file the app hands Streamlit's media store (st.image), by file id."""
    files, load = {}, MemoryMediaFileStorage.load_and_get_id

    def record(self, data, mimetype, kind, filename=None):
        file_id = load(self, data, mimetype, kind, filename)
        files[file_id] = bytes(data) if isinstance(data, bytes | bytearray) else data
        return file_id

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", record)
    return files


def qr_modules(png: bytes, size: int) -> np.ndarray:
    """Read a QR code PNG back into its size x size modules (1 = dark), quiet zone dropped."""
    img = np.asarray(Image.open(io.BytesIO(png)).convert("L")) < 128
    n = size + 8  # 4 light modules each side
    assert img.shape[0] == img.shape[1] and img.shape[0] % n == 0, img.shape
    px = img.shape[0] // n
    centres = (np.arange(n) * px + px // 2)
    return img[np.ix_(centres, centres)][4:-4, 4:-4].astype(np.uint8)


def shown_qr(at, files: dict) -> bytes:
    """The PNG the sidebar shows as the link's QR code."""
    (img,) = [i for el in at.sidebar.get("image") for i in el.proto.imgs
              if i.caption == "QR code of the link above"]
    return files[img.url.rsplit("/", 1)[1].split(".")[0]]


def is_this_machine(host: str) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, 0))  # only an address of one of this machine's interfaces binds
        except OSError:
            return False
    return True


def test_listening_on_the_network_links_to_the_lan_address_with_its_qr_code(monkeypatch,
                                                                            captured_media):
    monkeypatch.setattr(ui_models, "listen_address", lambda: "0.0.0.0")
    at = open_app({"page": "attention", "scene": STAR_CODE})
    url = urlsplit(link(at))
    if url.hostname == "localhost":
        pytest.skip("this machine has no network address besides loopback")
    assert url.hostname not in ("127.0.0.1", "localhost", "::1")
    assert not url.hostname.startswith("127.") and is_this_machine(url.hostname)
    assert url.port == 8501 and url.scheme == "http"  # Streamlit's default server.port
    assert parse_qs(url.query)["scene"] == [STAR_CODE]
    assert any(c.value == f"Students on this machine's network open it at {url.hostname}, port "
                          f"8501, or scan the code." for c in at.sidebar.caption)
    want = segno.make_qr(link(at))
    got = qr_modules(shown_qr(at, captured_media), want.symbol_size(border=0)[0])
    assert np.array_equal(got, np.array([list(row) for row in want.matrix], np.uint8))


def test_listening_on_this_machine_only_links_to_it_and_says_so(monkeypatch, captured_media):
    monkeypatch.setattr(ui_models, "listen_address", lambda: "127.0.0.1")
    at = open_app({"page": "overview"})
    assert urlsplit(link(at)).hostname == "127.0.0.1"
    assert any(c.value.startswith("The server listens on this machine only (127.0.0.1), so only "
                                  "this machine can open the link") for c in at.sidebar.caption)
    want = segno.make_qr(link(at))
    got = qr_modules(shown_qr(at, captured_media), want.symbol_size(border=0)[0])
    assert np.array_equal(got, np.array([list(row) for row in want.matrix], np.uint8))


def test_without_a_network_the_link_stays_on_localhost_and_says_so(monkeypatch):
    monkeypatch.setattr(ui_models, "listen_address", lambda: "0.0.0.0")
    monkeypatch.setattr(share, "lan_address", lambda: None)
    at = open_app({"page": "overview"})
    assert urlsplit(link(at)).hostname == "localhost"
    assert any(c.value == "This machine has no network address besides localhost, so only it "
                          "can open the link." for c in at.sidebar.caption)


def test_the_lan_address_is_never_loopback(monkeypatch):
    class NoRoute:  # a machine without a network: the UDP probe cannot pick an interface
        def __init__(self, *a):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def connect(self, addr):
            raise OSError("Network is unreachable")

    def machine(*addresses):
        infos = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0)) for a in addresses]
        return SimpleNamespace(AF_INET=socket.AF_INET, SOCK_DGRAM=socket.SOCK_DGRAM,
                               socket=NoRoute, gethostname=lambda: "laptop",
                               getaddrinfo=lambda *a: infos)

    monkeypatch.setattr(share, "socket", machine("127.0.1.1"))
    share.lan_address.clear()
    assert share.lan_address() is None  # only loopback: the link falls back to localhost
    monkeypatch.setattr(share, "socket", machine("127.0.1.1", "10.1.2.3"))
    share.lan_address.clear()
    assert share.lan_address() == "10.1.2.3"
    share.lan_address.clear()
