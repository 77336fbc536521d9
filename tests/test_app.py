"""Drive the app with AppTest: default view, an uploaded photo, a broken file, model switching."""

import pytest

from tests.support import open_app, photo_bytes
from ui.selection import inputs


@pytest.fixture
def app():
    return open_app(model="vit-b16")


def table(at) -> dict:
    df = at.dataframe[0].value
    return dict(zip(df["tensor"], df["shape"], strict=True))


@pytest.mark.slow  # ViT-B/16 passes
def test_default_view_shows_the_live_shapes(app):
    assert not app.exception
    assert app.title[0].value == "From pixels to logits, in one pass"
    shapes = table(app)
    assert shapes["patches"] == "196 × 768"
    assert shapes["embed"] == "197 × 768"
    assert shapes["blocks.0.attn.pattern"] == "12 × 197 × 197"
    assert shapes["blocks.11.mlp.pre"] == "197 × 3072"
    assert "random weights" in app.warning[0].value
    assert any("sample:" in c.value for c in app.sidebar.caption)


def test_a_new_session_opens_on_the_trained_classifier_and_its_prediction():
    at = open_app()  # nothing chosen yet
    assert at.sidebar.selectbox(key="model").value == "shapes-classifier"
    assert table(at)["embed"] == "50 × 128"  # CLS + its 7 × 7 grid, D = 128
    assert not at.warning  # trained: no "random weights" warning
    topk = [c for c in at.get("plotly_chart") if '"type":"bar"' in c.proto.spec]
    assert topk, "the overview shows the classifier's top classes"


@pytest.mark.slow  # ViT-B/16 passes
def test_uploaded_photo_is_used(app):
    app.sidebar.file_uploader[0].upload("photo.jpg", photo_bytes(), "image/jpeg")
    app.run()
    assert not app.exception
    assert any("upload: photo.jpg" in c.value for c in app.sidebar.caption)
    assert table(app)["patches"] == "196 × 768"


def showing(at) -> str:
    return next(c.value for c in at.sidebar.caption if c.value.startswith("Showing"))


@pytest.mark.slow  # ViT-B/16 passes
def test_a_photo_leaves_the_uploader_empty_and_stays_until_dropped(app):
    app.sidebar.file_uploader[0].upload("a.jpg", photo_bytes(), "image/jpeg")
    app.run()
    assert "upload: a.jpg" in showing(app)
    first = app.sidebar.file_uploader
    assert len(first) == 1 and first[0].value is None  # ready for the next photo, no removal run
    app.sidebar.toggle(key="presenter").set_value(False).run()  # any rerun keeps the photo
    assert "upload: a.jpg" in showing(app)
    app.sidebar.file_uploader[0].upload("b.jpg", photo_bytes(w=700), "image/jpeg")
    app.run()
    assert "upload: b.jpg" in showing(app)
    app.sidebar.button(key="drop_upload").click().run()
    assert "sample:" in showing(app)
    assert not [b for b in app.sidebar.button if b.key == "drop_upload"]
    # choosing another sample scene also leaves the photo
    app.sidebar.file_uploader[0].upload("c.jpg", photo_bytes(w=720), "image/jpeg")
    app.run()
    assert "upload: c.jpg" in showing(app)
    samples = app.sidebar.selectbox(key="sample")
    samples.select_index((samples.index + 1) % len(samples.options)).run()
    assert showing(app).startswith(f"Showing sample: {samples.options[samples.index]}")
    assert not app.exception


@pytest.mark.slow  # ViT-B/16 passes
def test_broken_file_gives_one_line_and_the_session_goes_on(app):
    broken = photo_bytes(fmt="PNG")[:300]
    app.sidebar.file_uploader[0].upload("broken.png", broken, "image/png")
    app.run()
    assert not app.exception
    assert len(app.error) == 1 and "\n" not in app.error[0].value
    assert "damaged" in app.error[0].value
    assert app.error[0].value.endswith("Showing a sample scene instead of broken.png.")
    # the sidebar says what is really shown: the sample scene the picker names, not the upload
    seed = app.sidebar.selectbox(key="sample").value
    caption = inputs.sample_caption(seed)
    assert showing(app).startswith(f"Showing sample: {caption}"), showing(app)
    assert "broken.png" not in " ".join(c.value for c in app.sidebar.caption)
    assert not [b for b in app.sidebar.button if b.key == "drop_upload"]  # nothing to stop using
    assert app.session_state["_input"].data == inputs.sample_bytes(seed)  # what the page used
    shapes = table(app)
    assert shapes["patches"] == "196 × 768"
    app.sidebar.toggle(key="presenter").set_value(False).run()  # a rerun: still the sample
    assert showing(app).startswith("Showing sample:") and not app.error
    app.sidebar.file_uploader[0].upload("good.jpg", photo_bytes(), "image/jpeg")
    app.run()
    assert not app.exception and not app.error
    assert any("upload: good.jpg" in c.value for c in app.sidebar.caption)


@pytest.mark.slow  # ViT-B/16 passes
def test_switching_model_changes_the_shapes(app):
    app.sidebar.selectbox(key="model").set_value("vit-ti16").run()
    assert not app.exception
    shapes = table(app)
    assert shapes["embed"] == "197 × 192"
    assert shapes["blocks.0.attn.q"] == "3 × 197 × 64"
