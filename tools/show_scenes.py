"""Write a contact sheet of synthetic scenes with their captions to a PNG.

Usage: python tools/show_scenes.py OUT.png [--n 24] [--seed 0] [--cols 6] [--masks]
--masks tints each object's mask and outlines it, to check that masks line up with the pixels.
"""

import argparse
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere

from vit_core.scenes.world import POSITION_PHRASES, SIZE, Scene, heldout_seeds, make_scene  # noqa: E402


def overlay_mask(scene: Scene) -> Image.Image:
    """The scene with its mask tinted magenta and outlined in white."""
    m = Image.fromarray((scene.mask > 0).astype(np.uint8) * 255)
    tinted = Image.blend(scene.image, Image.new("RGB", scene.image.size, (255, 0, 255)), 0.45)
    out = Image.composite(tinted, scene.image, m)
    out.paste((255, 255, 255), (0, 0, SIZE, SIZE), m.filter(ImageFilter.FIND_EDGES))
    return out


def render_grid(n: int = 24, seed: int = 0, cols: int = 6, masks: bool = False) -> Image.Image:
    """A contact sheet of `n` held-out scenes, each captioned on two lines below it."""
    font = ImageFont.load_default(size=13)
    rows, cell_w, cell_h = -(-n // cols), SIZE + 6, SIZE + 38
    sheet = Image.new("RGB", (cols * cell_w, rows * cell_h), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    for i, s in enumerate(heldout_seeds(n, seed)):
        scene = make_scene(s)
        x, y = (i % cols) * cell_w, (i // cols) * cell_h
        sheet.paste(overlay_mask(scene) if masks else scene.image, (x, y))
        where = POSITION_PHRASES[scene.position]
        lines = (scene.caption[: len(scene.caption) - len(where)].strip(), where or "(centre)")
        for k, line in enumerate(lines):
            draw.text((x + 3, y + SIZE + 2 + 16 * k), line, fill=(0, 0, 0), font=font)
    return sheet


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="where to write the PNG")
    parser.add_argument("--n", type=int, default=24, help="how many scenes (default 24)")
    parser.add_argument("--seed", type=int, default=0, help="which block of held-out seeds")
    parser.add_argument("--cols", type=int, default=6, help="scenes per row")
    parser.add_argument("--masks", action="store_true", help="tint each object's mask")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    render_grid(args.n, args.seed, args.cols, args.masks).save(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
