"""The embeddings stage's own widget keys: a widget's `key=` is also its session-state key, and
AppTest tests address the widgets by these values (keys several stages, the sidebar or the
presenter share are in ui/keys.py)."""

EMBED_VECTOR = "embed_vector"  # chart: the selected patch's embedding
EMBED_MATRIX = "embed_matrix"  # chart: the embeddings entering block 0
EMBED_TEXT = "embed_text"  # chart: a captioner's text rows of embed
EMBED_POS_ONE = "embed_pos_one"  # chart: the selected patch's position similarity map
EMBED_POS_ALL = "embed_pos_all"  # chart: every position's similarity map on the grid
EMBED_POS_SIZES = "embed_pos_sizes"  # chart: a position's map at its own and another size
