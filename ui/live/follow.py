"""What a following student takes from the teacher besides the stage and step: every choice
that decides what a step shows, declared once (FOLLOWED), each with its session-state (widget)
key, the stages where it matters, and how the teacher's value is fitted to the student's own
model: clamped into its range, a patch placed at the same part of the picture on the
student's grid, or skipped where it does not apply (a training step on a model kept at none,
an input size the model cannot read, a window wider than its grid).

The teacher's run writes what it has of them into the class's position (`collect`); a
following student's run applies them before any widget is drawn (`apply`): first those that
decide the model that runs (training step, input size, mask), then the rest, fitted to that
model. The rule of layer / head / patch holds for all: a setting the student changed since the
teacher's value was applied stays theirs until "Follow again" (ui/live/session.follow_afresh).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import vit_core
from ui import keys
from ui.lesson import share
from ui.live import classes
from ui.selection.session import model_name
from ui.serving import state, tour
from ui.stages import choices, common

SKIP = object()  # a fit's answer: this setting does not apply to the student's model


class Model:
    """The student's model as the session runs it now (read lazily, once per phase), and the
    teacher's patch grid (None from a class started before it was sent)."""

    def __init__(self, ss: MutableMapping, teacher_grid: int | None = None):
        self.ss, self.teacher_grid = ss, teacher_grid

    @functools.cached_property
    def name(self) -> str:
        """The name the session runs, at its training step and input size: the default model's
        before the sidebar has chosen one (a student who opened the class link) or when it
        cannot be loaded (the sidebar then says why and switches to it)."""
        try:
            name = model_name(self.ss)
            state.get_model(name)
            return name
        except (vit_core.CheckpointError, ValueError, OSError, KeyError):
            return vit_core.default_model_name()

    @functools.cached_property
    def config(self):
        return state.get_model(self.name).config

    @functools.cached_property
    def base(self) -> str:
        """The picker's model (no step, no size)."""
        return str(self.ss.get(keys.MODEL) or vit_core.default_model_name())

    @functools.cached_property
    def log(self):
        return state.training_log(self.base)

    @functools.cached_property
    def sizes(self) -> tuple[int, ...]:
        """The input sizes the sidebar offers (none for a model that cannot be loaded)."""
        try:
            return tuple(vit_core.input_sizes(state.get_model(self.base).config))
        except (vit_core.CheckpointError, ValueError, OSError, KeyError):
            return ()

    def run_mask(self) -> str:
        mask = self.ss.get(keys.MASK, "trained")
        return self.config.default_mask if mask in (None, "trained") else str(mask)


# ---------------------------------------------------------------- fits
def _below(limit: Callable[[Model], int]) -> Callable[[Any, Model], Any]:
    """An index 0 … limit - 1 (a layer, a head, a patch)."""
    return lambda v, m: min(max(int(v), 0), limit(m) - 1)


def _between(lo: float, hi: float, kind=int) -> Callable[[Any, Model], Any]:
    """A number within a widget's range (the same for every model)."""
    return lambda v, m: kind(min(max(kind(v), lo), hi))


def _one_of(choices: Callable[[Model], Any]) -> Callable[[Any, Model], Any]:
    """One of the choices, the nearest for a number (skipped when there are none)."""
    def fit(v, m):
        offered = list(choices(m))
        if v in offered:
            return v
        if not offered or not isinstance(v, int | float) or isinstance(v, bool):
            return SKIP
        return min(offered, key=lambda o: (abs(o - v), o))
    return fit


def _only(choices: Callable[[Model], Any]) -> Callable[[Any, Model], Any]:
    """One of the choices exactly, else skipped."""
    return lambda v, m: v if v in list(choices(m)) else SKIP


def _indices(limit: Callable[[Model], int], one_left: bool = False):
    """A list of indices: those below the limit (with `one_left`, one index at least is left
    out: the MAE keeps one patch visible)."""
    def fit(v, m):
        n = limit(m)
        found = [int(i) for i in v if 0 <= int(i) < n]
        return found[:n - 1] if one_left else found
    return fit


def _cell(p: int, grid: int, to: int) -> int:
    """The patch of a `to`×`to` grid under the centre of patch p of a `grid`×`grid` one."""
    r, c = divmod(int(p), grid)
    return int((r + 0.5) / grid * to) * to + int((c + 0.5) / grid * to)


def _place(v, m) -> int:
    """The patch at the same place of the student's grid as the teacher's (the centre stays
    the centre); by number, clamped, when the teacher's grid is not known."""
    G, g = m.teacher_grid, m.config.grid
    if not G or G == g or not 0 <= int(v) < G * G:
        return min(max(int(v), 0), m.config.num_patches - 1)
    return _cell(v, G, g)


def _area(v, m) -> list[int]:
    """The patches covering the same part of the picture as the teacher's: those whose centre
    lies in one of them, and the one under each of their centres (so none is lost on a coarser
    grid); by number when the teacher's grid is not known."""
    G, g = m.teacher_grid, m.config.grid
    if not G or G == g:
        return _indices(lambda m: m.config.num_patches)(v, m)
    chosen = {int(p) for p in v if 0 <= int(p) < G * G}
    inside = {p for p in range(g * g) if _cell(p, g, G) in chosen}
    return sorted(inside | {_cell(p, G, g) for p in chosen})


def _text(v, m) -> str:
    return str(v)


def _flag(v, m) -> bool:
    return bool(v)


def _train_step(v, m):
    return SKIP if m.log is None else _one_of(lambda m: m.log.steps)(int(v), m)


def _exp_mask(v, m):
    """A mask the Experiments stage offers this model (never the one it runs with)."""
    return v if v in choices.mask_options(m.config, m.run_mask()) else SKIP


def _captioner(m: Model):
    """The captioner the Masks stage draws live for this model."""
    names = tour.masks_page_models(m.name, state.get_model(m.name))[0]
    return state.get_model(names[0]).config


def _mae_patches(m: Model) -> int:
    name = choices.mae_for(m.name)
    return 1 if name is None else state.get_mae(name).encoder.config.num_patches


def _vocab(v, m) -> int:
    n = m.config.vocab_size if m.config.has_text else 0
    return min(max(int(v), 0), n) if n else int(v)


@dataclass(frozen=True)
class Setting:
    name: str  # its name in the class's position (Position.settings, or a field of it)
    key: str  # its session-state key (the widget's key)
    fit: Callable[[Any, Model], Any]  # the teacher's value for the student's model, or SKIP
    stages: tuple[str, ...] = ()  # the stages whose steps it decides; (): every stage
    model: bool = False  # it decides which model runs: applied first


FOLLOWED = (
    # the model that runs: the sidebar's (or the presenter popover's) choices
    Setting("train_step", keys.TRAIN_STEP, _train_step, model=True),
    Setting("size", keys.SIZE, _only(lambda m: m.sizes), model=True),
    Setting("mask", keys.MASK, _only(lambda m: share.MASKS), model=True),
    # the shared selections (kept as fields of the position)
    Setting("layer", keys.LAYER, _below(lambda m: m.config.depth)),
    Setting("head", keys.HEAD, _below(lambda m: m.config.num_heads)),
    Setting("patch", keys.PATCH, _place),
    # each stage's own
    Setting("key_patch", keys.KEY_PATCH, _place, ("qkv",)),
    Setting("query_is_cls", keys.QUERY_IS_CLS, _flag, ("qkv",)),
    Setting("attention_view", keys.ATTN_VIEW, _only(lambda m: choices.VIEWS), ("attention",)),
    Setting("mask_caption", keys.MASK_CAPTION, _text, ("masks",)),
    Setting("mask_layer", keys.MASK_LAYER, _below(lambda m: _captioner(m).depth), ("masks",)),
    Setting("mask_head", keys.MASK_HEAD, _below(lambda m: _captioner(m).num_heads), ("masks",)),
    Setting("mask_window", keys.MASK_WINDOW, _one_of(lambda m: common.window_sizes(m.config)),
            ("masks", "shapes")),
    Setting("mlp_cls", keys.MLP_CLS, _flag, ("mlp",)),
    Setting("class_temperature", keys.CLASS_TEMPERATURE, _between(0.1, 5.0, float),
            ("logits",)),
    Setting("temperature", keys.TEMPERATURE, _between(0.0, 2.0, float), ("logits",)),
    Setting("top_k", keys.TOP_K, _vocab, ("logits",)),
    Setting("gen_seed", keys.GEN_SEED, _between(0, 10_000), ("logits",)),
    Setting("caption", keys.CAPTION, _text, ("logits",)),
    Setting("experiment", keys.EXP_KIND, _only(lambda m: choices.KINDS), ("experiments",)),
    Setting("heads_off", keys.EXP_HEADS, _indices(lambda m: m.config.num_heads),
            ("experiments",)),
    Setting("greyed", keys.EXP_OCCLUDED, _area, ("experiments",)),
    Setting("shuffle_seed", keys.EXP_SEED, _between(0, 10_000), ("experiments",)),
    Setting("other_mask", keys.EXP_MASK, _exp_mask, ("experiments",)),
    Setting("mae_mode", keys.MAE_MODE, _only(lambda m: choices.MODES), ("mae",)),
    Setting("mae_ratio", keys.MAE_RATIO, _one_of(lambda m: choices.RATIO_CHOICES), ("mae",)),
    Setting("mae_seed", keys.MAE_SEED, _between(0, 2**31 - 1), ("mae",)),
    Setting("mae_hidden", keys.MAE_HIDDEN, _indices(_mae_patches, one_left=True), ("mae",)),
    Setting("why_patch_kind", keys.WHY_PATCH_KIND, _only(lambda m: choices.PATCH_AGAINST),
            ("why",)),
)
FIELDS = ("layer", "head", "patch")  # kept as the position's own fields
BY_NAME = {s.name: s for s in FOLLOWED}


# ---------------------------------------------------------------- the teacher
def _plain(v):
    """A value as JSON keeps it (lists for tuples; numbers and text as they are)."""
    return [_plain(i) for i in v] if isinstance(v, list | tuple) else v


def collect(ss, stage: str) -> dict[str, Any]:
    """The settings the teacher's session holds that decide the steps of `stage` (layer, head
    and patch are the position's own fields)."""
    return {s.name: _plain(ss[s.key]) for s in FOLLOWED
            if s.name not in FIELDS and (not s.stages or stage in s.stages) and s.key in ss
            and ss[s.key] is not None}


GRID = "grid"  # in the position's settings: the teacher's patch grid (patches are placed by it)


def position(ss, stage: str, step: str, grid: int | None = None) -> classes.Position:
    """Where the teacher is, with every followed setting of that stage and the teacher's patch
    grid (`grid` patches a side)."""
    sent = collect(ss, stage) | ({GRID: int(grid)} if grid else {})
    return classes.Position(stage, step, ss.get(keys.LAYER), ss.get(keys.HEAD),
                            ss.get(keys.PATCH), sent)


# ---------------------------------------------------------------- a following student
def wanted(p: classes.Position) -> dict[str, Any]:
    """What the position asks of a student: its settings and its layer / head / patch."""
    found = {name: getattr(p, name) for name in FIELDS if getattr(p, name) is not None}
    found.update({k: v for k, v in p.settings.items() if k in BY_NAME and v is not None})
    return found


def apply(ss: MutableMapping, p: classes.Position) -> None:
    """Apply the position's settings to a following student's session: the model's first,
    then the rest fitted to that model. A setting the student changed since the teacher's
    value was applied (LIVE_OWN) is left alone; a setting this model has not, skipped."""
    applied = ss.setdefault(keys.LIVE_APPLIED, {})
    own = ss.setdefault(keys.LIVE_OWN, set())
    asked = wanted(p)
    for model_first in (True, False):
        m = Model(ss, p.settings.get(GRID))  # afresh: the model's settings may change it
        for s in FOLLOWED:
            if s.model != model_first:
                continue
            if s.key in applied and s.key in ss and ss[s.key] != applied[s.key]:
                own.add(s.name)  # the student changed it since the teacher's was applied
            if s.name in own or s.name not in asked:
                continue
            value = s.fit(asked[s.name], m)
            if value is not SKIP:
                ss[s.key] = applied[s.key] = value
