"""The step "A caption's words" (captioners): click a word of the caption to see its map; grey
the k patches that map ranks highest and the caption is written again from that image, its
changed words marked, the word's probability before and after.

The numbers come from vit_core.explain (targets.word_targets, attribution through
ui/stages/why/compute.maps: on a big model a progress bar until they are there, jobs.ready;
why_word_facts.grey_top), cached in ui/stages/why/word_compute.py."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from PIL import Image, ImageDraw

from ui.drawing import figures
from ui.drawing.figures.parts import panels
from ui.drawing.numbers import pct
from ui.lesson import deck
from ui.lesson.deck import Choice, Question
from ui.selection import session
from ui.stages.why import jobs, word_compute
from ui.stages.why.keys import WHY_WORD, WHY_WORD_FIGURE, WHY_WORD_K, WHY_WORD_METHOD
from ui.stages.why.maps import NAMES
from vit_core.explain.attribution import METHODS

TITLE = "A caption's words"
MARK = "✱"  # after a word of the new caption that is not the old caption's word at its place
SCALE = "share of the map's largest |value|"  # the colour bar's title; its ends say for / against
GREY = (128, 128, 128)  # the grey baseline's pixels (0.5), as the picture shows them


def applies(config) -> bool:
    return bool(config.has_text)


# ---------------------------------------------------------------- facts
def _chosen(key: str, valid, default):
    """The widget's value from the last run, or `default` when it has none this image allows
    (set before the widget is drawn, so the widget shows it)."""
    if st.session_state.get(key) not in valid:
        st.session_state[key] = default
    return st.session_state[key]


def facts(x: deck.View) -> dict | None:
    mask = session.chosen_mask()
    found = word_compute.words(x.inp, x.name, mask)
    if not found:
        return None
    place = _chosen(WHY_WORD, range(1, len(found) + 1), 1)
    method = _chosen(WHY_WORD_METHOD, METHODS, word_compute.METHOD)
    most = max(1, x.c.num_patches // 2)  # the slider's end (`choices`)
    k = _chosen(WHY_WORD_K, range(1, most + 1), min(word_compute.K, most))
    target = found[place - 1]
    values = jobs.ready("maps", x.inp, x.name, mask, target)[method].patches.double().numpy()
    g = word_compute.greyed(x.inp, x.name, mask, target, method, k)
    peak = float(np.abs(values).max())
    top = int(np.argmax(values))
    return {"word": target.label, "place": place, "labels": [t.label for t in found],
            "method": method, "k": k, "most": most, "grid": x.c.grid, "P": x.c.patch_size,
            "map": values / peak if peak > 0 else values, "strongest": divmod(top, x.c.grid),
            "chosen": g.chosen, "before": " ".join(g.before), "after": " ".join(g.after),
            "after_words": g.after, "changed": g.changed, "missing": g.missing,
            "n_changed": g.n_changed, "places": g.places, "kept": g.kept,
            "elsewhere": g.elsewhere, "p_before": g.p_before, "p_after": g.p_after}


# ---------------------------------------------------------------- the figure
def greyed_picture(crop: Image.Image, chosen, patch_size: int) -> Image.Image:
    """The crop with the `chosen` patches painted grey (what the model was given)."""
    out = crop.convert("RGB").copy()
    draw = ImageDraw.Draw(out)
    g = out.size[0] // patch_size
    for p in chosen:
        r, c = divmod(int(p), g)
        draw.rectangle([c * patch_size, r * patch_size, (c + 1) * patch_size - 1,
                        (r + 1) * patch_size - 1], fill=GREY)
    return out


def word_figure(crop: Image.Image, f: dict) -> go.Figure:
    """Two panels: the word's map over the image (the top k framed), and the image with those k
    patches grey, each numbered by its rank."""
    g, P, chosen = f["grid"], f["P"], f["chosen"]
    left = figures.map_over_image(crop, f["map"].reshape(g, g), "", value_name=SCALE,
                                  colorscale="RdBu_r", zmin=-1, zmax=1, opacity=0.6)
    left.update_traces(colorbar=dict(tickvals=[-1, 0, 1], ticktext=[
        "−1: against", "0", f"1: for “{f['word']}”"]), selector=dict(type="heatmap"))
    frames = [dict(type="rect", x0=c * P - 0.5, x1=(c + 1) * P - 0.5, y0=r * P - 0.5,
                   y1=(r + 1) * P - 0.5, line=dict(color="#ffd60a", width=3))
              for r, c in (divmod(p, g) for p in chosen)]
    left.update_layout(shapes=frames)
    ranks = [""] * (g * g)
    for i, p in enumerate(chosen):
        ranks[p] = str(i + 1)
    right = figures.labelled_patches(greyed_picture(crop, chosen, P), P, "", labels=ranks,
                                     outlined=chosen)
    name, w = NAMES[f["method"]], f["word"]
    fate = "still there" if f["kept"] else "gone from its place"
    return panels([left, right], [f"{name}: its top {f['k']} framed",
                                  f"Top {f['k']} grey: P({w}) {pct(f['p_before'])} → "
                                  f"{pct(f['p_after'])}, “{w}” {fate}"],
                  own_colorbars=True, spacing=0.12,
                  more=dict(title=dict(text=f"Which patches made “{w}”, word {f['place']} of "
                                            f"the caption?"),
                            height=380, margin=dict(l=0, r=0, t=70, b=0)))


def quoted(text: str) -> str:
    """A caption in quotes, or what an empty one means."""
    return f"“{text}”" if text else "no word at all (the model ended the caption at once)"


def marked(f: dict) -> str:
    """The new caption, each changed word in bold with MARK after it; the places it lost."""
    if not f["after_words"]:
        return quoted("")
    said = " ".join(f"**{w}**{MARK}" if c else w
                    for w, c in zip(f["after_words"], f["changed"], strict=True))
    lost = f["missing"]
    return f"“{said}”" + (f" (and {lost} word{'s' if lost != 1 else ''} fewer)" if lost else "")


def choices(x: deck.View) -> None:
    """The word, the map and k, above the figure (also while a word's maps are computed, so
    that the choice stays: facts set their values before they are drawn)."""
    labels = [t.label for t in word_compute.words(x.inp, x.name, session.chosen_mask())]
    if not labels:
        return
    st.pills("The caption: click a word to see its map", list(range(1, len(labels) + 1)),
             format_func=lambda i: labels[i - 1], key=WHY_WORD)
    left, right = st.columns(2, vertical_alignment="bottom")
    left.selectbox("Map", list(METHODS), format_func=NAMES.get, key=WHY_WORD_METHOD)
    right.slider("Grey its top k patches", 1, max(1, x.c.num_patches // 2), key=WHY_WORD_K)


def figure(x: deck.View, f: dict | None) -> None:
    if f is None:
        st.markdown("The model wrote no word for this image: there is no word to trace.")
        return
    deck.chart(word_figure(x.prep.crop, f), key=WHY_WORD_FIGURE)
    st.markdown(f"Written again from the greyed image: {marked(f)} — {f['n_changed']} of "
                f"{f['places']} places changed ({MARK} and bold: not the word written there "
                f"before).")


# ---------------------------------------------------------------- words
def _fate(f: dict) -> str:
    w, i = f["word"], f["place"]
    if f["kept"]:
        return f"“{w}” is still word {i}"
    if f["elsewhere"]:
        return f"“{w}” is no longer word {i} (it is now word {f['elsewhere']})"
    return f"“{w}” is gone from the caption"


def _moved(f: dict) -> str:
    a, b = pct(f["p_before"]), pct(f["p_after"])
    said = f"fed the caption's words before it, P(“{f['word']}”)"
    if a == b:
        return f"{said} stayed at {a}"
    return f"{said} {'fell' if f['p_after'] < f['p_before'] else 'rose'} from {a} to {b}"


def words(x: deck.View, f: dict | None) -> str | None:
    if f is None:
        return None
    lead = f"Greying the {f['k']} patches {NAMES[f['method']]} ranks highest for “{f['word']}”"
    if not f["n_changed"]:
        return (f"{lead} left the caption as it was: “{f['before']}”; {_moved(f)}.")
    return (f"{lead} and writing the caption again: “{f['before']}” became {quoted(f['after'])}, "
            f"{f['n_changed']} of {f['places']} places changed (compared word by word at the "
            f"same place). {_fate(f)}; {_moved(f)}.")


def describe(x: deck.View, f: dict | None) -> str | None:
    if f is None:
        return None
    r, c = f["strongest"]
    changed = [w for w, ch in zip(f["after_words"], f["changed"], strict=True) if ch]
    return (f"Left: the {NAMES[f['method']]} map of the word “{f['word']}” painted over the "
            f"image, one value per patch of a {f['grid']} × {f['grid']} grid, as a share of "
            f"the map's largest |value| from −1 (blue, against the word) to 1 (red, for it); "
            f"its strongest patch is at row {r}, column {c}; its top {f['k']} patches are "
            f"framed. Right: the image with those {f['k']} patches grey, numbered 1 to "
            f"{f['k']} from the highest; P(“{f['word']}”) {pct(f['p_before'])} before, "
            f"{pct(f['p_after'])} with them grey. Written again from it, the caption reads "
            f"{quoted(f['after'])}" + (f"; the words not at their old place: {', '.join(changed)}."
                                 if changed else "."))


def question(x: deck.View, f: dict | None) -> Question | None:
    if f is None:
        return None
    w, i = f["word"], f["place"]
    said = (f"the caption reads {quoted(f['after'])} ({f['n_changed']} of {f['places']} places "
            f"changed); P(“{w}”) went from {pct(f['p_before'])} to {pct(f['p_after'])}.")
    return Question(
        f"Grey the {f['k']} patches {NAMES[f['method']]} ranks highest for “{w}”: will the "
        f"caption written again still have “{w}” as word {i}?",
        ("Yes: " if f["kept"] else "No: ") + said,
        Choice((f"Yes, “{w}” stays word {i}", "No"), right=0 if f["kept"] else 1))


ASKS = ("word", "place", "k", "method", "kept", "after", "n_changed", "places", "p_before",
        "p_after")
