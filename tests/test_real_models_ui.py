"""Real ViTs in the app: who may fetch and load, fetching with the Hub stand-in, shared links to
fetched models, and the note a bundled shapes model shows on a photo."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests import support
from tests.support import photo_bytes
from ui import keys
from ui.selection import models

FIXTURES = Path(__file__).parent / "fixtures"
# `hub` (conftest.py): the Hub stand-in serving a copy of tests/fixtures/hub


@pytest.fixture
def server_args(monkeypatch):
    """Start the 'server' with these app arguments (what follows `--` on the command line)."""
    def use(*args: str, address: str = "0.0.0.0"):
        monkeypatch.setattr("sys.argv", ["app.py", *args])
        monkeypatch.setattr("ui.selection.models.listen_address", lambda: address)
        models.server_args.clear()
    yield use
    models.server_args.clear()


def open_app(model: str | None = None, page: str = "overview") -> AppTest:
    """The app opened on a shared link `?model=...&page=...` (which may name a model this
    machine lacks: the tests check what opened)."""
    return support.open_app(page, params={keys.MODEL: model} if model else {}, same_model=False)


def picker(at):
    return at.sidebar.selectbox(key=keys.MODEL)


def test_on_the_network_without_the_flag_there_is_no_fetch_and_no_path_box(server_args, hub):
    server_args(address="0.0.0.0")
    at = open_app()
    options = picker(at).options
    assert not any(o.startswith(("Load a checkpoint", "Fetch another")) for o in options)
    assert not any("fetch (" in o for o in options)
    boxes = [w.label for w in at.sidebar.text_input if w.key != keys.LIVE_CODE_INPUT]
    assert not boxes  # no path box, no name box anywhere (a class's code is no path)
    assert hub.count() == 0  # nothing was asked of the Hub


@pytest.mark.parametrize("args, address", [(("--allow-fetch",), "0.0.0.0"), ((), "localhost")])
def test_with_the_flag_or_on_localhost_the_teacher_may_fetch_and_load(server_args, hub, args,
                                                                       address):
    server_args(*args, address=address)
    at = open_app()
    options = picker(at).options
    assert models.LOAD_OTHER in options and models.FETCH_OTHER in options
    assert "hf:facebook/deit-tiny-patch16-224 · fetch (≈ 23 MB)" in options
    assert hub.count() == 0  # listing the curated models asks nothing of the Hub


def test_a_model_dir_is_listed_for_everyone(server_args, tmp_path):
    folder = tmp_path / "class-models"
    shutil.copytree(FIXTURES / "hub/tiny-org/deit-distilled", folder / "deit-distilled")
    server_args("--models-dir", str(folder), address="0.0.0.0")
    at = open_app()
    name = str(folder / "deit-distilled")
    assert "deit-distilled (from the models folder)" in picker(at).options
    picker(at).set_value(name).run()
    assert not at.exception and at.session_state[keys.MODEL] == name


def test_the_teacher_fetches_a_model_by_name_then_it_works_offline(server_args, hub):
    server_args("--allow-fetch")
    at = open_app()
    before = at.session_state[keys.MODEL]
    picker(at).set_value(models.FETCH_OTHER).run()
    assert at.session_state[keys.MODEL] == before  # still working meanwhile
    at.sidebar.text_input(key=keys.FETCH_NAME).set_value("tiny-org/no-such-model").run()
    at.sidebar.button(key=keys.FETCH_BUTTON).click().run()
    errors = [e.value for e in at.sidebar.error]
    assert errors == ["There is no model 'tiny-org/no-such-model' on the Hugging Face Hub (or it "
                      "is private)."]
    assert at.session_state[keys.MODEL] == before and not at.exception
    at.sidebar.text_input(key=keys.FETCH_NAME).set_value("tiny-org/deit-distilled").run()
    at.sidebar.button(key=keys.FETCH_BUTTON).click().run()
    assert not at.exception and not at.sidebar.error
    assert at.session_state[keys.MODEL] == "hf:tiny-org/deit-distilled"
    assert "hf:tiny-org/deit-distilled · on this machine" in picker(at).options
    hub.stop()  # the class is offline: a shared link opens the fetched model
    server_args(address="0.0.0.0")
    again = open_app("hf:tiny-org/deit-distilled")
    assert again.session_state[keys.MODEL] == "hf:tiny-org/deit-distilled"
    assert not again.error


def test_a_link_to_a_model_this_machine_lacks_says_so_in_one_sentence(server_args, hub):
    server_args(address="0.0.0.0")
    at = open_app("hf:tiny-org/vit-cls")
    assert at.session_state[keys.MODEL] != "hf:tiny-org/vit-cls"
    assert [w.value for w in at.sidebar.warning] == [
        "This link opens hf:tiny-org/vit-cls, which is not on this machine yet; showing another "
        "model instead."]
    assert hub.count() == 0  # a student's link never makes the server fetch


def test_a_photo_on_a_bundled_shapes_model_says_what_the_model_knows():
    at = open_app(page="attention")
    notes = [i.value for i in at.info if "only knows generated scenes" in i.value]
    assert notes == []  # a sample scene is what it knows
    at.sidebar.file_uploader[0].upload("cat.jpg", photo_bytes(), "image/jpeg")
    at.run()
    notes = [i.value for i in at.info if "only knows generated scenes" in i.value]
    assert len(notes) == 1
    assert notes[0].startswith("shapes-classifier only knows generated scenes: 10 shapes in 9 "
                               "colours on 6 backgrounds. On a photo its answer only says which "
                               "of its shapes the photo looks most like to it, however sure it "
                               "is.")


def test_the_sureness_note_compares_this_image_with_the_models_own_scenes():
    import json

    from vit_core import load_model
    from vit_core.io.checkpoints import BUNDLED_DIR

    model = load_model("shapes-classifier")
    ref = json.loads((BUNDLED_DIR / "shapes-classifier.confidence.json").read_text())
    q = ref["quantiles"]
    low = models.sureness_note(model, q["0.05"] - 0.01, "upload: cat.jpg")
    high = models.sureness_note(model, q["0.5"], "sample: a red ball on the grass")
    assert f"median was {q['0.5']:.0%}" in low and f"above {q['0.05']:.0%}" in low
    assert low.endswith("less sure than on 19 in 20 of those scenes.")
    assert high.endswith("about as sure as on its own scenes.") and "this scene" in high
    # on a photo, as sure as on its scenes is not right: the note says so (not on a scene)
    photo = models.sureness_note(model, q["0.5"], "upload: cameraman.png")
    assert photo.endswith("about as sure as on its own scenes, which on a photo from outside its "
                          "world does not make it right.")
    assert "does not make it right" not in low
    assert models.sureness_note(load_model("vit-ti16"), 0.5, "sample: x") is None  # no record


def test_the_overview_says_how_sure_the_model_is_on_a_photo_and_on_its_scenes():
    import json

    from vit_core.io.checkpoints import BUNDLED_DIR

    q = json.loads((BUNDLED_DIR / "shapes-classifier.confidence.json").read_text())["quantiles"]
    at = open_app(page="overview")
    at.sidebar.file_uploader[0].upload("cat.jpg", photo_bytes(), "image/jpeg")
    at.run()
    notes = [c.value for c in at.caption if c.value.startswith("How sure: on this photo")]
    assert len(notes) == 1, [c.value for c in at.caption]
    from vit_core import load_image, load_model, preprocess, run_trace

    model = load_model("shapes-classifier")  # the same photo through the model, here
    top = float(run_trace(model, preprocess(load_image(photo_bytes()), model.config))
                .logits.softmax(-1).max())
    assert f"gives its top class {top:.0%}" in notes[0]
    assert f"median was {q['0.5']:.0%}" in notes[0]
