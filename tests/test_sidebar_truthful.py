"""Every sentence the sidebar shows is true for the model and image shown: the model card, the
fingerprint, the share link's caption, the mask picker, and the overview's sureness note (which
depends on the sidebar's mask). Each test computes its facts itself."""

import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from tests.support import open_app
from ui import keys
from ui.serving import state as ui_state
from vit_core import load_image, load_model, preprocess, run_trace
from vit_core.io.checkpoints import BUNDLED_DIR
from vit_core.io.text import SPECIALS

FIXTURES = Path(__file__).resolve().parent / "fixtures"
DEIT = str(FIXTURES / "hub" / "tiny-org" / "deit-distilled")  # random weights, 5 named classes
NOCLS = str(FIXTURES / "hub" / "timm" / "vit_tiny_avg_nocls.test")  # 1 block, 3 unnamed classes
PHOTO = FIXTURES / "photo.jpg"


def run(model: str, page: str = "overview", mask: str | None = None, path: bool = False,
        photo: bool = False, share: bool = False) -> AppTest:
    state = {keys.UPLOAD: ("photo.jpg", PHOTO.read_bytes())} if photo else {}
    if share:
        state[keys.SHARE_OPEN] = True
    assert path == ("/" in model)  # a path is always put on the loaded list first
    return open_app(page, model, mask, state=state)  # fails if it ran another model


def card(at: AppTest, model) -> str:
    found = [m.value for m in at.sidebar.markdown if m.value.startswith(f"**{model.info.name}**")]
    assert len(found) == 1, [m.value for m in at.sidebar.markdown]
    return found[0]


def lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("  \n")]


# ---- 1. the card says "trained" only for the models this repo trained ----

def test_the_card_says_where_a_files_weights_come_from_not_that_they_are_trained():
    model = load_model(DEIT)
    at = run(DEIT, path=True)
    first = lines(card(at, model))[0]
    assert "trained" not in first.replace("were trained", "")  # only "whether they were trained"
    assert f"weights from the folder {Path(DEIT).name}" in first
    assert "cannot tell" in first
    bundled = load_model("shapes-classifier")
    at = run("shapes-classifier")
    assert bundled.info.source == "bundled" and bundled.info.trained
    assert lines(card(at, bundled))[0].endswith("· trained by this repo on generated scenes")


# ---- 2. counts: a class list never ends in a colon; "1 layer", not "1 layers" ----

@pytest.mark.parametrize("name", [NOCLS, "vit-ti16"])
def test_the_card_words_counts_and_unnamed_classes_right(name):
    model = load_model(name)
    c = model.config
    assert c.num_classes and not c.class_names  # a class head without names
    text = card(run(name, path=name == NOCLS), model)
    assert not any(line.endswith(":") for line in lines(text)), text
    layers = "1 layer" if c.depth == 1 else f"{c.depth} layers"
    heads = "1 head" if c.num_heads == 1 else f"{c.num_heads} heads"
    assert f"{layers} × {heads}" in text
    assert not re.search(r"\b1 (layers|heads|classes)\b", text)
    assert f"{c.num_classes} classes, without names (numbered 0 … {c.num_classes - 1})" in text


# ---- 3. a captioner's vocabulary: words and special tokens counted apart ----

def test_the_card_counts_a_captioners_special_tokens_apart_from_its_words():
    model = load_model("shapes-captioner-prefix")
    vocab = model.config.vocab
    special = [t for t in vocab if t in SPECIALS]
    assert special  # [PAD] [SOS] [EOS] [UNK] are in the vocabulary
    text = card(run("shapes-captioner-prefix"), model)
    expected = f"{len(vocab)} tokens: {len(vocab) - len(special)} words + {len(special)} special"
    assert expected in text, text
    assert f"{len(vocab)} words" not in text


# ---- 4. the fingerprint never prints 0 % for a probability above zero ----

def test_the_fingerprint_never_rounds_a_small_top_probability_to_zero():
    at = run("vit-ti16")  # random weights, 1000 classes: the top class sits near 0.1 %
    model = load_model("vit-ti16")
    inp = at.session_state["_input"]
    probs = run_trace(model, preprocess(load_image(inp.data), model.config)).logits.softmax(-1)
    top = float(probs.max())
    assert 0 < top < 0.005  # would print as "0%"
    fingerprint = [c.value for c in at.sidebar.caption if c.value.startswith("fingerprint")][0]
    assert fingerprint.endswith(f"top: class {int(probs.argmax())} <1%"), fingerprint
    assert not re.search(r"\b0%", fingerprint)


# ---- 5. the share link's caption claims only what the link carries ----

def link_params(at: AppTest) -> dict[str, str]:
    link = [c.value for c in at.sidebar.code if "page=" in c.value][0]
    return {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}


def share_caption(at: AppTest) -> str:
    return [c.value for c in at.sidebar.caption if "Link to this view" in c.value][0]


def test_the_share_caption_says_an_uploaded_photo_is_not_in_the_link():
    at = run("shapes-classifier", photo=True, share=True)
    assert at.session_state["_input"].label == "upload: photo.jpg"
    params = link_params(at)
    assert keys.SAMPLE not in params and keys.SCENE not in params  # no image in the link
    caption = share_caption(at)
    claimed = re.search(r"\(same ([^)]*)\)", caption).group(1)
    assert "scene" not in claimed, caption
    assert "The uploaded photo photo.jpg is not in the link" in caption
    # a sample scene's link does carry it, and the caption says so
    at = run("shapes-classifier", share=True)
    assert at.session_state["_input"].label.startswith("sample")
    params = link_params(at)
    assert params[keys.SAMPLE] == str(at.session_state[keys.SAMPLE])
    assert params[keys.MODEL] == "shapes-classifier"
    claimed = re.search(r"\(same ([^)]*)\)", share_caption(at)).group(1)
    assert claimed.startswith("stage, model, scene")


def test_the_share_caption_says_a_checkpoint_loaded_here_is_not_in_other_sessions():
    at = run(DEIT, path=True, share=True)
    params = link_params(at)
    caption = share_caption(at)
    claimed = re.search(r"\(same ([^)]*)\)", caption).group(1)
    other = open_app(params=params, same_model=False)  # another browser opens the link
    opened = other.session_state["model"]
    assert opened != DEIT  # the link does not bring the model along
    assert "model" not in claimed, caption
    assert f"so the link opens {opened} instead" in caption


# ---- 6. the sureness note compares only under the mask its record was measured with ----

def sureness(at: AppTest) -> str:
    found = [c.value for c in at.caption if c.value.startswith("How sure:")]
    assert len(found) == 1, [c.value for c in at.caption]
    return found[0]


def test_the_sureness_note_compares_only_under_the_trained_mask():
    for name, other in (("shapes-classifier", "causal"), ("shapes-captioner-causal", "full")):
        model = load_model(name)
        own = model.config.default_mask
        assert other != own
        ref = json.loads((BUNDLED_DIR / f"{name}.confidence.json").read_text())
        median = f"the median was {ref['quantiles']['0.5']:.0%}"
        assert median in sureness(run(name))  # its own mask: compared with its record
        assert median in sureness(run(name, mask=own))  # the same mask, chosen by name
        note = sureness(run(name, mask=other))
        assert "median" not in note and "less sure" not in note, note
        assert f"under the {other} mask" in note and f"with the {own} mask" in note


# ---- 7. the mask picker's help is true of every choice it offers ----

def test_the_mask_help_says_the_list_offers_the_trained_mask_too():
    model = load_model("shapes-classifier")
    own = model.config.default_mask
    box = run("shapes-classifier").sidebar.selectbox(key=keys.MASK)
    assert own in box.options  # the trained mask is offered under its own name too
    assert "another mask than the one it was trained with" not in box.help
    assert "choosing that mask by name gives the same pass" in box.help
    assert box.options[0] == "the model's own"  # the same words for every model ...
    shown = [c.value for c in run("shapes-classifier").sidebar.caption]
    assert f"This model's own mask: {own} (as trained)." in shown  # ... and the model's here
    # the same pass: one cache key (ui/state.same_mask)
    assert ui_state.same_mask("shapes-classifier", own) is None
