"""Stage 7: logits (declared in ui/stages/logits.py)."""

from ui import deck
from ui.stages.logits import STAGE

deck.run(STAGE)
