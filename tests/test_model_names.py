"""How a model is named on screen: a picker model at another input size or training step (the
pages' internal 'NAME@288px', 'NAME@step250') is named as the picker names its model, then the
step and size in words, never as a file ('file: shapes-classifier@288px' was shown)."""

from __future__ import annotations

import pytest

from tests.support import open_app, page_text
from ui.selection import models
from ui.serving import state


@pytest.mark.parametrize("name,shown", [
    ("shapes-classifier@288px", "shapes-classifier at 288×288 px"),
    ("shapes-classifier@step250", "shapes-classifier after 250 training steps"),
    ("shapes-classifier@step1400@160px",
     "shapes-classifier after 1,400 training steps at 160×160 px"),
    ("vit-ti16@448px", "vit-ti16 (untrained: random weights) at 448×448 px"),
    ("shapes-classifier", "shapes-classifier"),
])
def test_a_sized_or_stepped_model_is_named_in_words(name, shown):
    assert models.label(name) == models.plain_label(name) == shown


def test_the_names_parsed_are_the_ones_the_app_makes():
    assert state.sized(state.stepped("shapes-classifier", 1400), 160) == (
        "shapes-classifier@step1400@160px")


def test_the_masks_stage_names_the_classifier_at_another_size_in_words():
    at = open_app(model="shapes-classifier", no_error=True,
                  params={"page": "masks", "presenter": "1", "step": "6", "size": "288"})
    said = page_text(at)
    assert ("The pairs are exact for shapes-classifier at 288×288 px; its accuracy under windows "
            "is not measured here (the app measures it at the model's own size and final "
            "weights only: choose those to see it).") in said  # not "needs labelled images"
    assert "file:" not in said and "@288px" not in said
