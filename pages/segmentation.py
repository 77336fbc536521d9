"""Stage 9: the segmentation pivot (declared in ui/stages/segmentation.py)."""

from ui import deck
from ui.stages.segmentation import STAGE

deck.run(STAGE)
