"""Presenter mode's steps: each stage is shown one step at a time instead of one long scroll.

A page wraps each of its sections in `if steps.show(slug, k):`. Outside presenter mode every
section shows (the normal pages are unchanged); in presenter mode only the current step's.
The header (ui/presenter.py) says "Stage 4/10 · step 2/5" and the step's title; Next / Previous
(and the clicker's → / PageDown, ← / PageUp) move one step, and past the last step to the next
stage. The current step lives in the session (keys.PRESENTER_STEP, for the stage in
keys.PRESENTER_AT) and in the link (?step=2, counted from 1).
"""

from __future__ import annotations

import streamlit as st

from . import keys

# slug -> the titles of its steps, in page order. A stage whose content differs by model family
# (logits: class scores, a caption, or a headless encoder's vectors) has one list per family.
STEPS: dict[str, tuple[str, ...]] = {
    "overview": ("The whole pass",),
    "patches": ("The image, cut into patches", "One patch as numbers",
                "What if the patches were another size?"),
    "embeddings": ("One patch becomes a vector", "What W_E looks for; position embeddings",
                   "Every position's similarity map", "The sum that enters block 0"),
    "qkv": ("LayerNorm of one token", "Q, K and V, and one attention score by hand"),
    "attention": ("Scores and the softmax pattern", "Where a patch looks, and who looks at it",
                  "Every head's CLS attention", "Attention rollout: all layers together",
                  "Head summaries across depth"),
    "masks": ("Three masks", "The trained attention, live", "A classifier under a causal mask"),
    "mlp": ("One token through the MLP", "The residual stream, block by block"),
    "logits": ("From the last layer to an answer", "The logit lens: how the answer forms"),
    "shapes": ("Every step and its shape", "What each step costs", "Parameters by component",
               "Attention cost against patch size"),
    "segmentation": ("Patch tokens back on the grid",),
    "experiments": ("Choose a change", "Before and after"),
}
CAPTIONER_LOGITS = ("Writing the caption, word by word", "Score your own caption")
HEADLESS_LOGITS = ("The final token vector", "Which patches point like it")


def titles(slug: str, config=None) -> tuple[str, ...]:
    """The step titles of stage `slug` for a model with this config (the overview if unknown)."""
    if slug == "logits" and config is not None and not config.num_classes:
        return CAPTIONER_LOGITS if config.has_text else HEADLESS_LOGITS
    if slug == "attention" and config is not None and not config.num_prefix_tokens:
        return tuple(t for t in STEPS[slug] if t != "Every head's CLS attention")  # no CLS
    if slug == "attention" and config is not None and config.dist_token:
        return tuple(t.replace("CLS attention", "CLS and DIST attention") for t in STEPS[slug])
    return STEPS.get(slug, STEPS["overview"])


def count(slug: str, config=None) -> int:
    return len(titles(slug, config))


def presenting() -> bool:
    return bool(st.session_state.get(keys.PRESENTER))


def sync(slug: str, config) -> int:
    """Call once per run before anything reads the step: the step of `slug`, clamped (a stage
    reached another way than Next / Previous starts at its first step)."""
    ss = st.session_state
    if ss.get(keys.PRESENTER_GOTO) not in (None, slug):  # Next / Previous is leaving this
        return current()  # stage: the header switches page before anything is drawn
    if ss.get(keys.PRESENTER_AT) != slug:
        ss[keys.PRESENTER_AT], ss[keys.PRESENTER_STEP] = slug, 0
    k = min(max(int(ss.get(keys.PRESENTER_STEP, 0)), 0), count(slug, config) - 1)
    ss[keys.PRESENTER_STEP] = k
    return k


def current() -> int:
    return int(st.session_state.get(keys.PRESENTER_STEP, 0))


def show(slug: str, k: int) -> bool:
    """Draw section k of stage `slug`? Always outside presenter mode; in it, only the current
    step's section."""
    if not presenting():
        return True
    return st.session_state.get(keys.PRESENTER_AT) == slug and current() == k


def first() -> bool:
    """Is this the first step of its stage (or not presenting)? Pages show their introduction
    there and nowhere else in presenter mode."""
    return not presenting() or current() == 0


def move(slugs: list[str], slug: str, config, delta: int) -> str | None:
    """on_click of Next (+1) / Previous (-1): the next step of this stage; past its end the
    stage to switch to (its first step, or the last step of the stage before), else None."""
    ss = st.session_state
    k = current() + delta
    if 0 <= k < count(slug, config):
        ss[keys.PRESENTER_STEP] = k
        return None
    i = slugs.index(slug) + delta
    if not 0 <= i < len(slugs):
        return None
    target = slugs[i]
    ss[keys.PRESENTER_AT] = target
    ss[keys.PRESENTER_STEP] = 0 if delta > 0 else count(target, config) - 1
    ss[keys.PRESENTER_GOTO] = target
    return target
