"""What Orca says on a step: a real screen-reader pass, headless. Starts Xvfb, a D-Bus session
bus, the AT-SPI bus (its Status IsEnabled and ScreenReaderEnabled set, so Chromium turns its
accessibility on) and Orca; Chromium runs headful on that display (with
--force-renderer-accessibility), driven by Playwright, on the app (`tools/browser.serve`). The
keys a user presses reach Orca as real X events (`xdotool`); Playwright only opens the pages.
On each step, as a user would: Orca's browse mode (Orca+A until it says "Browse mode"), H (next
heading) until Orca reads the step's title (a slide: Control+Home), Say All (keypad +), cut at
the next heading; then `--lines` presses of ↓, and the keys of `--then`, one at a time (e.g.
"Tab Tab Left": a control moved, a rerun). Printed: what Orca said while the page loaded (live
regions), then after each key; a run of one-symbol utterances (an equation) on one line.

    .venv/bin/python tools/screen_reader.py attention:1 logits:2 attention:3 [--presenter]
        [--size 1280x720] [--model shapes-classifier] [--lines 0] [--then "Tab Left"]
        [--log orca-debug.log]

Needs (Debian): `apt-get install -y --no-install-recommends orca xvfb xdotool at-spi2-core`.
No speech synthesizer runs (speech-dispatcher is kept from starting: SPEECHD_CMD points
nowhere); Orca logs every utterance all the same, and logs a Say All whole, at once.
docs/accessibility.md quotes what it printed for three steps.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.a11y_tree import DRAWN_JS, step_parser  # noqa: E402
from tools.axe import size  # noqa: E402
from tools.browser import CHROMIUM_ARGS, serve, wait_idle  # noqa: E402

NEEDS = ("Xvfb", "dbus-daemon", "orca", "xdotool", "gdbus", "/usr/libexec/at-spi-bus-launcher")
SAID = re.compile(r"^SPEECH OUTPUT: '(.*)'(?: voice=\S+)?$")
# Orca's settings: no braille display, no echo of each key, no Say All of a whole page when it
# has loaded (Orca's default; Streamlit's page is often still empty then, so it came in some
# runs only); everything else as installed
SETTINGS = {"enableBraille": False, "enableKeyEcho": False, "enableSound": False,
            "sayAllOnLoad": False, "activeProfile": ["Default", "default"]}
# Orca's user code (run at its start): its speech log ("SPEECH OUTPUT: '…'", logged whether or
# not a synthesizer speaks) to a file, one line an utterance, written at once
CUSTOM = """import logging
class OneLine(logging.Formatter):
    def format(self, record):
        return record.getMessage().replace("\\n", " ")
handler = logging.FileHandler({log!r})
handler.setFormatter(OneLine())
logging.getLogger("speech").addHandler(handler)
"""


class Desktop:
    """Xvfb, a session bus, the AT-SPI bus and Orca, in a temporary folder; `env` for the
    programs that join them (Chromium, xdotool); `said()` what Orca said since the last call."""

    def __init__(self, quiet_s: float = 2.0):
        self.dir = Path(tempfile.mkdtemp(prefix="orca-"))
        self.log = self.dir / "speech.log"
        self.procs: list[subprocess.Popen] = []
        self.offset = 0
        self.quiet_s = quiet_s

    def start(self, debug: str | None = None) -> dict:
        read, write = os.pipe()
        self.spawn(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x1024x24",
                    "-nolisten", "tcp"], pass_fds=(write,))
        os.close(write)
        display = ":" + os.read(read, 16).decode().strip()
        bus = self.spawn(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                         stdout=subprocess.PIPE)
        self.env = {**os.environ, "DISPLAY": display, "ACCESSIBILITY_ENABLED": "1",
                    "DBUS_SESSION_BUS_ADDRESS": bus.stdout.readline().decode().strip(),
                    "SPEECHD_CMD": str(self.dir / "none"),  # no speech-dispatcher
                    "SPEECHD_ADDRESS": f"unix_socket:{self.dir / 'speechd.sock'}"}
        self.spawn(["/usr/libexec/at-spi-bus-launcher", "--launch-immediately"])
        time.sleep(1)
        for prop in ("IsEnabled", "ScreenReaderEnabled"):
            subprocess.run(["gdbus", "call", "--session", "--dest", "org.a11y.Bus",
                            "--object-path", "/org/a11y/bus", "--method",
                            "org.freedesktop.DBus.Properties.Set", "org.a11y.Status", prop,
                            "<true>"], env=self.env, check=True, capture_output=True)
        prefs = self.dir / "prefs"
        prefs.mkdir()
        (prefs / "user-settings.conf").write_text(json.dumps({
            "general": SETTINGS, "profiles": {"default": {"profile": ["Default", "default"]}},
            "pronunciations": {}, "keybindings": {}}))
        (prefs / "orca-customizations.py").write_text(CUSTOM.format(log=str(self.log)))
        self.spawn(["orca", "-u", str(prefs)] + (["--debug-file", debug] if debug else []))
        end = time.time() + 60
        while not any("Screen reader on" in said for said in self.lines()):
            if time.time() > end:
                raise RuntimeError(f"Orca did not start (nothing said in {self.log})")
            time.sleep(0.3)
        return self.env

    def spawn(self, cmd: list[str], **kw) -> subprocess.Popen:
        kw.setdefault("stdout", subprocess.DEVNULL)
        self.procs.append(subprocess.Popen(cmd, env=getattr(self, "env", None),
                                           stderr=subprocess.DEVNULL, **kw))
        return self.procs[-1]

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()

    def lines(self) -> list[str]:
        """The utterances Orca logged since the last call."""
        if not self.log.exists():
            return []
        with self.log.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        data = data[:data.rfind(b"\n") + 1]  # whole lines only
        self.offset += len(data)
        return [m.group(1) for m in map(SAID.search, data.decode(errors="replace").splitlines())
                if m]

    def said(self, wait_s: float | None = None) -> list[str]:
        """Everything Orca says from now until it has been quiet for `quiet_s` seconds."""
        out, last = [], time.time()
        while time.time() - last < (wait_s or self.quiet_s):
            time.sleep(0.3)
            new = self.lines()
            if new:
                out += new
                last = time.time()
        return out

    def key(self, *keys: str) -> list[str]:
        """Press keys as X events (to the focused window, then Orca hears them); what it said."""
        subprocess.run(["xdotool", "key", "--delay", "150", *keys], env=self.env, check=True)
        return self.said()


def browse_mode(desk: Desktop) -> list[str]:
    """Orca+A (Insert+A, the desktop layout) toggles browse and focus mode, and says which."""
    out: list[str] = []
    for _ in range(3):
        said = desk.key("Insert+a")
        out += said
        if "Browse mode" in said:
            break
    return out


def read_step(desk: Desktop, title: str, slide: bool, lines: int) -> list[tuple[str, list]]:
    """(key, what Orca said) for each key a user presses to read the step."""
    out = [("Orca+A", browse_mode(desk))]
    if slide:
        out.append(("Control+Home", desk.key("Control+Home")))
    else:
        for _ in range(60):  # H: next heading, until the step's own
            said = desk.key("h")
            out.append(("H", said))
            if any(title in s for s in said):
                break
    said = desk.key("KP_Add")  # Say All: from here to the end (logged at once)
    # up to the next heading: its text, then "heading level n" (not this step's own, nor the
    # "link" its anchor adds before saying the level again)
    end = next((i for i in range(1, len(said) - 1) if said[i + 1].startswith("heading level")
                and said[i] not in (title, "link") and not slide), len(said))
    out.append(("Say All", said[:end]))
    for _ in range(lines):
        said = desk.key("Down")
        out.append(("Down", said))
        if not slide and any("heading level" in s and title not in s for s in said):
            break  # the next step's (or section's) heading
    return out


def tidy(said: list[str]) -> list[str]:
    """Runs of utterances of one or two characters (an equation's symbols) joined by " | "."""
    out, run = [], False
    for s in said:
        short = len(s.strip()) <= 2
        if short and run:
            out[-1] += f" | {s.strip()}"
        else:
            out.append(s.strip() if short else s)
        run = short
    return out


def main(argv=None) -> int:
    ap = step_parser(__doc__)
    ap.add_argument("--lines", type=int, default=0, help="then at most this many ↓")
    ap.add_argument("--then", default="", help="xdotool keys pressed after reading a step")
    ap.add_argument("--log", default=None, help="Orca's debug log (all of it) to this file")
    args = ap.parse_args(argv)
    missing = [n for n in NEEDS if not shutil.which(n) and not Path(n).exists()]
    if missing:
        sys.exit(f"missing: {', '.join(missing)} (apt-get install -y --no-install-recommends "
                 "orca xvfb xdotool at-spi2-core)")
    from playwright.sync_api import sync_playwright

    from ui import stages
    from vit_core import default_model_name, load_model

    config = load_model(args.model or default_model_name()).config
    extra = f"&model={args.model}" if args.model else ""
    w, h = size(args.size)
    desk = Desktop()
    try:
        env = desk.start(args.log)
        with serve() as server, sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path="/usr/bin/chromium", headless=False, env=env,
                args=CHROMIUM_ARGS + ["--force-renderer-accessibility", "--window-position=0,0",
                                      f"--window-size={w},{h + 90}"])
            page = browser.new_context(viewport={"width": w, "height": h}).new_page()
            for where in args.steps:
                slug, k = where.split(":")
                title = dict(enumerate(stages.titles(slug, config), 1))[int(k)]
                mode = f"&presenter=1&step={k}" if args.presenter else ""
                desk.lines()
                page.goto(f"{server.url}/?page={slug}{mode}{extra}")
                wait_idle(page)
                page.wait_for_function(DRAWN_JS, timeout=300_000)
                subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--class",
                                "chromium", "windowfocus", "--sync"], env=env, check=False)
                print(f"\n# {slug} step {k} ({title}), {'slide' if args.presenter else 'page'}"
                      f", {args.size}\n## while the page loaded")
                print("\n".join(f"  {s}" for s in desk.said(6)))
                steps = read_step(desk, title, args.presenter, args.lines)
                steps += [(key, desk.key(key)) for key in args.then.split()]
                for key, said in steps:  # a long answer (Say All): an utterance a line
                    said = tidy(said)
                    print(f"[{key}] " + " | ".join(said) if len(said) <= 12
                          else f"[{key}]\n  " + "\n  ".join(said))
            browser.close()
    finally:
        desk.stop()
        shutil.rmtree(desk.dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
