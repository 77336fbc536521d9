"""The app's favicon, drawn here: a 4x4 patch grid (a material-icon favicon would be fetched from
Google's servers, and the app must load nothing from outside the machine)."""

from functools import cache

from PIL import Image, ImageDraw


@cache
def favicon() -> Image.Image:
    img = Image.new("RGB", (32, 32), "white")
    draw = ImageDraw.Draw(img)
    colours = ["#3b6fd8", "#e0543c", "#2e9e5b", "#f2b634"]
    for r in range(4):
        for c in range(4):
            draw.rectangle([c * 8 + 1, r * 8 + 1, c * 8 + 6, r * 8 + 6],
                           fill=colours[(r + c) % 4])
    return img
