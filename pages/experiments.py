"""Stage 10: experiments (declared in ui/stages/experiments/)."""

from ui import deck
from ui.stages.experiments import STAGE

deck.run(STAGE)
