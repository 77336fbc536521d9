"""Every equation the app draws is said in words (docs/accessibility.md, "Equations"): the words
(ui/drawing/speech.spoken) read a few of the app's real equations as a person would, with the
fraction and the root said; every equation on every page (the classifier's, and the captioner's
where they differ) comes out with no TeX left and with the numbers it prints; and
ui/drawing/equation.latex draws the words right after the equation (the page's script,
ui/drawing/a11y.py, hides the symbols where it finds them there).

The pages are opened once per (stage, model), shared with the figure text tests
(tests/alt_text.page_of).
"""

from __future__ import annotations

import dataclasses
import html
import re

import pytest
from streamlit.testing.v1 import AppTest

from tests.alt_text import page_of
from tests.support import open_app
from ui import keys
from ui.drawing.equation import SAID, SAY
from ui.drawing.speech import spoken
from ui.stages import BY_SLUG
from ui.stages.logits.classifier import _equation
from vit_core import load_model

CLF, CAP = "shapes-classifier", "shapes-captioner-causal"
# every page on the classifier; the pages whose equations differ on a captioner (its writing
# step, the causal mask's −∞ in the worked score) on the captioner too
PAGES = [(slug, CLF) for slug in BY_SLUG] + [(s, CAP) for s in ("qkv", "masks", "logits")]
TEX_LEFT = re.compile(r"[\\{}^_]")


def tex_of(element) -> str:
    """An st.latex element's TeX (Streamlit keeps it between $$ lines)."""
    return element.value.strip().removeprefix("$$").removesuffix("$$").strip()


def drawn(slug: str, model: str) -> list[str]:
    return [tex_of(e) for e in page_of(slug, model).get("latex")]


def numbers(text: str) -> list[str]:
    """The numbers a text prints (1{,}024 and 1,024 as 1024)."""
    text = re.sub(r"(?<=\d)(?:\{,\}|,)(?=\d{3})", "", text)
    return re.findall(r"(?<![A-Za-z\d.])\d+(?:\.\d+)?", text)


def printed(tex: str) -> list[str]:
    """The numbers the equation prints, but a power's 2 (said "squared")."""
    return numbers(re.sub(r"\^\{?2\}?(?!\d)", "", tex))


# ---------------------------------------------------------------- (a) real equations, by hand
def _expected() -> dict:
    """(page, how its equation starts) -> what it must say, on the classifier."""
    c = load_model(CLF).config
    S, dk, N, img, P = c.num_image_tokens, c.head_dim, c.num_patches, c.img_size, c.patch_size
    cpp = c.in_chans * P * P
    return {
        ("attention", "A = "): (
            f"A equals softmax of (the fraction Q K transpose over the square root of {dk}, end "
            f"fraction, plus M) in the real {S} by {S} matrices, head equals A V in the real {S} "
            f"by {dk} matrices"),
        ("patches", "N = "): (
            f"N equals the fraction H over P, end fraction, times the fraction W over P, end "
            f"fraction, equals the fraction {img} over {P}, end fraction, times the fraction "
            f"{img} over {P}, end fraction, equals {N}, X sub patch equals U of (X sub img) in "
            f"the real {N} by {cpp} matrices"),
        ("logits", r"\hat y"): (
            "y hat equals softmax of (the fraction LN of (z sub L superscript CLS) W sub c plus "
            f"b sub c over T, end fraction), W sub c in the real {c.embed_dim} by "
            f"{c.num_classes} matrices"),
        ("training", r"\cos"): (
            "cos of (e sub i, e sub j) equals the fraction e sub i times e sub j over the norm of "
            "e sub i, the norm of e sub j, end fraction, e sub i equals row i of E sub pos "
            "(patch i)"),
        ("why", r"\tilde a_i"): (
            f"a tilde sub i equals the fraction a sub i over the max over j of the absolute "
            f"value of a sub j, end fraction, i, j equals 1, and so on, N equals {N} patches"),
    }


@pytest.mark.parametrize("slug, starts", list(_expected()))
def test_a_real_equation_is_said_as_a_sentence(slug, starts):
    (tex,) = [t for t in drawn(slug, CLF) if t.startswith(starts)]
    assert spoken(tex) == _expected()[(slug, starts)]


def test_the_mae_loss_is_said_with_its_norm_and_its_numbers():
    """The MAE stage's loss (the bundled MAE on the classifier's page), with this image's count
    of hidden patches and its loss."""
    (tex,) = [t for t in drawn("mae", CLF) if t.startswith(r"\mathcal{L}")]
    hidden, loss = re.search(r"\\frac\{1\}\{(\d+)\}.*= (\d+\.\d+)$", tex).groups()
    norm = "the norm of x hat sub i minus x sub i, squared"
    assert spoken(tex) == (
        f"L equals the fraction 1 over the size of M, end fraction, the sum over i in M of the "
        f"fraction {norm} over P squared C, end fraction, equals the fraction 1 over {hidden}, "
        f"end fraction, the sum over i in M of the fraction {norm} over 3,072, end fraction, "
        f"equals {loss}")


def test_the_layernorm_equation_says_its_root_and_its_numbers():
    """The LayerNorm step's equation, with this image's mean and std and the model's ε."""
    (tex,) = [t for t in drawn("qkv", CLF) if t.startswith(r"\mathrm{LN}")]
    mu, sigma = re.search(r"\\mu=(-?[\d.]+),\\ \\sigma=(-?[\d.]+)", tex).groups()
    said = spoken(tex)
    assert said.startswith("LN of (x) equals gamma element-wise times the fraction x minus mu "
                           "over the square root of sigma squared plus epsilon, end fraction, "
                           "plus beta, mu equals ")
    assert f"mu equals {mu.replace('-', 'minus ')}, sigma equals {sigma}, epsilon equals " \
        in said
    assert re.search(r"epsilon equals (\d\S* times )?10 to the power minus \d+$", said), said


# ---------------------------------------------------------------- (b) every equation drawn
@pytest.mark.parametrize("slug, model", PAGES, ids=[f"{s}-{m}" for s, m in PAGES])
def test_every_equation_is_said_without_tex_and_with_its_numbers(slug, model):
    equations = drawn(slug, model)
    if slug != "overview":
        assert equations, f"{slug} draws no equation"
    for tex in equations:
        said = spoken(tex)
        assert said and not TEX_LEFT.search(said), (tex, said)
        missing = [n for n in printed(tex) if n not in numbers(said)]
        assert not missing, (tex, said, missing)


# Markdown's $…$ (as pandoc reads it): not an escaped \$, not $$, no space inside either dollar,
# no digit after the closing one
INLINE_TEX = re.compile(r"(?<![\\$])\$(?=[^\s$])[^$\n]+(?<=[^\s\\])\$(?![\d$])")


@pytest.mark.parametrize("slug, model", PAGES, ids=[f"{s}-{m}" for s, m in PAGES])
def test_no_sentence_holds_an_equation_read_symbol_by_symbol(slug, model):
    """An equation inside a sentence (Markdown's $…$) is KaTeX's MathML, which a screen reader
    reads one symbol at a time; the app writes such a formula as plain text instead."""
    at = page_of(slug, model)
    texts = [e.value for kind in ("markdown", "caption", "info", "warning", "success")
             for e in at.get(kind) if isinstance(e.value, str)]
    inline = [m.group(0) for t in texts for m in INLINE_TEX.finditer(t)]
    assert not inline, inline


def test_the_inline_equation_pattern_finds_an_equation_and_not_prices_or_display_math():
    found = INLINE_TEX.findall(r"with $m_h = 1$ (on), $$x^2$$, 5 $ or 6 $, \$3 and \$4")
    assert found == ["$m_h = 1$"]


def test_a_masked_score_says_minus_infinity():
    """On the causal captioner a key after the query is masked: the worked score says so."""
    at = open_app("qkv", CAP, no_error=True, state={keys.KEY_PATCH: 40})
    (tex,) = [tex_of(e) for e in at.get("latex") if r"\cdot k_" in e.value]
    i, j = re.search(r"M_\{(\d+),(\d+)\}", tex).groups()
    assert spoken(tex).endswith(f", then plus M sub {i}, {j} equals minus infinity")


def test_the_equations_no_page_draws_by_default_are_said():
    """The why stage's AUC (drawn while its numbers are computed, on a big model) and the
    classifier's formula on the other model families (average pooling, a distillation token)."""
    auc = (r"\mathrm{AUC} = \int_0^1 p\big(\text{answer} \mid \text{a fraction } x "
           r"\text{ of the } N = 196\text{ patches greyed}\big)\,dx")
    assert spoken(auc) == ("AUC equals the integral from 0 to 1 of p (answer given a fraction x "
                           "of the N equals 196 patches greyed) d x")
    base = load_model(CLF).config
    avg = dataclasses.replace(base, global_pool="avg", fc_norm=True, class_token=False)
    assert spoken(_equation(avg)).startswith(
        f"y hat equals softmax of (the fraction LN sub fc of (the fraction 1 over "
        f"{base.num_patches}, end fraction, the sum over p of z sub L superscript p) W sub c plus "
        f"b sub c over T, end fraction)")
    dist = dataclasses.replace(base, dist_token=True)
    assert spoken(_equation(dist)).startswith(
        "y hat equals softmax of (the fraction the fraction 1 over 2, end fraction, (LN of (z "
        "sub L superscript CLS) W sub c plus b sub c plus LN of (z sub L superscript DIST) W "
        "sub d plus b sub d) over T, end fraction)")


def test_unknown_tex_is_said_by_name_and_never_fails():
    assert spoken(r"\foo{x} + \alpha_{\bar y}") == "foo x plus alpha sub y bar"
    for broken in (r"\frac{a", r"x^", r"}{", r"\sqrt", r"\left(", r"|a", r"\begin{cases}a&b",
                   r"\xrightarrow[a", r"\text{a\\b}", r"\mathrm{\_x^}"):
        assert not TEX_LEFT.search(spoken(broken)), broken


# ---------------------------------------------------------------- (c) the words on the page
def words_after(block) -> list[tuple[str, str]]:
    """(an equation's TeX, the body of the element right after it) for every equation under
    `block`, in page order."""
    out, kids = [], list(block.children.values())
    for i, node in enumerate(kids):
        if getattr(node, "type", "") == "latex":
            after = kids[i + 1] if i + 1 < len(kids) else None
            out.append((tex_of(node), getattr(getattr(after, "proto", None), "body", "")))
        elif hasattr(node, "children"):
            out += words_after(node)
    return out


def paragraph(tex: str) -> str:
    return f"<p class='sr-only {SAID}'>{SAY}{html.escape(spoken(tex))}</p>"


@pytest.mark.parametrize("slug, model", PAGES, ids=[f"{s}-{m}" for s, m in PAGES])
def test_each_equation_on_a_page_has_its_words_right_after_it(slug, model):
    pairs = words_after(page_of(slug, model).main)
    assert len(pairs) == len(drawn(slug, model))
    for tex, body in pairs:
        assert body == paragraph(tex), (tex, body)


def _two_equations():
    import streamlit as st

    from ui.drawing.equation import latex

    latex(r"\frac{QK^\top}{\sqrt{d_k}}")
    latex(r"x \in \mathbb{R}^{3\times 4}", st.columns(2)[1])


def test_the_helper_draws_the_words_after_the_equation_in_the_same_place():
    at = AppTest.from_function(_two_equations).run()
    assert not at.exception
    pairs = words_after(at.main)
    assert [t for t, _ in pairs] == [r"\frac{QK^\top}{\sqrt{d_k}}", r"x \in \mathbb{R}^{3\times 4}"]
    for tex, body in pairs:
        assert body == paragraph(tex)
    assert "the fraction Q K transpose over the square root of d sub k, end fraction" in pairs[0][1]
    assert "x in the real 3 by 4 matrices" in pairs[1][1]
