"""Stage 1 declared as steps (ui/stages/input_patches.py): its five steps and its one question;
the patch-size step and its question ask about the same smaller P; the table of sizes is a step
of its own; every sentence checked against numbers computed here from an independent trace."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.independent import trace_of
from tests.support import HUB, open_app
from ui import keys, stages
from ui.stages import BY_SLUG as ROUTES
from ui.stages.input_patches import WHAT_IF_P
from vit_core import load_model

LAST = len(ROUTES) - 1  # the numbered stages: 'Stage 1/LAST' … (the overview is not numbered)

CLF, CAP, B16 = "shapes-classifier", "shapes-captioner-causal", "vit-b16"
ONE = str(HUB / "tiny-org" / "vit-1block-1head-p14")  # 28 px, P = 14
NOCLS = str(HUB / "timm" / "vit_tiny_avg_nocls.test")  # 32 px, P = 8, no CLS
STEPS = ["grid", "vector", "matrix", "what_if", "sizes"]


def said(at: AppTest, start: str) -> str:
    found = [i.value for i in at.info if i.value.startswith(start)]
    assert len(found) == 1, [i.value for i in at.info]
    return found[0]


def asked(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith("**Ask the class:**")]


def test_five_steps_and_one_question_on_the_matrix_step():
    c = load_model(CLF).config
    assert [s.key for s in stages.get("patches").steps_for(c)] == STEPS
    for k, key in enumerate(STEPS):
        at = open_app(params={"page": "patches", "presenter": "1", "step": str(k + 1)},
                      model=CLF)
        assert any(f"Stage 1/{LAST} · step {k + 1}/5" in m.value for m in at.markdown)
        assert len(asked(at)) == (key == "matrix"), (key, asked(at))


# the smaller P by hand: half of P when it divides the image (224/16, 224/8, 28/7)
@pytest.mark.parametrize(("model", "P", "smaller"), [(CLF, 32, 16), (B16, 16, 8), (ONE, 14, 7)])
def test_the_what_if_starts_at_the_size_the_question_asks_about(model, P, smaller):
    at = open_app("patches", model)
    assert load_model(model).config.patch_size == P
    assert at.select_slider(key=WHAT_IF_P).value == smaller  # 28 before, not 16, for P=32
    assert f"If P were {smaller} instead of {P}" in asked(at)[0]
    assert said(at, "What to notice").startswith(
        f"What to notice: at P = {smaller} instead of {P},")


@pytest.mark.parametrize("model", [CLF, ONE, NOCLS])
def test_at_its_own_size_the_note_names_the_questions_smaller_size(model):
    at = open_app("patches", model)
    c = load_model(model).config
    P, img, pre = c.patch_size, c.img_size, int(c.class_token) + int(c.dist_token)
    smaller = at.select_slider(key=WHAT_IF_P).value
    at.select_slider(key=WHAT_IF_P).set_value(P).run()
    own = ((img // P) ** 2 + pre) ** 2
    n2 = (img // smaller) ** 2
    s2 = (n2 + pre) ** 2
    assert (f"Halving P to {smaller} would give N = {n2:,} ({n2 / (img // P) ** 2:.3g}×) and "
            f"{s2:,} pairs ({s2 / own:.3g}×)") in said(at, "What to notice")


@pytest.mark.parametrize("model", [CLF, NOCLS, CAP])
def test_the_table_of_sizes_and_its_sentence(model):
    at = open_app("patches", model)
    c = load_model(model).config
    img, pre = c.img_size, int(c.class_token) + int(c.dist_token)
    df = at.dataframe[0].value
    sizes = [int(p) for p in df["P"]]
    assert sizes == sorted(sizes) and c.patch_size in sizes
    assert all(img % p == 0 for p in sizes)
    own = ((img // c.patch_size) ** 2 + pre) ** 2
    for _, row in df.iterrows():
        n = (img // int(row["P"])) ** 2
        assert (row["N patches"], row["tokens S"], row["attention entries per head (S²)"]) == (
            n, n + pre, (n + pre) ** 2)
        assert row["× this model's"] == pytest.approx((n + pre) ** 2 / own, abs=0.006)
    big, small = max(sizes), min(sizes)
    nb, ns = (img // big) ** 2, (img // small) ** 2
    ratio = (ns + pre) ** 2 / (nb + pre) ** 2
    times = f"{ratio:,.0f}×" if ratio >= 100 else f"{ratio:.3g}×"
    assert said(at, "From P =") == (
        f"From P = {big} down to P = {small}, the patches go from {nb:,} to {ns:,} and each "
        f"head's attention entries from {(nb + pre) ** 2:,} to {(ns + pre) ** 2:,} ({times}): "
        f"N grows with 1/P², attention with N².")


def test_the_grid_and_vector_sentences_follow_the_selected_patch():
    at = open_app("patches", CLF)
    at.number_input(key=keys.PATCH).set_value(19).run()
    c = load_model(CLF).config
    P, g = c.patch_size, c.grid
    r, col = divmod(19, g)
    assert said(at, "The 224×224 crop").endswith(
        f"patch 19, outlined and enlarged, is row {r}, column {col}: pixels {r * P}–"
        f"{(r + 1) * P - 1} down, {col * P}–{(col + 1) * P - 1} across.")
    first = float(trace_of(at, CLF)["patches"][19][0]) * c.std[0] + c.mean[0]  # channel R
    assert f"pixel (0, 0) of patch 19 is R={first * 255:.0f} before normalisation" in said(
        at, "First values")
    assert said(at, "X_patch stacks").startswith(
        f"X_patch stacks the {g * g} patches as rows: a {g * g}×{3 * P * P} matrix, row 19 "
        f"outlined.")
