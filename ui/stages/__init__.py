"""One module per stage, each declaring `STAGE` (a ui.deck.Stage): its steps, in order.

`get(slug)` imports the stage's module when first asked (the pages, the presenter header, the
read-ahead and the tests all read the declarations through it)."""

from __future__ import annotations

import importlib

from ..routes import STAGES

MODULES = {slug: path.removeprefix("pages/").removesuffix(".py") for slug, (path, _, _) in
           STAGES.items()}


def get(slug: str):
    """The declared Stage of `slug` (KeyError for an unknown slug)."""
    return importlib.import_module(f"{__name__}.{MODULES[slug]}").STAGE


def titles(slug: str, config) -> list[str]:
    """The titles of the steps stage `slug` shows for a model with this config."""
    return [s.title_for(config) for s in get(slug).steps_for(config)]
