"""Stage 12: masked patches (declared in ui/stages/mae/)."""

from ui import deck
from ui.stages.mae import STAGE

deck.run(STAGE)
