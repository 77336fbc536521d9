"""Scenes from an explicit spec (vit_core.scenes.world): seeds still give the same pixels, a
composed spec renders the same image every time, and its encoding for links is checked."""

import hashlib

import numpy as np

from vit_core.scenes import world

# sha256 over (image bytes, mask bytes, caption) of make_scene(s) for SEEDS, computed with the
# generator as committed before scenes could be rendered from a spec (commit ea13983): the
# bundled models' held-out metrics depend on every seed keeping its pixels.
SEEDS = [*range(200), *world.heldout_seeds(100, seed=3)]
SEED_DIGEST = "8bde871ce9ec7da9712141d785f5faa9e434fbe4103b1dcdb2862d92dddda2d4"


def scenes_digest(seeds) -> str:
    h = hashlib.sha256()
    for s in seeds:
        sc = world.make_scene(s)
        h.update(sc.image.tobytes())
        h.update(np.ascontiguousarray(sc.mask).tobytes())
        h.update(sc.caption.encode())
    return h.hexdigest()


def test_every_seed_keeps_its_pixels():
    assert scenes_digest(SEEDS) == SEED_DIGEST
