"""A live class in Chromium: what AppTest cannot do. The student's page moves by itself (the
server reruns it: ui/live/push.py, drawn by Streamlit's own frontend), a patch is answered by
clicking the student's own image, and the teacher's Reveal reaches the student's screen
without a click there; the teacher's Training-step control works in a class, the student follows
it, and a student's presenter Exit leaves a whole page.

One server, two browser contexts (two tabs with their own cookies: two sessions). The server
runs with the 5-s round's rechecks off (ui/live/push.RECHECK_ENV): only a push moves the student.
Waits are generous (a busy machine); none stands for a speed."""

from __future__ import annotations

import re

import pytest

from tests.slides import CUT_JS, figure_problems, problems_on, settle
from tools.browser import serve, start_class, wait_idle
from ui import keys
from ui.live.push import RECHECK_ENV

WAIT = 120_000  # ms: for what the server does by itself (a push, the tally's next look)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server():
    with serve(env={RECHECK_ENV: "0"}) as srv:
        yield srv.url


def banner(page) -> str:
    return page.locator(f".st-key-{keys.LIVE_BANNER}").inner_text()


def test_a_student_follows_answers_by_clicking_a_patch_and_sees_the_reveal(browser, server, axe):
    teacher, code = start_class(browser, server)
    pretty = f"{code[:3]}-{code[3:]}"
    teacher.locator(f".st-key-{keys.LIVE_HEADER}").get_by_text(pretty).wait_for()

    # the student types the code (as read off the projector) under "Join a class"
    student = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    student.goto(f"{server}/?page=overview")
    wait_idle(student)
    student.get_by_text("Join a class").click()
    student.get_by_label("Code on the projector").fill(pretty.lower())
    student.get_by_role("button", name="Join", exact=True).click()
    student.locator(f".st-key-{keys.LIVE_BANNER}").get_by_text("Following class").wait_for()
    assert "step 1/" in banner(student) and "Attention heads" in banner(student)
    assert re.search(r"[?&]me=[\w-]{8,}", student.url)  # a reload keeps the same student

    # the teacher moves to the step asking where CLS looks; the student's page follows alone
    # (the server reruns it: with the rechecks off, nothing else would)
    for k in (2, 3):
        teacher.locator(f".st-key-{keys.PRESENTER_NEXT} button").first.click()
        teacher.locator(f".st-key-{keys.PRESENTER_WHERE}").get_by_text(f"step {k}/").wait_for()
        wait_idle(teacher)  # a click while the step still runs can be lost (seen under -n 2)
    student.locator(f".st-key-{keys.LIVE_BANNER}").get_by_text(
        re.compile("step 3/")).wait_for(timeout=WAIT)
    teacher.locator(f".st-key-{keys.LIVE_HEADER}").get_by_text("1 following").wait_for(
        timeout=WAIT)

    # answer by clicking a patch of the student's own image
    grid = student.locator(f".st-key-{keys.answer_grid('attention', 'heads')}")
    grid.scroll_into_view_if_needed()
    box = grid.locator(".nsewdrag").first.bounding_box()
    student.mouse.click(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
    student.get_by_text(re.compile(r"Chosen: patch \d+")).wait_for()
    chosen = int(re.search(r"Chosen: patch (\d+)",
                           student.get_by_text(re.compile("Chosen: patch")).inner_text()).group(1))
    student.get_by_role("button", name="Send").click()
    student.get_by_text(f"Your answer: patch {chosen} (sent)").wait_for()

    # the teacher's tally counts it; Reveal shows the answer on the student's screen by itself
    teacher.get_by_text("1 answered").wait_for(timeout=WAIT)
    teacher.get_by_role("button", name="Reveal to the class").click()
    student.get_by_text(re.compile("Your answer was (not )?right for your image")).wait_for(
        timeout=WAIT)
    wait_idle(student)
    found = axe(student, "the student after the reveal") + axe(teacher, "the teacher's tally")
    assert not found, "\n".join(found)
    assert student.locator("[data-testid='stException']").count() == 0
    assert teacher.locator("[data-testid='stException']").count() == 0

    # with the class's badge in the header and the answers under the question (the tallest
    # the question gets), the teacher's slide still fits the projector
    teacher.get_by_text("1 answered").wait_for()
    problems = []
    for w, h in ((1280, 720), (1024, 768)):
        teacher.set_viewport_size({"width": w, "height": h})
        settle(teacher)
        problems += problems_on(teacher, f"the teacher's slide at {w}×{h}")
        # the answer and the tally under the question leave the figure half of the slide
        problems += figure_problems(teacher, f"the teacher's slide at {w}×{h}")
        badge = teacher.locator(f".st-key-{keys.LIVE_HEADER}")
        if badge.evaluate(CUT_JS) or badge.bounding_box()["x"] + badge.bounding_box()[
                "width"] > w + 1:
            problems.append(f"the class badge {badge.inner_text()!r} is cut at {w}×{h}")
    assert not problems, "\n".join(problems)

    # the teacher's Training-step control (in the header's popover, first opened after the
    # class started) shows the slide's step, and moving it keeps presenter mode and the class;
    # the student follows it
    teacher.get_by_role("button", name=re.compile("Model and image")).click()
    thumb = teacher.locator("[data-testid='stSlider']").filter(
        has_text="Training step").get_by_role("slider")
    assert thumb.get_attribute("aria-valuetext") == "8000 (final)"
    thumb.focus()
    teacher.keyboard.press("ArrowLeft")  # the kept step before the last: 3300
    wait_idle(teacher)
    assert "presenter=1" in teacher.url and "train_step=3300" in teacher.url
    teacher.locator(f".st-key-{keys.PRESENTER_BAR}").wait_for()
    teacher.locator(f".st-key-{keys.LIVE_HEADER}").get_by_text(pretty).wait_for()
    student.locator("[data-testid='stSlider']").filter(has_text="Training step").locator(
        "[aria-valuetext='3300']").wait_for(timeout=30_000)

    # the student turns presenter mode on, then presses Exit: the page is whole again
    errors = []
    student.on("pageerror", lambda e: errors.append(str(e)))
    student.get_by_text("Presenter mode").click()
    exit_button = student.locator(f".st-key-{keys.PRESENTER_EXIT}").get_by_role("button")
    exit_button.wait_for(timeout=60_000)
    wait_idle(student)
    exit_button.click()
    student.locator(f".st-key-{keys.PRESENTER_BAR}").wait_for(state="detached", timeout=60_000)
    wait_idle(student)
    assert not errors, errors  # "'setIn' cannot be called on an ElementNode": a blank page
    assert "Following class" in banner(student) and "step 3/" in banner(student)
    assert student.locator("h1").first.inner_text().startswith("4 · Attention heads")
    assert student.locator(f".st-key-{keys.DECK_FIGURE}").locator(
        "[data-testid='stPlotlyChart'], [data-testid='stImage']").count()  # the step's figure
    assert student.locator("[data-testid='stException']").count() == 0
