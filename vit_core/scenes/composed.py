"""Which of the four things placed in a composed scene (world.Composition: shape, colour,
position, background) a caption names. Facts only, from the words a model wrote; the app words
them (ui/selection/scene_notes.py)."""

from __future__ import annotations

from .world import BACKGROUNDS, CLASS_NAMES, COLOURS

PARTS = ("shape", "colour", "position", "background")
SIDES = ("left", "right", "top", "bottom")  # the words that say an edge position


def caption_parts(comp, words: list[str]) -> dict[str, tuple[bool, str | None]]:
    """For each part: (named right?, the caption's word for it, or None if it has none).

    The position's word is an edge ("left", ...): the world's captions leave out the centre,
    so a caption with no edge word is right for a shape placed in the centre.
    """
    words = [w for w in words if not w.startswith("[")]

    def first(choices):
        return next((w for w in words if w in choices), None)

    said = {"shape": first(CLASS_NAMES), "colour": first(COLOURS),
            "background": first(BACKGROUNDS), "position": first(SIDES)}
    placed = {"shape": comp.shape, "colour": comp.colour, "background": comp.background,
              "position": None if comp.position == "centre" else comp.position}
    return {part: (said[part] == placed[part], said[part]) for part in PARTS}
