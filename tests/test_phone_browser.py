"""A phone in Chromium (390×844, mobile, touch): every page of the tour on the bundled
classifier (the model map and the stacked panels at 360×740 too), and a student following a
live class on the phone.

Each page is opened once and read whole (every step's figure is on it, as a following student
sees them one at a time): nothing wider than the screen, the phone's figures' text ≥ 14 px, no
two labels of the model map overlapping (the SVG text nodes' boxes). In the class: the
student's page is the teacher's step with its question under it, plotly's toolbar is not
shown, a patch is answered with one tap on it, and "Explore on my own" gives every step back.
"""

from __future__ import annotations

import re

import pytest
from PIL import Image

from tests.slides import (
    LAYOUT_JS,
    MAP_OVERLAPS_JS,
    NARROW_PANELS_JS,
    PHONE_TEXT_JS,
    TEXT_OFF_CHART_JS,
    settle,
)
from tools.browser import serve, start_class, wait_idle
from ui import keys, stages
from ui.stages import BY_SLUG as STAGES
from ui.stages.overview import OVERVIEW_MAP
from ui.stages.why.keys import WHY_GUESS_SKIP

pytestmark = pytest.mark.browser

PHONE = dict(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
             device_scale_factor=2)
MIN_TEXT_PX = 14
MIN_PANEL_PX = 200  # a chart's plotting area on a phone (side by side, panels were 100-150 px)


@pytest.fixture(scope="module")
def server():
    with serve() as srv:
        yield srv.url


def problems_on_phone(page, where: str) -> list[str]:
    found = [f"{where}: {p}" for p in page.evaluate(LAYOUT_JS)["bad"]]
    wide = page.evaluate("() => [document.documentElement.scrollWidth, "
                         "document.documentElement.clientWidth]")
    if wide[0] > wide[1] + 1:
        found.append(f"{where}: the page is {wide[0]} px wide on a {wide[1]}-px screen")
    found += [f"{where}: a panel {w} px wide in {chart}"
              for chart, w in page.evaluate(NARROW_PANELS_JS, MIN_PANEL_PX)]
    found += [f"{where}: cut at the chart's edge: {text!r}"
              for text in page.evaluate(TEXT_OFF_CHART_JS)]
    texts = page.evaluate(PHONE_TEXT_JS)
    found += [f"{where}: text of {px:.1f} px in a figure: {text!r}"
              for px, text in texts if px < MIN_TEXT_PX - 0.05]
    return found, len(texts)


def open_page(page, slug: str) -> None:
    """Open the stage `slug` from the app's menu (the sidebar's link, closed on a phone), as a
    student moves from page to page (a new address loads the whole app again: twice the
    browser's work of a page, in the CI's 15 minutes); the caller waits for its run."""
    page.evaluate("s => document.querySelector(`[data-testid='stSidebarNav'] a[href$='/${s}']`)"
                  ".click()", slug)
    page.wait_for_url(f"**/{slug}*")


def test_every_page_fits_a_phone(browser, server, axe):
    page = browser.new_context(**PHONE).new_page()
    problems = []
    page.goto(f"{server}/?page=overview")
    for slug in STAGES:
        if slug != "overview":
            open_page(page, slug)
        wait_idle(page)
        if slug == "overview":  # the server's first page: its map may still be drawing (CI once
            page.locator(f".st-key-phone_only_{OVERVIEW_MAP} .main-svg text").first.wait_for(
                timeout=60_000)  # counted 0 texts here under load), as for the models below
        settle(page)
        assert page.locator("[data-testid='stException']").count() == 0, slug
        found, texts = problems_on_phone(page, slug)
        problems += found + axe(page, f"{slug} on a phone")  # WCAG 2.1 A/AA: every step's there
        if slug == "why":  # alone, its steps after the guess open once the guess is skipped
            page.locator(f".st-key-{WHY_GUESS_SKIP} button").click()
            page.get_by_text("What made").first.wait_for(state="attached", timeout=120_000)
            wait_idle(page)
            settle(page)
            problems += problems_on_phone(page, "why, the guess skipped")[0]
            problems += axe(page, "why on a phone, the guess skipped")
        if slug in ("overview", "masks"):  # the phone's own figures are there, and read
            assert texts > 40, (slug, texts)
        if slug == "overview":
            tall = page.locator(f".st-key-phone_only_{OVERVIEW_MAP} .main-svg").first
            assert tall.is_visible()  # the map drawn top to bottom, not the 800-px one
            assert not page.locator(f".st-key-wide_only_{OVERVIEW_MAP}").is_visible()
            labels, overlaps = page.evaluate(MAP_OVERLAPS_JS, f"phone_only_{OVERVIEW_MAP}")
            assert labels > 40, labels  # box names, arrow shapes, the note and layer cells
            problems += [f"overview: map labels overlap: {a!r} and {b!r}" for a, b in overlaps]
    # the model map of a captioner (a text stream beside) and of 12 blocks (two rows of cells)
    for model in ("shapes-captioner-causal", "vit-ti16"):
        page.goto(f"{server}/?page=overview&model={model}")
        wait_idle(page)
        page.locator(f".st-key-phone_only_{OVERVIEW_MAP} .main-svg text").first.wait_for(
            timeout=60_000)  # (a captioner writes its caption first)
        settle(page)
        labels, overlaps = page.evaluate(MAP_OVERLAPS_JS, f"phone_only_{OVERVIEW_MAP}")
        assert labels > 40, (model, labels)
        problems += [f"{model}'s map: labels overlap: {a!r} and {b!r}" for a, b in overlaps]
        problems += problems_on_phone(page, f"{model}'s overview")[0]
    # the narrower phone (360×740): the map and the stacked panels still fit
    page.set_viewport_size({"width": 360, "height": 740})
    page.goto(f"{server}/?page=overview")  # (the models above: the default one again)
    for slug in ("overview", "masks"):
        if slug != "overview":
            open_page(page, slug)
        wait_idle(page)
        settle(page)
        problems += problems_on_phone(page, f"{slug} at 360 px")[0]
        if slug == "overview":
            overlaps = page.evaluate(MAP_OVERLAPS_JS, f"phone_only_{OVERVIEW_MAP}")[1]
            problems += [f"the map at 360 px: {a!r} and {b!r} overlap" for a, b in overlaps]
    assert not problems, "\n".join(problems)


def test_the_image_picker_is_atop_the_page_on_a_phone(browser, server, tmp_path):
    page = browser.new_context(**PHONE).new_page()
    page.goto(f"{server}/?page=overview")
    wait_idle(page)
    picker = page.get_by_role("button", name=re.compile("Your image"))
    assert picker.bounding_box()["y"] < 200  # above the page's title, the sidebar closed
    picker.click()
    body = page.get_by_test_id("stPopoverBody")
    body.get_by_text("Upload a photo", exact=True).wait_for()
    photo = tmp_path / "phone-photo.png"
    Image.new("RGB", (300, 200), (20, 120, 200)).save(photo)
    body.locator("input[type='file']").set_input_files(photo)
    page.get_by_text("upload: phone-photo.png").first.wait_for(timeout=60_000)
    wait_idle(page)
    assert page.locator("[data-testid='stException']").count() == 0


def test_a_student_follows_on_a_phone_and_answers_a_patch_with_one_tap(browser, server, axe):
    teacher, code = start_class(browser, server)
    for k in (2, 3):  # to "where does CLS look?": answered by a patch
        teacher.locator(f".st-key-{keys.PRESENTER_NEXT} button").first.click()
        teacher.locator(f".st-key-{keys.PRESENTER_WHERE}").get_by_text(f"step {k}/").wait_for()
        wait_idle(teacher)

    student = browser.new_context(**PHONE).new_page()
    student.goto(f"{server}/?page=overview&{keys.LIVE_JOIN}={code}")
    banner = student.locator(f".st-key-{keys.LIVE_BANNER}")
    banner.get_by_text("Following class").wait_for(timeout=60_000)
    banner.get_by_text(re.compile("step 3/")).wait_for(timeout=60_000)
    wait_idle(student)
    settle(student)
    problems, _ = problems_on_phone(student, "the follower's step")
    assert not problems, "\n".join(problems)

    # one step: its figure, then its question under it, and no other step's box
    steps = stages.get("attention").steps
    assert student.locator(f"[class*='st-key-{keys.STEP_PREFIX}']").count() == 0
    figure = student.locator(f".st-key-{keys.DECK_FIGURE}").bounding_box()
    ask = student.locator(f".st-key-{keys.ask('attention', steps[2].key)}").bounding_box()
    assert ask["y"] >= figure["y"] + figure["height"] - 1

    # no toolbar over the grid; a tap on patch 3 (the top row, where "Zoom" was) chooses it
    grid = student.locator(f".st-key-{keys.answer_grid('attention', steps[2].key)}")
    grid.scroll_into_view_if_needed()
    settle(student)
    assert grid.locator(".modebar-container").count() == 0 or not grid.locator(
        ".modebar-container").first.is_visible()
    cells = grid.locator(".nsewdrag").first.bounding_box()
    g = 7  # the classifier's 7×7 grid
    student.touchscreen.tap(cells["x"] + cells["width"] * 3.5 / g,
                            cells["y"] + cells["height"] * 0.5 / g)
    student.get_by_text(re.compile(r"Chosen: patch 3\b")).wait_for(timeout=30_000)
    wait_idle(student)

    # the teacher moves on: the student's page shows the next step from its top, the banner
    # saying where (the page's big title is not said again on a phone)
    student.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTo(0, 400)")
    teacher.locator(f".st-key-{keys.PRESENTER_NEXT} button").first.click()
    banner.get_by_text(re.compile("step 4/")).wait_for(timeout=60_000)
    wait_idle(student)
    assert student.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTop") == 0
    assert not student.locator("h1").first.is_visible()
    found = axe(student, "the follower's step 4")  # (step 3, its question: test_a11y_browser)

    # "Explore on my own" gives the whole page back: every step of the stage
    student.get_by_role("button", name="Explore on my own").click()
    banner.get_by_text("Exploring on your own").wait_for(timeout=30_000)
    wait_idle(student)
    shown = student.locator(f"[class*='st-key-{keys.STEP_PREFIX}attention_']").count()
    assert shown == len([s for s in steps if s.applies(_config())])
    found += axe(student, "exploring on my own, the class's banner atop")
    assert not found, "\n".join(found)


def _config():
    from vit_core import load_model

    return load_model("shapes-classifier").config
