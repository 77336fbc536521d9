"""vit_core.io.ref.ModelRef: the one parser and printer of the app's model names ('NAME',
'hf:ORG/NAME', 'PATH?heads=H', '@stepN', '@Spx'), checked against what the helpers it replaced
(ui/state.split_size, split_step and the '?heads=' partition in _load, models.label, share.py)
gave on a table of names, computed with them before they were removed."""

from __future__ import annotations

import pytest

from ui import keys
from vit_core.io.ref import LINK_KEYS, ModelRef

# name -> (split_size(name), split_step(split_size(name)[0]), path and heads of that base), as
# the old helpers gave them (regexes '^(.+)@(\d+)px$', '^(.+)@step(\d+)$', partition('?heads='))
OLD = {
    "shapes-classifier": (("shapes-classifier", None), ("shapes-classifier", None),
                          ("shapes-classifier", "")),
    "shapes-classifier@288px": (("shapes-classifier", 288), ("shapes-classifier", None),
                                ("shapes-classifier", "")),
    "shapes-classifier@step250": (("shapes-classifier@step250", None),
                                  ("shapes-classifier", 250), ("shapes-classifier", "")),
    "shapes-classifier@step250@288px": (("shapes-classifier@step250", 288),
                                        ("shapes-classifier", 250), ("shapes-classifier", "")),
    "hf:facebook/deit-tiny-patch16-224": (("hf:facebook/deit-tiny-patch16-224", None),
                                          ("hf:facebook/deit-tiny-patch16-224", None),
                                          ("hf:facebook/deit-tiny-patch16-224", "")),
    "hf:facebook/deit-tiny-patch16-224@288px": (("hf:facebook/deit-tiny-patch16-224", 288),
                                                ("hf:facebook/deit-tiny-patch16-224", None),
                                                ("hf:facebook/deit-tiny-patch16-224", "")),
    "vit-b16@160px": (("vit-b16", 160), ("vit-b16", None), ("vit-b16", "")),
    "/m/vit.pth?heads=4": (("/m/vit.pth?heads=4", None), ("/m/vit.pth?heads=4", None),
                           ("/m/vit.pth", "4")),
    "/m/vit.pth?heads=4@288px": (("/m/vit.pth?heads=4", 288), ("/m/vit.pth?heads=4", None),
                                 ("/m/vit.pth", "4")),
    "/m/vit.pth": (("/m/vit.pth", None), ("/m/vit.pth", None), ("/m/vit.pth", "")),
    "/m/run@step5.pth": (("/m/run@step5.pth", None), ("/m/run@step5.pth", None),
                         ("/m/run@step5.pth", "")),
    "a@b": (("a@b", None), ("a@b", None), ("a@b", "")),
    "x@0288px": (("x", 288), ("x", None), ("x", "")),
    "x@step007": (("x@step007", None), ("x", 7), ("x", "")),
    "shapes-captioner-causal@step0": (("shapes-captioner-causal@step0", None),
                                      ("shapes-captioner-causal", 0),
                                      ("shapes-captioner-causal", "")),
}


@pytest.mark.parametrize("text", list(OLD))
def test_the_parse_gives_what_the_old_helpers_gave(text):
    (_, size), (_, step), (path, heads) = OLD[text]
    ref = ModelRef.parse(text)
    assert (ref.name, ref.heads, ref.step, ref.size) == (path, int(heads) if heads else None,
                                                          step, size)


@pytest.mark.parametrize("ref", [
    ModelRef("shapes-classifier"),
    ModelRef("shapes-classifier", size=288),
    ModelRef("shapes-classifier", step=250),
    ModelRef("shapes-classifier", step=0, size=160),
    ModelRef("hf:facebook/deit-tiny-patch16-224", size=384),
    ModelRef("vit-b16"),
    ModelRef("/models/vit.pth", heads=12),
    ModelRef("/models/vit.pth", heads=12, size=288),
    ModelRef("/models/run@step5.pth"),
    ModelRef("/models/my vit folder"),
])
def test_every_form_reads_back_as_it_was_written(ref):
    assert ModelRef.parse(str(ref)) == ref
    assert str(ModelRef.parse(str(ref))) == str(ref)


@pytest.mark.parametrize("text,printed", [
    ("shapes-classifier@step250@288px", "shapes-classifier@step250@288px"),
    ("/m/vit.pth?heads=4@288px", "/m/vit.pth?heads=4@288px"),
    ("x@0288px", "x@288px"),  # the one spelling the printer writes
])
def test_the_printer_writes_the_names_the_app_made(text, printed):
    assert str(ModelRef.parse(text)) == printed


@pytest.mark.parametrize("text,words", [
    ("shapes-classifier@bigpx", "input size in pixels of 'big'"),
    ("shapes-classifier@0px", "input size in pixels of '0'"),
    ("shapes-classifier@stepx", "training step of 'x'"),
    ("/m/vit.pth?heads=four", "'four' attention heads"),
    ("/m/vit.pth?heads=0", "'0' attention heads"),
    ("@288px", "names no model"),
    ("", "names no model"),
])
def test_a_bad_name_raises_one_sentence(text, words):
    with pytest.raises(ValueError) as e:
        ModelRef.parse(text)
    said = str(e.value)
    assert words in said and said.endswith(".") and "\n" not in said
    assert said.count(". ") == 0  # one sentence


def test_the_source_is_read_from_the_name():
    assert ModelRef.parse("hf:facebook/deit-tiny-patch16-224@288px").source == "hub"
    assert ModelRef.parse("vit-b16@160px").source == "preset"
    assert ModelRef.parse("shapes-classifier@step250").source == "bundled"
    assert ModelRef.parse("/m/vit.pth?heads=4").source == "file"


def test_a_link_carries_the_picker_name_the_size_and_the_step():
    assert LINK_KEYS == (keys.MODEL, keys.SIZE, keys.TRAIN_STEP)
    assert ModelRef.parse("shapes-classifier@step250@288px").link() == {
        "model": "shapes-classifier", "size": "288", "train_step": "250"}
    assert ModelRef.parse("/m/vit.pth?heads=4").link() == {"model": "/m/vit.pth?heads=4"}


def test_a_bad_name_in_the_app_is_one_sentence_where_models_are_loaded():
    from ui.serving import state

    with pytest.raises(ValueError, match="not a whole number above 0"):
        state.get_model("shapes-classifier@0px")
