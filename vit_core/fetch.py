"""Fetch pretrained ViTs before class: `.venv/bin/python -m vit_core.fetch NAME [NAME ...]`.

    .venv/bin/python -m vit_core.fetch --list                         # the curated list, sizes
    .venv/bin/python -m vit_core.fetch facebook/deit-tiny-patch16-224  # one (hf: prefix optional)
    .venv/bin/python -m vit_core.fetch --all                           # every model on the list

(`.venv/bin/python` is the project's venv; `python` works too once the venv is activated.)
Each fetch shows huggingface_hub's progress bars, then where the files went and how big they are.
Afterwards the model loads with no network (`load_model("hf:ORG/NAME")`, or the app's model
picker). Fetching again downloads nothing. The files live in the Hugging Face cache (HF_HOME,
default ~/.cache/huggingface), shared with every other tool that uses it.
"""

from __future__ import annotations

import argparse
import sys

from .io import hub


def _size(folder) -> int:
    return sum(p.resolve().stat().st_size for p in folder.iterdir() if p.is_file())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=hub.FETCH_COMMAND, description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
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
            folder = hub.fetch(rid)  # huggingface_hub draws a progress bar per file
        except hub.FetchError as e:
            print(e, file=sys.stderr)
            failed += 1
            continue
        print(f"{rid}: {_size(folder) / 1e6:.1f} MB in {folder}\n"
              f"  loads offline as hf:{rid}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
