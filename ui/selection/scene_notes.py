"""What a model said about a scene the student composed, in one sentence: which of the four
things placed a caption names (vit_core.scenes.composed.caption_parts), or whether a
classifier's top class is the shape. Plain Python; no streamlit."""

from __future__ import annotations

from ui.drawing.numbers import percent
from vit_core.scenes.composed import PARTS, caption_parts
from vit_core.scenes.world import POSITION_PHRASES


def placed(comp) -> str:
    """'a red ball on the left on the grass' (the centre said as 'in the centre')."""
    return f"a {comp.colour} {comp.shape} {_where(comp.position)} on the {comp.background}"


def _where(position: str) -> str:
    return POSITION_PHRASES[position] or "in the centre"


def caption_note(comp, words: list[str]) -> str:
    """One sentence: what was placed, the caption, and which parts it names or misses."""
    text = " ".join(w for w in words if not w.startswith("["))
    parts = caption_parts(comp, words)
    named = [p for p in PARTS if parts[p][0]]
    missed = []
    for p in PARTS:
        right, said = parts[p]
        if right:
            continue
        truth = (f"you placed it {_where(comp.position)}" if p == "position"
                 else f"you chose {getattr(comp, p)}")
        if said is None:
            missed.append(f"the {p} (it names none; {truth})")
        else:
            say = f"“{POSITION_PHRASES[said]}”" if p == "position" else said
            missed.append(f"the {p} (it says {say}; {truth})")
    start = f"You placed {placed(comp)}; the caption says “{text}”, which "
    centre_ok = comp.position == "centre" and parts["position"][0]  # right by saying nothing
    if centre_ok:
        named.remove("position")
    if not missed and centre_ok:
        return start + ("names the shape, colour and background, and no edge: this world's "
                        "captions leave the centre unsaid.")
    if not missed:
        return start + "names all four: shape, colour, position and background."
    tail = " It rightly names no edge for the centre." if centre_ok else ""
    if not named:
        return start + "names none of them: it misses " + "; ".join(missed) + "." + tail
    return start + "names the " + _and(named) + " but misses " + "; ".join(missed) + "." + tail


def class_note(comp, class_names: list[str], probs: list[float]) -> str:
    """One sentence: what was placed, the top class, and whether it is the shape."""
    ranked = sorted(range(len(probs)), key=lambda k: -probs[k])
    top = ranked[0]
    start = (f"You placed {placed(comp)}; the top class is “{class_names[top]}” "
             f"({percent(probs[top])})")
    if comp.shape not in class_names:
        return (start + f". Its {len(class_names)} classes have no “{comp.shape}”, so it "
                f"cannot name the shape you placed.")
    k = class_names.index(comp.shape)
    if k == top:
        return start + ": the shape you placed."
    return (start + f", not the {comp.shape} you placed: “{comp.shape}” gets {percent(probs[k])}, "
            f"rank {ranked.index(k) + 1} of {len(class_names)}.")


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
