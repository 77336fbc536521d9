"""Write vit_core/imagenet_classes.txt: the 1000 ImageNet-1k class names, one per line (dev-only).

The names come from timm's bundled ImageNet metadata, which the project does not depend on, so
this runs in the separate fixture venv (see tests/fixtures/README.md), from the repository root:

    /work/fixture-venv/bin/python tools/make_imagenet_names.py

Each line is the first synonym of timm's description ("tench, Tinca tinca" -> "tench"). Four
classes share a first synonym; they get the hand-picked names in SAME_NAME so every line is unique.
"""

from __future__ import annotations

from pathlib import Path

from timm.data import ImageNetInfo

OUT = Path(__file__).resolve().parent.parent / "vit_core" / "imagenet_classes.txt"
# index -> name, for the classes whose first synonym is not unique
SAME_NAME = {134: "crane (bird)", 517: "crane (machine)", 638: "maillot (tights)",
             639: "tank suit"}


def main() -> None:
    names = [d.split(", ")[0] for d in ImageNetInfo().label_descriptions()]
    for i, name in SAME_NAME.items():
        names[i] = name
    assert len(names) == 1000 and len(set(names)) == 1000, "names must be 1000 and unique"
    OUT.write_text("\n".join(names) + "\n", encoding="utf-8")
    print(f"wrote {len(names)} names to {OUT}")


if __name__ == "__main__":
    main()
