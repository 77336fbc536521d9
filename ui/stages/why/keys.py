"""The why stage's own widget keys: a widget's `key=` is also its session-state key, and
AppTest tests address the widgets by these values (keys several stages, the sidebar or the
presenter share are in ui/keys.py)."""

WHY_MAPS = "why_maps"  # chart: the six maps side by side, one colour scale
