"""What a following student takes from the teacher's settings (ui/live/follow.py), on a plain
mapping standing in for the student's session: each setting fitted to the student's own model
(clamped into its range, or skipped where the model has none of it), the model's settings
first, the student's own change kept, and what the teacher's session sends."""

from __future__ import annotations

import json

import pytest

from ui import keys
from ui.live import classes, follow
from ui.serving import state
from ui.stages import common, experiments

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# What a teacher on the bundled classifier (224 px, 7x7 patches, 6 blocks of 4 heads, kept at
# steps 0 … 8000) may have chosen, one value per setting, some out of a smaller model's range.
TEACHER = {
    "train_step": 3300, "size": 288, "mask": "causal", "key_patch": 48, "query_is_cls": True,
    "attention_view": "raw scores q·k", "mask_caption": "a red ball", "mask_layer": 5,
    "mask_head": 3, "mask_window": 4, "mlp_cls": True, "class_temperature": 2.5,
    "temperature": 0.7, "top_k": 5, "gen_seed": 7, "caption": "a ball", "experiment":
    "Grey out patches", "heads_off": [1, 3], "greyed": [0, 1, 48], "shuffle_seed": 3,
    "other_mask": "window:2:shifted", "mae_mode": "click", "mae_ratio": 0.5, "mae_seed": 4,
    "mae_hidden": [0, 1, 2], "why_patch_kind": "blur"}
AT = classes.Position("experiments", "change", 5, 3, 48, TEACHER)


def student(model: str, **more) -> dict:
    return {keys.MODEL: model, keys.MASK: "trained", **more}


def test_every_setting_is_declared_once_with_a_key_and_the_teacher_sends_json():
    names = [s.name for s in follow.FOLLOWED]
    assert len(names) == len(set(names)) and len({s.key for s in follow.FOLLOWED}) == len(names)
    assert set(TEACHER) | set(follow.FIELDS) == set(names)  # the table above names them all
    ss = {s.key: v for s in follow.FOLLOWED for k, v in TEACHER.items() if s.name == k}
    ss[keys.EXP_HEADS] = (1, 3)  # a tuple goes as a list
    sent = follow.collect(ss, "experiments")
    assert json.loads(json.dumps(sent)) == sent
    assert sent["heads_off"] == [1, 3] and sent["train_step"] == 3300
    assert "mask_window" not in sent and "temperature" not in sent  # other stages' settings
    assert set(follow.collect(ss, "masks")) == {"train_step", "size", "mask", "mask_caption",
                                                "mask_layer", "mask_head", "mask_window"}


def test_the_teachers_model_takes_every_value_as_it_is():
    ss = student("shapes-classifier")
    follow.apply(ss, AT)
    for s in follow.FOLLOWED:
        want = TEACHER.get(s.name, getattr(AT, s.name, None))
        if s.name == "other_mask":  # under the teacher's causal mask: a window mask is offered
            assert want in experiments.mask_options(state.get_model(
                "shapes-classifier@step3300@288px").config, "causal")
        assert ss[s.key] == want, s.name


def test_a_smaller_model_gets_each_value_clamped_and_what_it_has_not_is_skipped():
    ss = student("vit-ti16")  # 12 blocks of 3 heads, 16-px patches, no training snapshots
    follow.apply(ss, AT)
    assert keys.TRAIN_STEP not in ss  # kept at no earlier step: skipped
    assert ss[keys.SIZE] == 288  # it reads 288 px: 18x18 patches
    assert (ss[keys.LAYER], ss[keys.HEAD], ss[keys.PATCH]) == (5, 2, 48)  # head 3 of 3: 2
    assert ss[keys.EXP_HEADS] == [1]
    assert ss[keys.MASK_WINDOW] == 4 and 4 in common.window_sizes(state.get_model(
        "vit-ti16@288px").config)


def test_a_size_the_model_cannot_read_is_skipped_and_a_step_it_did_not_keep_is_the_nearest():
    ss = student("shapes-classifier", **{keys.SIZE: 224})
    follow.apply(ss, classes.Position("training", "curves", settings={
        "size": 100, "train_step": 3000, "class_temperature": 9.0}))
    assert ss[keys.SIZE] == 224  # its own stays
    assert ss[keys.TRAIN_STEP] == 3300  # kept at 1400 and 3300: the nearest
    assert keys.CLASS_TEMPERATURE in ss and ss[keys.CLASS_TEMPERATURE] == 5.0  # the slider's top


def test_the_model_is_decided_first_and_the_rest_fitted_to_it():
    """At 448 px the classifier has 14x14 = 196 patches: the teacher's patch 150 holds only
    once the size is applied, in the same run."""
    ss = student("shapes-classifier")
    follow.apply(ss, classes.Position("patches", "grid", patch=150, settings={"size": 448}))
    assert (ss[keys.SIZE], ss[keys.PATCH]) == (448, 150)


def test_a_mask_the_student_already_runs_is_not_offered_as_the_other_one():
    ss = student("shapes-captioner-causal")  # runs causal: "causal" is not another mask
    follow.apply(ss, classes.Position("experiments", "change", settings={
        "other_mask": "causal", "experiment": "Apply another attention mask"}))
    assert keys.EXP_MASK not in ss and ss[keys.EXP_KIND] == "Apply another attention mask"


def test_the_students_own_change_stays_and_other_settings_still_follow():
    ss = student("shapes-classifier")
    follow.apply(ss, AT)
    ss[keys.EXP_KIND] = "Shuffle the patches"  # the student's own choice
    moved = classes.Position("experiments", "change", 5, 3, 48, dict(
        TEACHER, experiment="Remove position embeddings", shuffle_seed=9))
    follow.apply(ss, moved)
    assert ss[keys.EXP_KIND] == "Shuffle the patches" and ss[keys.EXP_SEED] == 9
    assert ss[keys.LIVE_OWN] == {"experiment"}
    del ss[keys.MASK_WINDOW]  # a widget Streamlit dropped (not drawn): no choice of the student
    follow.apply(ss, moved)
    assert ss[keys.MASK_WINDOW] == 4 and ss[keys.LIVE_OWN] == {"experiment"}


def test_a_patch_is_placed_at_the_same_part_of_the_picture_on_another_grid():
    """The teacher's 7x7 grid: the centre patch 24 and its 3x3 neighbours (rows and columns
    2-4, the picture's middle from 2/7 to 5/7 of each side). ViT-Ti/16 at 224 px has 14x14
    patches: the centre is patch 7 * 14 + 7, the middle rows and columns 4-9 (centres from
    4.5/14 to 9.5/14, inside 2/7 … 5/7)."""
    ss = student("vit-ti16")
    middle = experiments.around(24, 7)
    follow.apply(ss, classes.Position("experiments", "change", 5, 0, 24, {
        "greyed": middle, "key_patch": 0, follow.GRID: 7}))
    assert ss[keys.PATCH] == 7 * 14 + 7
    assert ss[keys.KEY_PATCH] == 1 * 14 + 1  # the corner patch's centre, 1/14 in: row 1, col 1
    assert ss[keys.EXP_OCCLUDED] == [r * 14 + c for r in range(4, 10) for c in range(4, 10)]
    coarse = student("shapes-classifier")  # 7x7 from a teacher's 14x14: none lost
    follow.apply(coarse, classes.Position("experiments", "change", 5, 0, 7 * 14 + 7, {
        "greyed": [0, 14 * 14 - 1], follow.GRID: 14}))
    assert coarse[keys.PATCH] == 24 and coarse[keys.EXP_OCCLUDED] == [0, 48]
    same = student("shapes-classifier")  # the same grid: the same numbers
    follow.apply(same, classes.Position("experiments", "change", 5, 0, 30, {
        "greyed": middle, follow.GRID: 7}))
    assert same[keys.PATCH] == 30 and same[keys.EXP_OCCLUDED] == middle


@pytest.mark.parametrize("stage", ["masks", "mae"])
def test_a_student_who_has_not_chosen_a_model_yet_follows_on_the_default_one(stage):
    """A student who opened the class link has no model in its session until the sidebar runs:
    the settings are fitted to the default model (a KeyError here was an error page on the
    Masks and MAE stages)."""
    ss = {keys.MASK: "trained"}
    follow.apply(ss, classes.Position(stage, "any", 5, 3, 48, TEACHER))
    assert keys.MODEL not in ss or ss[keys.MODEL]
    assert ss.get(keys.MASK_CAPTION if stage == "masks" else keys.MAE_HIDDEN) is not None
