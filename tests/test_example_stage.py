"""The recipe in docs/development.md ("Adding a stage") works as written: the example stage is
built from the docs' own code block, listed as the recipe says, and opened at `?page=count`
under AppTest through app.py and the deck: its title (numbered by its place), figure, sentence
and question appear, with the numbers this test works out from the model's config."""

from __future__ import annotations

import json
import re
import types

import pytest

from tests.support import ROOT, open_app
from ui import stages
from ui.lesson import deck
from vit_core import load_model

DOCS = ROOT / "docs" / "development.md"
MODEL = "shapes-classifier"


def example_source() -> str:
    section = DOCS.read_text().split("### Adding a stage", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    assert len(blocks) == 1, "the recipe shows one example stage"
    return blocks[0]


def example_module() -> types.ModuleType:
    module = types.ModuleType("ui.stages.patch_count")
    exec(compile(example_source(), str(DOCS), "exec"), module.__dict__)  # noqa: S102
    return module


@pytest.fixture
def listed(monkeypatch):
    """The tour with the example stage listed last (the recipe's one line)."""
    tour = stages.numbered(*stages.STAGES, example_module().STAGE)
    monkeypatch.setattr(stages, "STAGES", tour)
    monkeypatch.setattr(stages, "BY_SLUG", {s.slug: s for s in tour})
    return tour


def test_the_example_declares_a_stage_with_one_step():
    stage = example_module().STAGE
    assert isinstance(stage, deck.Stage) and stage.slug == "count" and len(stage.steps) == 1
    assert stage.number == 0 and stage.title == "How many patches"  # numbered by the list only


def test_the_example_stage_opens_through_the_deck(listed):
    c = load_model(MODEL).config
    grid = c.img_size // c.patch_size  # worked out here, not read from the stage
    at = open_app(page="count", model=MODEL, no_error=True)
    assert at.title[0].value == f"{len(listed) - 1} · How many patches"
    said = [i.value for i in at.info]
    assert (f"The model cuts the {c.img_size}-pixel image into {grid} × {grid} = {grid * grid} "
            f"patches of {c.patch_size} × {c.patch_size} pixels.") in said, said
    figure = [el for el in at.get("plotly_chart") if el.proto.id.endswith("count_grid")]
    assert len(figure) == 1
    spec = json.loads(figure[0].proto.spec)
    assert [t["type"] for t in spec["data"]][0] == "image"  # the crop, under its grid
    asked = [m.value for m in at.markdown if m.value.startswith("**Ask the class:**")]
    assert asked == ["**Ask the class:** How many patches does the model read?"], asked
