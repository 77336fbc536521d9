"""Bad input a student can cause, through the app: one line on screen, the session goes on."""

import io
import pickle

import numpy as np
import pytest
from PIL import Image

from tests.support import BAD_INPUTS, encode, open_app, photo_bytes, raw_png
from ui.selection.models import LOAD_OTHER

BAD = dict(BAD_INPUTS)
BAD["bomb_40000x40000"] = raw_png(40_000, 40_000, 8, 0, b"")


def odd_but_legal() -> dict[str, bytes]:
    rgba = Image.new("RGBA", (300, 200), (255, 0, 0, 0))
    frames = [Image.new("P", (50, 50), i) for i in (1, 2)]
    gif = io.BytesIO()
    frames[0].save(gif, format="GIF", save_all=True, append_images=frames[1:])
    exif = Image.Exif()
    exif[0x0112] = 6
    rotated = io.BytesIO()
    Image.new("RGB", (120, 80), "red").save(rotated, format="JPEG", exif=exif)
    return {
        "cmyk.jpg": encode(Image.new("CMYK", (100, 100), (255, 0, 0, 0)), "JPEG"),
        "grey16.png": encode(Image.fromarray(np.full((64, 64), 40000, np.uint16)), "PNG"),
        "transparent.png": encode(rgba, "PNG"),
        "palette.png": encode(Image.new("P", (64, 64), 3), "PNG"),
        "animated.gif": gif.getvalue(),
        "rotated.jpg": rotated.getvalue(),
        "one_pixel.png": encode(Image.new("RGB", (1, 1), "blue"), "PNG"),
        "strip_4000x6.png": encode(Image.new("RGB", (4000, 6), "green"), "PNG"),
        "huge_6000x4000.jpg": encode(Image.new("RGB", (6000, 4000), "white"), "JPEG"),
    }


@pytest.fixture(scope="module")
def app():
    return open_app(model="vit-ti16")


def upload(at, name: str, data: bytes):
    up = at.sidebar.file_uploader[0]
    up.upload(name, data, "application/octet-stream")
    at.run()
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_file_gives_one_line_then_a_good_image_works(app, name):
    upload(app, f"{name}.png", BAD[name])  # renamed to an accepted type, as a student might
    errors = [e.value for e in app.error]
    assert len(errors) == 1 and "\n" not in errors[0] and "Traceback" not in errors[0], errors
    assert "sample scene instead" in errors[0]
    assert app.title  # the page still rendered, on the sample
    upload(app, "good.jpg", photo_bytes())
    assert not app.error
    assert any("upload: good.jpg" in c.value for c in app.sidebar.caption)


@pytest.mark.parametrize("name", sorted(odd_but_legal()))
def test_odd_but_legal_images_just_work(app, name):
    upload(app, name, odd_but_legal()[name])
    assert not app.error
    assert any(f"upload: {name}" in c.value for c in app.sidebar.caption)
    shapes = {r["tensor"]: r["shape"] for _, r in app.dataframe[0].value.iterrows()}
    assert shapes["patches"] == "196 × 768"


@pytest.mark.slow  # a ViT-B/16-sized captioner
@pytest.mark.parametrize("text", ["", "word " * 2000, "🦒🦓 a 🐘 ball", "ein roter Ball auf dem "
                                  "Gras", "赤いボール", "zzz qqq xxx", "a\nred\tball\x00"])
def test_strange_captions_are_handled(text):
    at = open_app("logits", "vit-b16-text")
    at.text_input(key="caption").set_value(text[:2000]).run()
    assert not at.exception
    df = at.dataframe[0].value
    assert len(df) >= 1  # at least the [EOS] after [SOS]
    if text.strip() and any(ch.isalpha() for ch in text) and "ball" not in text:
        assert any("[UNK]" in w.value for w in at.warning)
    if len(text.split()) > 20:
        assert any("cut off" in w.value for w in at.warning)


def test_a_code_carrying_checkpoint_is_refused_in_the_app(tmp_path, monkeypatch):
    # the teacher's browser
    monkeypatch.setattr("ui.selection.models.listen_address", lambda: "localhost")
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    evil = tmp_path / "evil.pth"
    evil.write_bytes(pickle.dumps({"model": Evil()}))
    at = open_app(model="vit-ti16")
    at.sidebar.selectbox(key="model").set_value(LOAD_OTHER).run()
    at.sidebar.text_input(key="checkpoint_path").set_value(str(evil)).run()
    at.sidebar.button(key="checkpoint_load").click().run()
    assert not at.exception and len(at.sidebar.error) == 1
    assert not marker.exists()  # the payload never ran
    assert at.session_state["model"] == "vit-ti16"

