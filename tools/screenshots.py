"""Start the app, open every stage in headless Chromium, and save a screenshot of each.

    .venv/bin/python tools/screenshots.py [--out screenshots] [--stages overview ...]
        [--model shapes-classifier] [--query "mask=causal"] [--viewport-only]
    .venv/bin/python tools/screenshots.py --presenter --width 1280 --height 720

With --presenter: presenter mode, one screenshot of the screen (not the whole page) per step
of every stage, named <stage>-<step>.png, as the projector shows them.

Needs Debian's chromium (/usr/bin/chromium) and the playwright package (requirements-dev.txt).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.browser import CHROMIUM_ARGS, ROOT, serve, wait_idle  # noqa: E402


def main(argv=None):
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="screenshots")
    ap.add_argument("--stages", nargs="*", default=None)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=800)
    ap.add_argument("--query", default="", help="extra URL parameters, e.g. model=vit-b16")
    ap.add_argument("--viewport-only", action="store_true",
                    help="only what the window shows (default: the whole page)")
    ap.add_argument("--model", default=None)
    ap.add_argument("--presenter", action="store_true")
    args = ap.parse_args(argv)
    stages = args.stages or ["overview", "patches", "embeddings", "qkv", "attention", "masks",
                             "mlp", "logits", "shapes", "segmentation", "experiments"]
    out = ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    with serve() as server, sync_playwright() as pw:
        url = server.url
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        model = f"&model={args.model}" if args.model else ""
        for slug in stages:
            if args.presenter:
                from ui.stages import titles
                from vit_core import load_model

                config = load_model(args.model or default_model()).config
                for k in range(len(titles(slug, config))):
                    t0 = time.time()
                    page.goto(f"{url}/?page={slug}&presenter=1&step={k + 1}{model}")
                    wait_idle(page)
                    path = out / f"{slug}-{k + 1}.png"
                    page.screenshot(path=str(path))
                    print(f"{slug} step {k + 1}: {time.time() - t0:.1f} s -> {path}")
                continue
            t0 = time.time()
            page.goto(f"{url}/?page={slug}{model}" + (f"&{args.query}" if args.query else ""))
            wait_idle(page)
            path = out / f"{slug}.png"
            page.screenshot(path=str(path), full_page=not args.viewport_only)
            print(f"{slug}: {time.time() - t0:.1f} s -> {path}")
        browser.close()


def default_model() -> str:
    from vit_core import default_model_name

    return default_model_name()


if __name__ == "__main__":
    main()
