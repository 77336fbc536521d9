"""One number for one fact: a bundled model's held-out top-1 is measured once, on the scenes its
model card names (the card's JSON is the file's metadata), and every place that quotes it (the
pages, README.md, the docs) gives that figure, or names the other set it measured and quotes the
card's beside it. The expected figure is read here from the card's Markdown, so a change to the
card, the metadata, a page or a document that lets them disagree fails."""

from __future__ import annotations

import json
import re

import pytest

from tests.support import ROOT, open_app, page_text
from vit_core import BUNDLED_DIR, bundled_models, load_model
from vit_core.io.checkpoints import training_log

NAME = "shapes-classifier"
CARD_FIGURE = re.compile(r"(\d+(?:\.\d+)?) ?% on its model card's (\d+) held-out scenes")
TOP1 = re.compile(r"top-1 (\d+(?:\.\d+)?) ?%")  # a top-1 quoted with no set of its own
DOCS = ["README.md", "docs/teaching.md", "docs/development.md"]


def card(name: str) -> dict:
    """The JSON under the card's "## Held-out metrics" heading."""
    text = (BUNDLED_DIR / f"{name}.md").read_text()
    block = text.split("## Held-out metrics", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    return json.loads(block)


def expected() -> tuple[float, int]:
    """(top-1 in percent, one decimal; scenes) as the classifier's card gives them."""
    m = card(NAME)
    return round(100 * m["top1"], 1), m["n"]


def figures(text: str) -> list[tuple[float, int]]:
    text = " ".join(text.split())
    return [(float(p), int(n)) for p, n in CARD_FIGURE.findall(text)]


@pytest.mark.parametrize("name", bundled_models())
def test_each_model_card_is_its_file_s_metadata(name):
    stored = load_model(name).info.metrics
    assert {k: stored[k] for k in card(name)} == card(name)


@pytest.mark.parametrize("path", DOCS)
def test_the_readme_and_docs_quote_the_card_s_figure(path):
    text = " ".join((ROOT / path).read_text().split())
    top1, n = expected()
    assert [float(p) for p in TOP1.findall(text)] in ([], [top1])
    if path != "docs/development.md":  # its table gives the card's figure (TOP1 above)
        assert figures(text) and set(figures(text)) == {(top1, n)}


def test_the_masks_windows_step_names_its_own_scenes_and_quotes_the_card():
    at = open_app(model=NAME, params={"page": "masks", "presenter": "1", "step": "6"},
                  no_error=True)
    said = " ".join(page_text(at).split())
    assert "top-1 on 200 held-out scenes falls from" in said  # its own set, named
    assert figures(said) == [expected()]


def test_the_training_stage_names_each_set_and_quotes_the_card_for_the_final_weights():
    log = training_log(NAME)
    at = open_app(model=NAME, params={"page": "training", "presenter": "1", "step": "1"},
                  no_error=True)
    said = " ".join(page_text(at).split())
    kept = log.snapshot(log.final_step)
    assert (f"held-out top-1 was **{100 * kept['top1']:.1f}%** on the "
            f"{log.snapshot_eval['n']} scenes every kept step is measured on") in said
    assert figures(said) == [expected()]


@pytest.mark.slow  # 200 held-out scenes under two masks
def test_teaching_s_windows_figures_are_the_ones_measured_on_the_set_it_names():
    from vit_core.scenes.windowed import HELDOUT_N, HELDOUT_SEED, top1_by_mask

    top1 = top1_by_mask(load_model(NAME), ["full", "window:2"])
    text = " ".join((ROOT / "docs/teaching.md").read_text().split())
    assert (f"top-1 on {HELDOUT_N} held-out scenes (seed block {HELDOUT_SEED})") in text
    assert (f"from {100 * top1['full']:g} % on those {HELDOUT_N} scenes to "
            f"{100 * top1['window:2']:g} % with 2×2 windows") in text
