"""Fetch pretrained ViTs before class: `python -m vit_core.fetch NAME [NAME ...]`.

    python -m vit_core.fetch --list                          # the curated list, with sizes
    python -m vit_core.fetch facebook/deit-tiny-patch16-224   # one model (hf: prefix optional)
    python -m vit_core.fetch --all                            # every model on the list

Each fetch shows a progress bar, then where the files went and how big they are. Afterwards the
model loads with no network (`load_model("hf:ORG/NAME")`, or the app's model picker). Fetching
again downloads nothing. The files live in the Hugging Face cache (HF_HOME, default
~/.cache/huggingface), shared with every other tool that uses it.
"""

from __future__ import annotations

import argparse
import sys

from .io import hub


def _size(folder) -> int:
    return sum(p.resolve().stat().st_size for p in folder.iterdir() if p.is_file())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vit_core.fetch", description=__doc__.split(
        "\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="Hub names, e.g. facebook/deit-tiny-patch16-224")
    ap.add_argument("--list", action="store_true", help="show the curated list and stop")
    ap.add_argument("--all", action="store_true", help="fetch every model on the curated list")
    args = ap.parse_args(argv)
    if args.list or not (args.names or args.all):
        for rid, c in hub.CURATED.items():
            print(f"{rid:50s} {c.params_m:5.1f} M params  ≈{c.size_mb:4.0f} MB  "
                  f"[{hub.status(rid)}]\n{'':50s} {c.why}")
        return 0
    failed = 0
    for name in list(hub.CURATED) if args.all else args.names:
        try:
            rid = hub.repo_id(name)
            bar = _Bar(rid)
            folder = hub.fetch(rid, progress=bar)
            bar.close()
        except hub.FetchError as e:
            print(f"\n{e}", file=sys.stderr)
            failed += 1
            continue
        print(f"{rid}: {_size(folder) / 1e6:.1f} MB in {folder}\n"
              f"  loads offline as hf:{rid}")
    return 1 if failed else 0


class _Bar:
    """A one-line progress bar on stderr: MB done of total, and the time left."""

    def __init__(self, rid: str):
        self.rid, self.shown = rid, False

    def __call__(self, p: hub.Progress) -> None:
        left = f", {p.left_s:.0f} s left" if p.left_s is not None else ""
        width = 30
        filled = int(width * p.done / p.total) if p.total else width
        print(f"\r{self.rid}: [{'#' * filled}{'.' * (width - filled)}] "
              f"{p.done / 1e6:.1f} / {p.total / 1e6:.1f} MB{left}   ", end="", file=sys.stderr)
        self.shown = True

    def close(self) -> None:
        if self.shown:
            print(file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
