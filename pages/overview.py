"""The whole forward pass at a glance (declared in ui/stages/overview.py)."""

from ui import deck
from ui.stages.overview import STAGE

deck.run(STAGE)
