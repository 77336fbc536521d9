"""The experiments stage's own widget keys: a widget's `key=` is also its session-state key, and
AppTest tests address the widgets by these values (keys several stages, the sidebar or the
presenter share are in ui/keys.py)."""

EXP_GRID = "exp_grid"  # chart: clickable patch grid (a click toggles a patch in EXP_OCCLUDED)
EXP_CLEAR = "exp_clear"  # button: grey out no patch
EXP_INPUT = "exp_input"  # chart: the input before the change (image, heads or mask)
EXP_ALTERED = "exp_altered"  # chart: the input after the change
EXP_COMPARE = "exp_compare"  # chart: top classes / captions / final tokens before and after
EXP_UNORDERED = "exp_unordered"  # chart: the two runs without positions, shuffled and not
EXP_WORDS = "exp_words"  # chart: the caption before, each word's probability before and after
