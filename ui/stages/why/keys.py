"""The why stage's own widget keys: a widget's `key=` is also its session-state key, and
AppTest tests address the widgets by these values (keys several stages, the sidebar or the
presenter share are in ui/keys.py)."""

WHY_MAPS = "why_maps"  # chart: the six maps side by side, one colour scale
WHY_RACE = "why_race"  # chart: the image greyed, the deletion and insertion curves
WHY_PLAY = "why_play"  # button: Play / Pause the greying
WHY_FRAME = "why_frame"  # slider: how many groups of patches are greyed
