"""docs/teaching.md's lesson plan quotes the app: the shapes it reads out are those of the model
the plan uses, and its questions are the ones the app's steps ask, stage by stage, in order."""

import re
from pathlib import Path

import pytest

from tests.support import open_app
from ui.stages import BY_SLUG as STAGES
from ui.stages.why.keys import WHY_OPEN
from vit_core import load_model

ROOT = Path(__file__).resolve().parents[1]
TEACHING = ROOT / "docs" / "teaching.md"
PLAN_MODEL = "shapes-classifier"  # the model the lesson plan walks the stages with
ASK = "**Ask the class:** "


def section(text: str, heading: str) -> str:
    start = text.index(heading)
    rest = text[start + len(heading):]
    end = rest.find("\n## ")
    return rest if end < 0 else rest[:end]


def plan_questions() -> dict[str, list[str]]:
    """### <stage title> followed by '- question' lines, from the questions section."""
    out, current = {}, None
    for line in section(TEACHING.read_text(), "## Questions to ask, stage by stage").splitlines():
        if line.startswith("### "):
            current = line[4:].strip()
            out[current] = []
        elif line.startswith("- ") and current:
            out[current].append(line[2:].strip())
    return out


def test_the_plan_names_its_model_and_reads_out_its_shapes():
    text = TEACHING.read_text()
    assert f"`{PLAN_MODEL}`" in text
    c = load_model(PLAN_MODEL).config
    row = next(line for line in text.splitlines() if line.startswith("| 5–10 |"))
    S = c.num_patches + c.num_prefix_tokens
    for shape in (f"{c.img_size}×{c.img_size}×3", f"{c.num_patches} patches × {c.embed_dim}",
                  f"+CLS = {S}", f"{c.num_heads} heads × {S} × {S}", f"MLP {c.mlp_hidden}"):
        assert shape in row, (shape, row)


@pytest.mark.slow
def test_the_plans_questions_are_the_apps():
    planned = plan_questions()
    assert planned, "no questions in docs/teaching.md"
    asked = {}
    for slug, title in ((s, st.nav_title) for s, st in STAGES.items()):
        at = open_app(page=slug, model=PLAN_MODEL,  # the why stage: as after "Skip guessing"
                      state={WHY_OPEN: True} if slug == "why" else None)
        qs = [m.value.removeprefix(ASK) for m in at.markdown if m.value.startswith(ASK)]
        if qs:
            asked[title] = qs
    assert planned == asked


def test_the_question_reader_reads_the_section():
    found = plan_questions()
    assert all(re.match(r"\d+ · ", title) for title in found), found
    assert all(qs for qs in found.values())
