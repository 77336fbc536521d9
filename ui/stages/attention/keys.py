"""The attention stage's own widget keys: a widget's `key=` is also its session-state key, and
AppTest tests address the widgets by these values (keys several stages, the sidebar or the
presenter share are in ui/keys.py)."""

ATTN_MATRIX = "attn_matrix"  # chart: the S x S scores or pattern
ATTN_DISTANCE = "attn_distance"  # chart: mean attention distance
ATTN_ENTROPY = "attn_entropy"  # chart: attention entropy
