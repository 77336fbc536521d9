"""Stage 7: logits (declared in ui/stages/logits/)."""

from ui import deck
from ui.stages.logits import STAGE

deck.run(STAGE)
