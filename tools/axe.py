"""The accessibility audit: axe-core's WCAG 2.1 A and AA rules, run in Chromium on the app's pages.

    .venv/bin/python tools/axe.py --pages all --sizes 1280x720 390x844 [--presenter] [--student]
        [--model shapes-classifier] [--show-nodes]
    .venv/bin/python tools/axe.py --walk [--model …] [--show-nodes]

prints a table: page × size × view → the rules violated, each with the number of elements that
break it. Views: `page` (the normal page), `presenter` (presenter mode, its first step) and
`student` (a student following a class whose teacher is on that page). Every page at both sizes
is the tool's job; the browser tests run axe inside their own walks (docs/accessibility.md).

`--walk` audits every step, not only a page's first: a teacher in presenter mode walks the whole
deck with → (the overview's first step to the last stage's last) with a class started, a student
at 1280×720 and one at 390×844 following; at each step the slide at 1280×720 and at 390×844 and
both students' screens are audited (four views a step).

axe-core comes from npm at the version tools/package-lock.json pins:
`npm ci --prefix tools` (CI does it: .ci/run). `audit(page)` injects it into a Playwright page.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.browser import CHROMIUM_ARGS, ROOT, serve, start_class, wait_idle  # noqa: E402

AXE_JS = ROOT / "tools" / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]  # WCAG 2.0 and 2.1, levels A and AA

# Violations that sit in Streamlit's own markup and that the app cannot change: (rule, a CSS
# selector that the node's target contains). Each is in docs/accessibility.md with its
# upstream issue; the tests allow exactly these.
ALLOWED: tuple[tuple[str, str], ...] = ()

RUN_JS = """async tags => {
  const r = await axe.run(document, {runOnly: {type: 'tag', values: tags},
                                     resultTypes: ['violations']});
  return r.violations.map(v => ({rule: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.flat().join(' '),
                              summary: (n.failureSummary || '').split('\\n').slice(1, 3)
                                         .join(' ').trim(),
                              html: n.html.slice(0, 160)}))}));
}"""


@dataclass
class Violation:
    rule: str
    impact: str
    help: str
    nodes: list[dict]  # target (a CSS selector), summary (axe's why), html (the element's start)

    def __str__(self) -> str:
        first = self.nodes[0] if self.nodes else {}
        return (f"{self.rule} ({self.impact}, {len(self.nodes)}): {self.help}; e.g. "
                f"{first.get('target', '')} — {first.get('summary', '')} | "
                f"{first.get('html', '')[:120]}")


def axe_source() -> str:
    if not AXE_JS.exists():
        raise FileNotFoundError(f"{AXE_JS} is missing: run `npm ci --prefix tools`")
    return AXE_JS.read_text()


def audit(page) -> list[Violation]:
    """axe-core's WCAG 2.1 A/AA violations on the page as it is now (injected once per
    document)."""
    # the page's own accessibility script (ui/drawing/a11y.py) is part of the page: wait for it, and
    # for a frame after its last fix
    page.wait_for_function("() => document.__vitA11y || !document.querySelector("
                           "'.st-key-a11y_js')", timeout=60_000)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=axe_source())
    return [Violation(**v) for v in page.evaluate(RUN_JS, TAGS)]


def allowed(rule: str, target: str) -> bool:
    return any(rule == r and sel in target for r, sel in ALLOWED)


def outside_list(found: list[Violation]) -> list[Violation]:
    """The violations' nodes that the documented list (ALLOWED) does not name."""
    left = []
    for v in found:
        nodes = [n for n in v.nodes if not allowed(v.rule, n["target"])]
        if nodes:
            left.append(Violation(v.rule, v.impact, v.help, nodes))
    return left


def problems(page, where: str) -> list[str]:
    """One line per violation outside the documented list, each saying where (for a test that
    walks many views and asserts once at the end)."""
    return [f"{where}: axe: {v}" for v in outside_list(audit(page))]


def size(text: str) -> tuple[int, int]:
    w, h = text.lower().split("x")
    return int(w), int(h)


def context_for(browser, w: int, h: int):
    phone = w <= 640
    return browser.new_context(viewport={"width": w, "height": h}, is_mobile=phone,
                               has_touch=phone)


def open_view(browser, url: str, slug: str, view: str, w: int, h: int, model: str | None):
    """A page of the app in one view at w×h, settled; returns (page, pages to close)."""
    from ui import keys

    extra = f"&model={model}" if model else ""
    if view == "student":
        teacher, code = start_class(browser, url, slug)
        page = context_for(browser, w, h).new_page()
        page.goto(f"{url}/?page=overview&{keys.LIVE_JOIN}={code}{extra}")
        page.locator(f".st-key-{keys.LIVE_BANNER}").get_by_text("Following class").wait_for(
            timeout=120_000)
        wait_idle(page)
        return page, [teacher, page]
    page = context_for(browser, w, h).new_page()
    page.goto(f"{url}/?page={slug}{extra}" + ("&presenter=1" if view == "presenter" else ""))
    wait_idle(page)
    return page, [page]


def deck_steps(model: str | None) -> list[tuple[str, str]]:
    """Every step of the deck for this model, in order: (the presenter header's "Stage 4/10 ·
    step 2/5", the following student's banner's "Attention heads, step 2/5")."""
    from ui import stages
    from vit_core import default_model_name, load_model

    c = load_model(model or default_model_name()).config
    out = []
    for i, stage in enumerate(stages.STAGES):
        n = len(stage.steps_for(c))
        where = f"Stage {i}/{len(stages.STAGES) - 1}" if i else "Overview"
        out += [(f"{where} · step {k}/{n}", f"{stage.title}, step {k}/{n}")
                for k in range(1, n + 1)]
    return out


PHONE_SIZE = (390, 844)


def walk(browser, url: str, model: str | None, on_view) -> None:
    """The teacher's walk (`--walk`): every step in presenter mode with a class started, two
    students following (1280×720 and a phone); `on_view(where, page)` is called for the slide
    at 1280×720 and at 390×844 and for each student's screen, at every step."""
    from ui import keys

    extra = f"&model={model}" if model else ""
    teacher, code = start_class(browser, url, "overview" + extra)  # (the model rides along)
    students = {}
    for w, h in ((1280, 720), PHONE_SIZE):
        page = context_for(browser, w, h).new_page()
        page.goto(f"{url}/?page=overview&{keys.LIVE_JOIN}={code}{extra}")
        students[f"{w}x{h}"] = page
    sequence = deck_steps(model)
    for i, (header, banner) in enumerate(sequence):
        teacher.locator(f".st-key-{keys.PRESENTER_WHERE}").get_by_text(header).wait_for(
            timeout=180_000)
        wait_idle(teacher, 240_000)
        teacher.wait_for_function("() => document.__vitDeck === true", timeout=60_000)
        on_view(f"{header} presenter 1280x720", teacher)
        teacher.set_viewport_size({"width": PHONE_SIZE[0], "height": PHONE_SIZE[1]})
        wait_idle(teacher, 240_000)
        on_view(f"{header} presenter {PHONE_SIZE[0]}x{PHONE_SIZE[1]}", teacher)
        teacher.set_viewport_size({"width": 1280, "height": 720})
        for wh, page in students.items():
            page.locator(f".st-key-{keys.LIVE_BANNER}").get_by_text(banner).wait_for(
                timeout=180_000)
            wait_idle(page, 240_000)
            on_view(f"{header} student {wh}", page)
        if i < len(sequence) - 1:
            wait_idle(teacher, 240_000)
            teacher.keyboard.press("ArrowRight")
    for page in [teacher, *students.values()]:
        page.context.close()


def report(where: str, found: list[Violation], show_nodes: bool) -> int:
    """Print one view's line (and its elements); the number of violating elements."""
    n = sum(len(v.nodes) for v in found)
    rules = ", ".join(f"{v.rule}×{len(v.nodes)}" for v in found) or "-"
    print(f"{where:48} {n:3}  {rules}", flush=True)
    for v in found:
        for node in (v.nodes if show_nodes else v.nodes[:1]):
            print(f"{'':50}{v.rule}: {node['target']} — {node['summary']}"
                  f" | {node['html'][:100]}")
    return n


def main(argv=None) -> int:
    from playwright.sync_api import sync_playwright

    from ui.stages import STAGES

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", nargs="+", default=["all"])
    ap.add_argument("--sizes", nargs="+", default=["1280x720", "390x844"])
    ap.add_argument("--presenter", action="store_true", help="presenter mode too")
    ap.add_argument("--student", action="store_true", help="a following student's view too")
    ap.add_argument("--walk", action="store_true",
                    help="every step: presenter mode and two following students (no pages)")
    ap.add_argument("--model", default=None)
    ap.add_argument("--show-nodes", action="store_true", help="every element, not one example")
    args = ap.parse_args(argv)
    slugs = [s.slug for s in STAGES] if args.pages == ["all"] else args.pages
    views = ["page"] + ["presenter"] * args.presenter + ["student"] * args.student
    counts: list[int] = []

    def on_view(where: str, page) -> None:
        counts.append(report(where, audit(page), args.show_nodes))
        if page.locator("[data-testid='stException']").count():
            print(f"{'':50}an exception is on the page (axe audited its error box)")
            counts[-1] += 1

    with serve() as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        if args.walk:
            walk(browser, server.url, args.model, on_view)
            slugs = []
        for slug, wh, view in [(s, wh, v) for s in slugs for wh in args.sizes for v in views]:
            if view == "presenter" and size(wh)[0] <= 640:
                continue  # a page's first step on a phone: --walk does every step there
            try:
                page, opened = open_view(browser, server.url, slug, view, *size(wh), args.model)
                on_view(f"{slug:13} {wh:9} {view:9}", page)
                for p in opened:
                    p.context.close()
            except Exception as e:  # a view that did not open: said, and the rest go on
                print(f"{slug:13} {wh:9} {view:9} not audited: {str(e)[:200]}")
        browser.close()
    print(f"\n{sum(counts)} violating elements on {len(counts)} views "
          f"({sum(1 for n in counts if n)} with any)")
    return 1 if sum(counts) else 0


if __name__ == "__main__":
    sys.exit(main())
