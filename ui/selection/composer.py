""""Compose a scene": the sidebar's third way to choose the image, after a sample and an upload.

The scene is drawn by the generator the bundled models were trained on
(`vit_core.scenes.world.compose`), and only with what that world draws: a colour that would
blend into the background is not offered, sizes and rotations stay in the world's ranges. Any
change to a control makes the composed scene the image; choosing a sample scene or switching the
toggle off goes back to the sample. A shared link carries the scene as `?scene=CODE`
(`world.Composition.code`).
"""

from __future__ import annotations

import re

import streamlit as st

from ui import keys
from ui.selection import inputs
from vit_core.scenes import world

DEFAULT = world.Composition("ball", "red", "grass", "centre", 110, 0, 0, 0)
FIELDS = {  # Composition field -> its widget's key
    "shape": keys.COMPOSE_SHAPE, "colour": keys.COMPOSE_COLOUR,
    "background": keys.COMPOSE_BACKGROUND, "position": keys.COMPOSE_POSITION,
    "size": keys.COMPOSE_SIZE, "rotation": keys.COMPOSE_ROTATION,
    "distractors": keys.COMPOSE_DISTRACTORS, "variation": keys.COMPOSE_VARIATION}
# kept across st.switch_page (controls.SIDEBAR)
WIDGETS = (keys.COMPOSE_OPEN, keys.COMPOSE, *FIELDS.values())


def load_link(code: str | None) -> None:
    """A link's ?scene=CODE fills the composer and makes it the image (before widgets exist);
    a code that names no scene of this world is said in one sentence."""
    if not code:
        return
    shown = re.sub(r"[^\w-]", "", code, flags=re.ASCII)[:80]  # the notice renders markdown
    try:
        if shown != code:
            raise ValueError("it has characters no scene code has")
        c = world.Composition.parse(code)
    except ValueError as e:
        st.session_state[keys.SCENE_NOTICE] = (f"This link's scene '{shown}' cannot be drawn "
                                               f"({e}); showing a sample scene instead.")
        return
    for field, key in FIELDS.items():
        st.session_state[key] = getattr(c, field)
    st.session_state[keys.COMPOSE] = True
    st.session_state[keys.COMPOSE_OPEN] = True  # the scene's controls in view


def stop() -> None:
    """Back to the sample scene (its picker changed)."""
    st.session_state[keys.COMPOSE] = False


def _use() -> None:
    """on_change of every control: the scene being composed is the image."""
    st.session_state[keys.COMPOSE] = True


def _fit() -> str | None:
    """Before the widgets are drawn: keep the choices inside what the world draws (another
    background or position may rule the colour or the size out). Returns what had to change,
    in a sentence, or None."""
    ss = st.session_state
    for field, key in FIELDS.items():
        # re-stored even when unchanged: a slider whose range changes is a new widget, and
        # Streamlit would otherwise start it at its minimum; and while the expander is closed
        # its widgets are not drawn, so Streamlit would otherwise forget their values
        ss[key] = ss.get(key, getattr(DEFAULT, field))
    ss[keys.COMPOSE] = bool(ss.get(keys.COMPOSE))
    changed = []
    background, position = ss[keys.COMPOSE_BACKGROUND], ss[keys.COMPOSE_POSITION]
    if ss[keys.COMPOSE_COLOUR] in world.CLASHES[background]:
        old = ss[keys.COMPOSE_COLOUR]
        ss[keys.COMPOSE_COLOUR] = _colours(background)[0]
        changed.append(f"{old} is never drawn on the {background}, so the colour is now "
                       f"{ss[keys.COMPOSE_COLOUR]}.")
    for key, (lo, hi), unit, where in (
            (keys.COMPOSE_SIZE, world.size_range(position), " px", _where(position)),
            (keys.COMPOSE_ROTATION, world.rotation_range(ss[keys.COMPOSE_SHAPE]), "°",
             f"for a {ss[keys.COMPOSE_SHAPE]}")):
        if not lo <= ss[key] <= hi:
            old = ss[key]
            ss[key] = min(max(old, lo), hi)
            changed.append(f"{old}{unit} is not drawn {where}, so it is now {ss[key]}{unit}.")
    return " ".join(changed) or None


def _where(position: str) -> str:
    return world.POSITION_PHRASES[position] or "in the centre"


def _colours(background: str) -> list[str]:
    return [c for c in world.COLOURS if c not in world.CLASHES[background]]


def composition() -> world.Composition:
    """What the controls show now (valid after _fit)."""
    return world.Composition(**{f: st.session_state[k] for f, k in FIELDS.items()})


def draw(sb) -> inputs.Input | None:
    """The 'Compose a scene' expander in the sidebar; the composed scene's Input when it is the
    image, else None."""
    ss = st.session_state
    if ss.get(keys.SCENE_NOTICE):
        sb.warning(ss.pop(keys.SCENE_NOTICE))
    fitted = _fit()
    c = composition()
    # Drawn only while open (each element costs the browser a redraw of the page in every run:
    # ~0.3 s of a new photo's first view went to these controls and the share expander's).
    box = sb.expander("Compose a scene", key=keys.COMPOSE_OPEN, on_change="rerun")
    if box.open:
        with box:
            _controls(c, fitted)
    if not ss[keys.COMPOSE]:
        ss.pop(keys.SCENE, None)
        return None
    ss[keys.SCENE] = c.code
    return inputs.make_input(f"composed: {c.spec.caption}", inputs.composed_bytes(c.code))


def _controls(c: world.Composition, fitted: str | None) -> None:
    """The expander's contents: the toggle, a preview and one control per Composition field."""
    st.toggle("Use this scene", key=keys.COMPOSE,
              help="Changing any control below also makes it the image; choosing a "
                   "sample scene goes back to the samples.")
    preview, words = st.columns(2, vertical_alignment="center")
    preview.image(inputs.composed_bytes(c.code), width=112, alt=f"The scene: {c.spec.caption}")
    words.caption(c.spec.caption)
    if fitted:
        st.caption(fitted)
    left, right = st.columns(2)
    left.selectbox("Shape", world.CLASS_NAMES, key=keys.COMPOSE_SHAPE, on_change=_use)
    right.selectbox("Colour", _colours(c.background), key=keys.COMPOSE_COLOUR,
                    on_change=_use)
    left.selectbox("Background", world.BACKGROUNDS, key=keys.COMPOSE_BACKGROUND,
                   on_change=_use)
    right.selectbox("Position", world.POSITIONS, key=keys.COMPOSE_POSITION, on_change=_use)
    st.caption(f"Not offered on the {c.background}: {' and '.join(world.CLASHES[c.background])}"
               f" — the world never draws a colour on a background it would blend into.")
    lo, hi = world.size_range(c.position)
    st.slider(f"Size (px across; {lo}–{hi} {_where(c.position)})", lo, hi,
              key=keys.COMPOSE_SIZE, on_change=_use,
              help="The sizes the world draws: {}–{} px in the centre, {}–{} px in the "
                   "edge zones.".format(*world.size_range("centre"), *world.size_range("left")))
    rlo, rhi = world.rotation_range(c.shape)
    st.slider("Rotation (° clockwise" + ("; hearts only tilt)" if c.shape == "heart" else ")"),
              rlo, rhi, key=keys.COMPOSE_ROTATION, on_change=_use,
              help=f"Hearts only tilt (±{world.rotation_range('heart')[1]}°) in this world, "
                   f"so that they still read as hearts; every other shape turns all the way.")
    st.slider("Distractors (pebbles, leaves, twigs)", 0, world.MAX_DISTRACTORS,
              key=keys.COMPOSE_DISTRACTORS, on_change=_use)
    st.number_input("Variation", 0, world.MAX_VARIATION, step=1,
                    key=keys.COMPOSE_VARIATION, on_change=_use,
                    help="Picks what a seed would: the texture's crop, the lighting, the "
                         "colour's shade and where the distractors lie.")
