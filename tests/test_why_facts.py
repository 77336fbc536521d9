"""vit_core.explain.why_facts against references written here in float64 / plain Python: the
maps' one scale, their top patches and agreement, the deletion race's winner and its gap to
random orders, and the Play's frames read off a real deletion curve."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch

from vit_core import load_model, preprocess
from vit_core.explain import faithfulness, targets, why_facts
from vit_core.scenes import world


@dataclass
class Map:
    patches: torch.Tensor


@dataclass
class Row:
    method: str
    deletion_auc: float
    insertion_auc: float
    deletion_spread: float | None = None
    insertion_spread: float | None = None


def test_each_map_is_divided_by_its_own_largest_magnitude():
    rng = np.random.default_rng(0)
    maps = {m: Map(torch.tensor(rng.normal(size=16) * s, dtype=torch.float32))
            for m, s in (("a", 1e-4), ("b", 30.0), ("c", 1.0))}
    maps["zero"] = Map(torch.zeros(16))
    f = why_facts.map_facts(maps, 4)
    for m, a in maps.items():
        v = a.patches.double().numpy()
        peak = max(abs(float(x)) for x in v)
        want = [float(x) / peak for x in v] if peak else [0.0] * 16
        np.testing.assert_allclose(f.scaled[m], want, rtol=1e-12)
        assert f.scaled[m].dtype == np.float64
    assert -1.0 <= f.lo and f.hi <= 1.0 and why_facts.SCALE == (-1.0, 1.0)
    assert f.lo == min(min(v) for v in f.scaled.values())


def test_top_patches_and_how_many_agree():
    def one_hot(i, n=9):
        v = torch.zeros(n)
        v[i] = 1.0
        return Map(v)

    maps = {"a": one_hot(4), "b": one_hot(7), "c": one_hot(4), "d": one_hot(0)}
    f = why_facts.map_facts(maps, 3)
    assert f.tops == {"a": (1, 1), "b": (2, 1), "c": (1, 1), "d": (0, 0)}
    assert (f.places, f.common, f.agreeing) == (3, (1, 1), ("a", "c"))
    tie = why_facts.map_facts({"x": one_hot(2), "y": one_hot(5)}, 3)
    assert tie.common == (0, 2) and tie.agreeing == ("x",)  # the earlier method's on a tie


@pytest.mark.parametrize("spread, clearly", [(0.01, True), (0.2, False), (0.0, True)])
def test_the_fastest_order_and_its_gap_to_random(spread, clearly):
    rows = [Row("m1", 0.40, 0.5), Row("m2", 0.20, 0.7), Row("m3", 0.55, 0.3),
            Row("random", 0.50, 0.4, spread, 0.02)]
    t = why_facts.test_facts(rows)
    assert t.fastest == "m2" and t.slowest == "m3"
    assert t.gap == pytest.approx(0.30)
    assert t.spreads == (pytest.approx(0.30 / spread) if spread else float("inf"))
    assert t.clearly is clearly  # 0.30 >= 2 spreads (and >= 0.02) for 0.01 and 0
    assert t.behind_random == ("m3",)
    want = tuple(m for m, a in (("m1", 0.4), ("m2", 0.2), ("m3", 0.55))
                 if 0.5 - a >= why_facts.MIN_GAP and 0.5 - a >= why_facts.CLEAR_SPREADS * spread)
    assert t.beat_random == want
    assert t.random_deletion == (0.5, spread) and t.random_insertion == (0.4, 0.02)


def test_a_gap_under_the_minimum_is_not_clear_even_with_no_spread():
    t = why_facts.test_facts([Row("m", 0.49, 0.5), Row("random", 0.5, 0.5, 0.0, 0.0)])
    assert t.gap == pytest.approx(0.01) and not t.clearly


def test_the_play_frames_read_a_real_deletion_curve():
    model = load_model("shapes-classifier")
    pixels = preprocess(world.make_scene(3).image, model.config)
    target = targets.predicted(model, pixels)
    order = torch.randperm(model.config.num_patches, generator=torch.Generator().manual_seed(1))
    curve = faithfulness.deletion(model, pixels, target, order, k=3)
    N = model.config.num_patches
    frames = why_facts.play_frames(curve, N, frames=4)
    assert frames[0].removed == 0 and frames[-1].removed == N
    for fr in frames:
        chosen = torch.zeros(1, N, dtype=torch.bool)
        chosen[0, list(fr.greyed)] = True
        assert fr.greyed == tuple(int(i) for i in order[:fr.removed])
        base = 0.5 * torch.ones(1, 3, 1, 1)
        mean = torch.tensor(model.config.mean).view(1, 3, 1, 1)
        std = torch.tensor(model.config.std).view(1, 3, 1, 1)
        grey = ((base - mean) / std).expand_as(pixels)
        P, g = model.config.patch_size, model.config.grid
        where = chosen.reshape(1, 1, g, g).repeat_interleave(P, 2).repeat_interleave(P, 3)
        x = torch.where(where, grey, pixels)
        with torch.no_grad():
            p = torch.softmax(model(x).double(), -1)[0, target.index]
        assert fr.probability == pytest.approx(float(p), abs=1e-5)
