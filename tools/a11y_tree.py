"""What a screen reader is given: Chromium's accessibility tree of one step, as Chromium computes
it (the DevTools protocol's Accessibility.getFullAXTree, the tree a screen reader reads through
the platform's accessibility API), printed as an outline: one line a node, its role and its
name, indented by depth; nodes Chromium ignores, and unnamed generic boxes, are left out (their
children move up).

    .venv/bin/python tools/a11y_tree.py attention:3 logits:2 [--presenter]
        [--size 1280x720] [--model shapes-classifier]

(a stage's slug and its step, counted from 1; one server for all of them).

On the page the outline runs from the step's heading to the next step's; on a slide it is the
whole slide (presenter mode's header and the one step). Then the figure's text alternative
(the `figure-alt` line, ui/lesson/deck.Step.describe), or a line saying the step has none yet.
docs/accessibility.md quotes what it printed for three steps.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.axe import context_for, size  # noqa: E402
from tools.browser import CHROMIUM_ARGS, serve, wait_idle  # noqa: E402

SKIP_ROLES = {"generic", "none", "LineBreak", "InlineTextBox", "presentation"}
# the page's script has run (ui/drawing/a11y.py), no widget is still a placeholder and every
# picture has loaded
DRAWN_JS = """() => document.__vitA11y && !document.querySelector('[data-testid="stSkeleton"]')
    && [...document.images].every(i => i.complete)"""
FIGURE_ALT_JS = """() => [...document.querySelectorAll('.figure-alt')].map(e => ({
    id: e.id, text: e.textContent.trim(), hidden: e.classList.contains('sr-only')}))"""


def value(field: dict | None) -> str:
    return str((field or {}).get("value", "") or "")


def outline(page, selector: str = '[data-testid="stMain"]') -> list[tuple[int, str, str]]:
    """(depth, role, name) of every node a screen reader is given under the element `selector`
    matches, in the tree's order (Chromium's tree; the page's main frame)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("Accessibility.enable")
    root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    backend = cdp.send("DOM.describeNode", {"nodeId": node})["node"]["backendNodeId"]
    nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    cdp.detach()
    by_id = {n["nodeId"]: n for n in nodes}
    start = next(n for n in nodes if n.get("backendDOMNodeId") == backend)
    out: list[tuple[int, str, str]] = []

    def text(n: dict) -> str:  # the text under a node (an equation's symbols, in order)
        own = value(n.get("name")) if value(n.get("role")) == "StaticText" else ""
        return own + "".join(text(by_id[c]) for c in n.get("childIds", []) if c in by_id)

    def visit(n: dict, depth: int) -> None:
        role, name = value(n.get("role")), " ".join(value(n.get("name")).split())
        if role == "MathMLMath":  # an equation: one line, its symbols as a reader meets them
            out.append((depth, "math", " ".join(text(n).split())))
            return
        shown = not n.get("ignored") and not (role in SKIP_ROLES and not name) \
            and role not in ("InlineTextBox", "LineBreak")
        if shown and role == "StaticText" and out and name and name in out[-1][2]:
            shown = False  # the text that makes its parent's name: said once
        # a chart's unnamed marks in a row: one line with their count
        if shown and out and out[-1][:2] == (depth, role) and not name and \
                role.startswith("graphics") and out[-1][2][:2] in ("", "× "):
            out[-1] = (depth, role, f"× {int((out[-1][2] or '× 1')[2:]) + 1}")
            shown = False
        if shown:
            out.append((depth, role, name))
        for child in n.get("childIds", []):
            if child in by_id:
                visit(by_id[child], depth + shown)

    visit(start, 0)
    return out


def step_lines(lines: list[tuple[int, str, str]], title: str | None):
    """The lines from the heading that starts with `title` to the next heading at its level
    (all of them without a title: a slide)."""
    if title is None:
        return lines
    first = next(i for i, (_, role, name) in enumerate(lines)
                 if role == "heading" and name.startswith(title))
    depth = lines[first][0]
    end = next((i for i in range(first + 1, len(lines))
                if lines[i][1] == "heading" and lines[i][0] <= depth), len(lines))
    return lines[first:end]


def show(page, title: str | None) -> str:
    """The step's outline, then its figure's text alternative (any `figure-alt` line within
    it; a step may have none yet)."""
    lines = step_lines(outline(page), title)
    text = "\n".join(f"{'  ' * d}{role}" + (f" {name[:160]!r}" if name else "")
                     for d, role, name in lines)
    said = [a for a in page.evaluate(FIGURE_ALT_JS)
            if a["text"] and any(a["text"].removeprefix("Figure:").strip()[:60] in name
                    for _, _, name in lines)]
    if not said:
        text += "\n-- no figure-alt for this step (its Step.describe says nothing yet)"
    for a in said:
        text += f"\n-- figure-alt{' (visually hidden)' if a['hidden'] else ''}: {a['text']}"
    return text


def step_parser(doc: str) -> argparse.ArgumentParser:
    """The steps to open (slug:step) and the view: this tool's and tools/screen_reader.py's."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("steps", nargs="+", help="slug:step, the step counted from 1")
    ap.add_argument("--presenter", action="store_true", help="each step as a slide")
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--model", default=None)
    return ap


def main(argv=None) -> int:
    from playwright.sync_api import sync_playwright

    from ui import stages
    from vit_core import default_model_name, load_model

    args = step_parser(__doc__).parse_args(argv)
    config = load_model(args.model or default_model_name()).config
    extra = f"&model={args.model}" if args.model else ""
    with serve() as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = context_for(browser, *size(args.size)).new_page()
        for where in args.steps:
            slug, k = where.split(":")
            title = dict(enumerate(stages.titles(slug, config), 1))[int(k)]  # slide k, as ?step=k
            mode = f"&presenter=1&step={k}" if args.presenter else ""
            page.goto(f"{server.url}/?page={slug}{mode}{extra}")
            wait_idle(page)
            page.wait_for_function(DRAWN_JS, timeout=120_000)
            print(f"\n# {slug} step {k} ({title}), {'slide' if args.presenter else 'page'}, "
                  f"{args.size}")
            print(show(page, None if args.presenter else title))
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
