"""Stage 8: the shape trace (declared in ui/stages/shape_trace.py)."""

from ui import deck
from ui.stages.shape_trace import STAGE

deck.run(STAGE)
