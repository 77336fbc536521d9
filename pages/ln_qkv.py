"""Stage 3: LayerNorm, then queries, keys and values (declared in ui/stages/ln_qkv.py)."""

from ui import deck
from ui.stages.ln_qkv import STAGE

deck.run(STAGE)
