"""Stage 4: attention heads (declared in ui/stages/attention.py)."""

from ui import deck
from ui.stages.attention import STAGE

deck.run(STAGE)
