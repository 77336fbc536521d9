"""The logits stage's own widget keys: a widget's `key=` is also its session-state key, and
AppTest tests address the widgets by these values (keys several stages, the sidebar or the
presenter share are in ui/keys.py)."""

PLAY_CAPTION = "play_caption"  # button: Play / Pause the caption
GEN_FOR = "gen_for"  # tuple: the settings the step count belongs to
GEN_STEPS = "gen_steps"  # int: caption words shown so far (the caption's buttons)
LOGITS_TOPK = "logits_topk"  # chart: top-k classes
LOGITS_RAW = "logits_raw"  # chart: the raw logits
LOGITS_LENS = "logits_lens"  # chart: the logit lens
GEN_NEXT = "gen_next"  # button: next token
GEN_ALL = "gen_all"  # button: run to the end
GEN_RESET = "gen_reset"  # button: start again
GEN_DIST = "gen_dist"  # chart: next-word distribution
CAPTION_SCORES = "caption_scores"  # table: the typed caption's word probabilities
