"""Stage 2: patch embeddings, CLS and positions (declared in ui/stages/embeddings.py)."""

from ui import deck
from ui.stages.embeddings import STAGE

deck.run(STAGE)
