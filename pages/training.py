"""Stage 11: how the weights were learned (declared in ui/stages/training/)."""

from ui import deck
from ui.stages.training import STAGE

deck.run(STAGE)
