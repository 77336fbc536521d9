"""The masks stage's own widget keys: a widget's `key=` is also its session-state key, and
AppTest tests address the widgets by these values (keys several stages, the sidebar or the
presenter share are in ui/keys.py)."""

MASKS_THREE = "masks_three"  # chart: the full, causal and prefix masks side by side
MASK_VISIBLE = "mask_visible"  # chart: visible keys per query
MASK_LIVE = "mask_live"  # chart: the captioners' attention, live, one panel per (model, mask)
MASK_SCORES = "mask_scores"  # table: each word's probability per captioner and mask
CLF_CAUSAL = "clf_causal"  # chart: the classifier as trained and under a causal mask
MASK_WINDOWS = "mask_windows"  # chart: the windows on the grid and the masks of blocks 0 and 1
