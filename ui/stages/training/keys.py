"""The training stage's own widget keys: a widget's `key=` is also its session-state key, and
AppTest tests address the widgets by these values (keys several stages, the sidebar or the
presenter share are in ui/keys.py)."""

TRAIN_CURVES = "train_curves"  # chart: the training loss and held-out scores against the step
TRAIN_POSITIONS = "train_positions"  # chart: a position's similarity map at two training steps
TRAIN_DISTANCE = "train_distance"  # chart: mean attention distance per block at kept steps
TRAIN_CLS = "train_cls"  # chart: CLS attention on the patches, and on the object per kept step
TRAIN_PREDICTION = "train_prediction"  # chart: top classes, and the final class at every step
