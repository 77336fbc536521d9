"""Stage 1: the input and its patch grid (declared in ui/stages/input_patches.py)."""

from ui import deck
from ui.stages.input_patches import STAGE

deck.run(STAGE)
