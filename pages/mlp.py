"""Stage 6: the MLP, and the residual stream (declared in ui/stages/mlp.py)."""

from ui import deck
from ui.stages.mlp import STAGE

deck.run(STAGE)
