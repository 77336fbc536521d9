"""The accessibility audit: axe-core's WCAG 2.1 A and AA rules, run in Chromium on the app's pages.

    .venv/bin/python tools/axe.py --pages all --sizes 1280x720 390x844 [--presenter] [--student]
        [--model shapes-classifier] [--show-nodes]

prints a table: page × size × view → the rules violated, each with the number of elements that
break it. Views: `page` (the normal page), `presenter` (presenter mode, its first step) and
`student` (a student following a class whose teacher is on that page). Every page at both sizes
is the tool's job; the browser tests (tests/test_a11y_browser.py) run a few of them.

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
                f"{first.get('target', '')} — {first.get('summary', '')}")


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


def main(argv=None) -> int:
    from playwright.sync_api import sync_playwright

    from ui.stages import STAGES

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", nargs="+", default=["all"])
    ap.add_argument("--sizes", nargs="+", default=["1280x720", "390x844"])
    ap.add_argument("--presenter", action="store_true", help="presenter mode too")
    ap.add_argument("--student", action="store_true", help="a following student's view too")
    ap.add_argument("--model", default=None)
    ap.add_argument("--show-nodes", action="store_true", help="every element, not one example")
    args = ap.parse_args(argv)
    slugs = [s.slug for s in STAGES] if args.pages == ["all"] else args.pages
    views = ["page"] + ["presenter"] * args.presenter + ["student"] * args.student
    rows, total = [], 0
    with serve() as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        for slug in slugs:
            for wh in args.sizes:
                for view in views:
                    if view == "presenter" and size(wh)[0] <= 640:
                        continue  # presenter mode is for a projector
                    try:
                        page, opened = open_view(browser, server.url, slug, view, *size(wh),
                                                 args.model)
                        found = audit(page)
                        for p in opened:
                            p.context.close()
                    except Exception as e:  # a view that did not open: said, and the rest go on
                        print(f"{slug:13} {wh:9} {view:9} not audited: {str(e)[:200]}")
                        continue
                    n = sum(len(v.nodes) for v in found)
                    total += n
                    rules = ", ".join(f"{v.rule}×{len(v.nodes)}" for v in found) or "-"
                    rows.append((slug, wh, view, n, rules))
                    print(f"{slug:13} {wh:9} {view:9} {n:3}  {rules}", flush=True)
                    for v in found:
                        for node in (v.nodes if args.show_nodes else v.nodes[:1]):
                            print(f"{'':38}{v.rule}: {node['target']} — {node['summary']}"
                                  f" | {node['html'][:100]}")
        browser.close()
    print(f"\n{total} violating elements on {len(rows)} page views "
          f"({sum(1 for r in rows if r[3])} with any)")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
