"""Accessibility in Chromium: a following student's phone without WCAG violations, and the
student's whole flow done with the keyboard alone (Tab, Space, Enter, the arrows, and typing the
class's code and a patch's number), at 1280×900 and on a phone (390×844), every stop on the way
showing a focus ring at 3:1 or more; on a slide, the order Tab takes and its ring.

axe-core's WCAG 2.1 A/AA rules (tools/axe.py, the `axe` fixture) run inside the walks that
visit every page and step already (docs/accessibility.md): the page at 1280×720
(tests/test_browser.py) and at 390×844 (tests/test_phone_browser.py), every slide at 1280×720
and 390×844 (tests/test_deck_browser.py), following students (here, tests/test_live_browser.py,
tests/test_phone_browser.py). 0 violations outside tools/axe.ALLOWED (the documented list).
Waits are generous (a busy machine); none stands for a speed."""

from __future__ import annotations

import re

import pytest

from tools.browser import serve, start_class, wait_idle
from ui import keys, stages
from ui.drawing import a11y
from ui.selection import models
from vit_core import load_model

pytestmark = pytest.mark.browser

PHONE = dict(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
DESKTOP = dict(viewport={"width": 1280, "height": 720})
WAIT = 120_000  # ms: for what the server does by itself (a push to a following student)
QUESTION_STEP = 3  # attention's "Every head's CLS attention": a patch to pick (a chart's cell)
PATCH = 5  # the patch the keyboard's student answers (typed: a keyboard cannot click a cell)


@pytest.fixture(scope="module")
def server():
    with serve() as srv:
        yield srv.url


# ---------------------------------------------------------------- the keyboard
# What has the focus, and the ring drawn for it: on the element, or where Streamlit draws the
# input invisible, on what stands for it: a radio's, a checkbox's or a toggle's label, a slider's
# thumb (the first box around its input at least 8 px wide); with the contrast of the ring's
# colour against the first opaque background behind it (WCAG 2.4.7 and 1.4.11: 3:1).
FOCUSED_JS = r"""() => {
  const a = document.activeElement;
  if (!a || a === document.body) return null;
  const rgb = c => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map(v => v / 255).map(v =>
      v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
      .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  let thumb = a.parentElement || a;
  while (thumb.parentElement && thumb.getBoundingClientRect().width < 8)
    thumb = thumb.parentElement;
  const ring = a.matches('input[type="radio"], input[type="checkbox"]') && a.closest('label')
               || a.matches('input[type="range"]') && thumb
               || a.closest('[data-baseweb="select"] > div') || a;
  let bg = [255, 255, 255];
  for (let e = ring.parentElement; e; e = e.parentElement) {
    const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length === 3 || (c.length === 4 && c[3] > 0.99)) { bg = c.slice(0, 3); break; }
  }
  const s = getComputedStyle(ring), col = rgb(s.outlineColor).slice(0, 3);
  const [hi, lo] = [lum(col), lum(bg)].sort((x, y) => y - x);
  const label = a.getAttribute('aria-label') || (a.labels && a.labels[0] &&
      a.labels[0].innerText) || a.innerText || a.value || '';
  const r = ring.getBoundingClientRect();
  return {tag: a.tagName, type: a.type || '', role: a.getAttribute('role') || '',
          label: label.trim().replace(/\s+/g, ' ').slice(0, 60),
          off: r.right <= 0 || r.bottom <= 0 || r.left >= innerWidth || r.top >= innerHeight,
          ring: s.outlineStyle !== 'none' ? parseFloat(s.outlineWidth) : 0,
          contrast: (hi + 0.05) / (lo + 0.05)};
}"""


def tab_to(page, label: str, most: int = 150, back: bool = False, seen=None) -> dict:
    """Press Tab (Shift+Tab with `back`) until the focused element's label matches the regular
    expression `label` (re.search: a button's label starts with its icon's name);
    every stop on the way is checked for a visible focus ring (added to `seen`). A stop that
    looks off the screen or ringless is measured again once the page's run is done: a Tab that
    leaves a text field reruns the script, and under load the Join button was measured off the
    screen mid-run (CI, once); a closed sidebar's control stays off the screen after it."""
    for _ in range(most):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        now = page.evaluate(FOCUSED_JS)
        if now is None:
            continue
        if now["off"] or now["ring"] < 2:  # measured while a run moved the page: once it is done
            wait_idle(page)
            now = page.evaluate(FOCUSED_JS) or now
        if seen is not None:
            seen.append({**now, "to": label})
        if re.search(label, now["label"]):
            return now
    raise AssertionError(f"{label!r} not reached with Tab in {most} presses; last: {now}")


def no_ring(seen: list[dict]) -> list[str]:
    """The stops where the focus could not be seen: no ring of 2 px at 3:1, or off the screen
    (a closed sidebar's controls, once tab stops on a phone)."""
    return [f"stop {i} (to {s['to']}): {s['tag']} {s['label']!r}: ring {s['ring']} px at "
            f"{s['contrast']:.2f}:1" + (", off the screen" if s["off"] else "")
            for i, s in enumerate(seen) if s["ring"] < 2 or s["contrast"] < 3 or s["off"]]


def shown_sample(page) -> str:
    return page.locator("[data-testid='stSidebar']").get_by_text(
        re.compile("^Showing sample")).inner_text()


def slider(page, label: str) -> tuple[int, int, int]:
    """A slider's (value, min, max), from its input, found by its accessible name: exactly the
    label, said once (it was "Layer Layer": ui/drawing/a11y.py)."""
    return tuple(int(v) for v in page.get_by_role("slider", name=label, exact=True).evaluate(
        "e => [e.value, e.min, e.max]"))


def teacher_on(browser, server: str, stage: str, step: int):
    """A teacher in presenter mode on `stage`'s `step` who starts a class: (page, code)."""
    return start_class(browser, server, stage, step)


def sidebar(page, seen: list[dict], open_it: bool) -> None:
    """A phone's sidebar opened (the header's » button) or closed (its « button), by keyboard;
    closed, none of its controls is a tab stop (ui/drawing/a11y.py makes it inert)."""
    tab_to(page, "keyboard_double_arrow_" + ("right" if open_it else "left"), back=True,
           seen=seen)
    page.keyboard.press("Enter")
    page.wait_for_function("o => document.querySelector('[data-testid=\"stSidebar\"]')"
                           ".getBoundingClientRect().left > -2 === o", arg=open_it)


def pick_a_sample(page, seen: list[dict], phone: bool) -> None:
    """Another sample scene, by keyboard: the list opened with ↓, chosen with Enter (on a phone
    in the sidebar, opened and closed again with its buttons)."""
    before = shown_sample(page)
    if phone:
        sidebar(page, seen, True)
    tab_to(page, "^Sample scene", seen=seen)
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    wait_idle(page)
    assert shown_sample(page) != before
    if phone:
        sidebar(page, seen, False)


def join_by_keyboard(page, code: str, seen: list[dict], phone: bool) -> None:
    """"Join a class" in the sidebar (on a phone opened first, closed after), the code typed,
    Join pressed; following the class at its question step."""
    if phone:
        sidebar(page, seen, True)
    tab_to(page, "Join a class$", back=not phone, seen=seen)
    page.keyboard.press("Enter")  # opens the box
    tab_to(page, "^Code on the projector", seen=seen)
    page.keyboard.type(f"{code[:3]}-{code[3:]}".lower())
    tab_to(page, "Join$", seen=seen)
    page.keyboard.press("Enter")
    banner = page.locator(f".st-key-{keys.LIVE_BANNER}")
    banner.get_by_text("Following class").wait_for(timeout=WAIT)
    banner.get_by_text(f"step {QUESTION_STEP}/").wait_for(timeout=WAIT)
    wait_idle(page)
    if phone and page.evaluate("() => document.querySelector('[data-testid=\"stSidebar\"]')"
                               ".getBoundingClientRect().left > -2"):
        sidebar(page, seen, False)


def student_by_keyboard(page, code: str, phone: bool) -> list[dict]:
    """The whole student flow with the keyboard alone: a sample picked, Layer and Head moved one
    step (←/→), the class joined, the question answered by typing a patch's number and sending
    it. Every stop on the way (for no_ring)."""
    page.wait_for_function("() => document.__vitA11y")  # the page's script (ui/drawing/a11y.py)
    seen: list[dict] = []
    pick_a_sample(page, seen, phone)
    for name in ("Layer", "Head"):  # one step down, or up from the first
        value, low, _ = slider(page, name)
        tab_to(page, f"^{name}$", seen=seen)
        page.keyboard.press("ArrowLeft" if value > low else "ArrowRight")
        wait_idle(page)
        want = value - 1 if value > low else value + 1
        assert slider(page, name)[0] == want
        page.wait_for_function("p => new URLSearchParams(location.search).get(p[0]) === p[1]",
                               arg=[name.lower(), str(want)], timeout=WAIT)  # after its run
    join_by_keyboard(page, code, seen, phone)
    # the question asks for a patch: its number typed instead of a click on the grid
    page.locator(f".st-key-{keys.ask('attention', 'heads')}").wait_for(timeout=WAIT)
    tab_to(page, "type the patch's number", seen=seen)
    page.keyboard.type(str(PATCH))
    page.keyboard.press("Enter")
    page.get_by_text(f"Chosen: patch {PATCH} ").wait_for(timeout=WAIT)
    tab_to(page, "Send$", seen=seen)
    page.keyboard.press("Enter")
    page.get_by_text(f"Your answer: patch {PATCH} (sent)").wait_for(timeout=WAIT)
    assert page.locator("[data-testid='stException']").count() == 0
    return seen


# a slide's tab stops, in the order they must come: the header (the deck's buttons, then its
# popovers), the step's controls, the figure, the question
IN_POPOVER_JS = ("() => { const b = document.querySelector('[data-testid=\"stPopoverBody\"]'); "
                 "return Boolean(b && b.contains(document.activeElement)); }")
# a message box's icon a screen reader would still read (not hidden): its ligature's name
ICONS_READ_JS = ("() => [...document.querySelectorAll('[data-testid=\"stAlertDynamicIcon\"]')]"
                 ".filter(i => i.getAttribute('aria-hidden') !== 'true').map(i => i.textContent)")
SLIDE_ORDER = ["Previous$", "Next$", "Notes$", "Exit$", "Model and image", "^Layer$", "^Head$",
               "^Reveal"]


def test_the_student_flow_by_keyboard_and_a_following_phone_without_violations(browser, server,
                                                                              axe):
    teacher, code = teacher_on(browser, server, "attention", QUESTION_STEP)

    # a student following on a phone: the step and its question, no violations
    phone = browser.new_context(**PHONE).new_page()
    phone.goto(f"{server}/?page=overview&{keys.LIVE_JOIN}={code}")
    phone.locator(f".st-key-{keys.LIVE_BANNER}").get_by_text("Following class").wait_for(
        timeout=WAIT)
    wait_idle(phone)
    found = axe(phone, "a following student's phone, its question")
    phone.context.close()
    assert not found, "\n".join(found)

    # two more students, with the keyboard alone: at a desk and on a phone (kept: below)
    for n, size in enumerate((dict(viewport={"width": 1280, "height": 900}), PHONE), 1):
        page = browser.new_context(**size).new_page()
        page.goto(f"{server}/?page=attention")
        wait_idle(page)
        seen = student_by_keyboard(page, code, phone=size is PHONE)
        teacher.get_by_text(f"{n} answered").wait_for(timeout=WAIT)
        assert len(seen) > 10 and not no_ring(seen), "\n".join(no_ring(seen))
        if size is not PHONE:
            page.context.close()

    # the teacher's slide: Tab goes header, controls, figure, question, each stop seen; a
    # popover opened with Enter takes the focus in (Escape gives it back)
    teacher.locator("[data-testid='stMain']").focus()  # the slide, from its start
    seen = []
    for label in SLIDE_ORDER:
        tab_to(teacher, label, most=12, seen=seen)
        if label == "Model and image":
            teacher.keyboard.press("Enter")
            teacher.wait_for_function(IN_POPOVER_JS, timeout=30_000)
            teacher.keyboard.press("Escape")
            teacher.wait_for_function(f"() => !({IN_POPOVER_JS})()", timeout=30_000)
    assert not no_ring(seen), "\n".join(no_ring(seen))
    # Reveal, with Space on its switch: the answer's box (a live region, read as it appears)
    # without its icon's name (Orca read "… | lightbulb": ui/drawing/a11y.py hides it)
    teacher.keyboard.press("Space")
    teacher.locator("[data-testid='stAlertDynamicIcon']").first.wait_for(timeout=WAIT)
    wait_idle(teacher)
    assert teacher.evaluate(ICONS_READ_JS) == [], teacher.evaluate(ICONS_READ_JS)
    # the teacher moves on: the phone's screen reader is told which step the class is on now
    assert page.locator(f"#{a11y.ANNOUNCE_ID}").text_content() == ""  # nothing moved yet
    teacher.get_by_role("button", name="Next", exact=True).click()
    config = load_model(models.choices()[0]).config  # the students' model (the default)
    stage = stages.get("attention")
    steps = stage.steps_for(config)
    said = (f"{a11y.MOVED}{stage.title}, step {QUESTION_STEP + 1}/{len(steps)}: "
            f"{steps[QUESTION_STEP].title_for(config)}.")
    page.wait_for_function(f"s => document.getElementById('{a11y.ANNOUNCE_ID}').textContent "
                           f"=== s", arg=said, timeout=WAIT)
    assert page.locator(f"#{a11y.ANNOUNCE_ID}").get_attribute("role") == "status"
    page.context.close()
