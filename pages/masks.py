"""Stage 5: masks (declared in ui/stages/masks/)."""

from ui import deck
from ui.stages.masks import STAGE

deck.run(STAGE)
