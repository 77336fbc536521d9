"""The mae stage's own widget keys: a widget's `key=` is also its session-state key, and
AppTest tests address the widgets by these values (keys several stages, the sidebar or the
presenter share are in ui/keys.py)."""

MAE_NEW = "mae_new"  # button: draw another random masking
MAE_GRID = "mae_grid"  # chart: clickable patch grid (a click hides or shows a patch)
MAE_CLEAR = "mae_clear"  # button: hide no patch by hand
MAE_INPUT = "mae_input"  # chart: what the encoder is given (hidden patches blanked)
MAE_TOKENS = "mae_tokens"  # chart: the encoder's and the decoder's token sequences
MAE_SHAPES = "mae_shapes"  # table: each tensor's shape through the MAE
MAE_IMAGES = "mae_images"  # chart: original, masked input and reconstruction side by side
MAE_ERROR = "mae_error"  # chart: squared error per patch, on the patch grid
MAE_LOSS = "mae_loss"  # chart: the hidden patches' errors and their mean, the loss
