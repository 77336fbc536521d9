"""The why stage's own widget keys: a widget's `key=` is also its session-state key, and
AppTest tests address the widgets by these values (keys several stages, the sidebar or the
presenter share are in ui/keys.py)."""

WHY_MAPS = "why_maps"  # chart: the six maps side by side, one colour scale
WHY_SANITY = "why_sanity"  # chart: the maps on the trained model and with random weights
WHY_PATCH = "why_patch"  # chart: restored shares per block on the patch grid, and per head
