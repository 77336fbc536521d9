"""The house's limits on the repository itself, measured by tools/house.py (whose measures
tests/test_house.py checks on small trees): no ui/ module over 400 lines, no function over 60
lines or 15 branches, no repeated block, no import circle (importlib and imports inside
functions read), no private name of Streamlit or the standard library outside ui/serving/server.py,
and no share printed by hand in a stage (ui/drawing/numbers.py prints them)."""

from __future__ import annotations

from tools import house

# torch's in-place version counter of a tensor (`Tensor._version`, described in PyTorch's
# autograd notes): how the lazy trace knows its model's weights changed since the pass
ALLOWED_PRIVATE = {("vit_core/recompute.py", "p._version")}


def test_no_ui_module_is_over_400_lines():
    assert [m for m in house.big_modules(top=0) if m["over"]] == []


def test_no_function_is_over_60_lines_or_15_branches():
    assert house.long_functions() == []


def test_no_block_of_code_is_repeated():
    assert house.repeats() == []


def test_no_module_imports_in_a_circle_even_through_importlib():
    assert house.cycles() == []


def test_private_names_live_in_the_guarded_module_only():
    found = {(u["path"], u["what"]) for u in house.private_uses()}
    assert found <= ALLOWED_PRIVATE, found - ALLOWED_PRIVATE


def test_no_stage_prints_a_share_by_hand():
    assert [h for h in house.hand_formats() if h["kind"] == "share"] == []
