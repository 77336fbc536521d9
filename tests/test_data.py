"""Tests for the synthetic scene generator (vit_core.scenes.world)."""

import dataclasses

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from vit_core.io.text import Tokenizer, split_words
from vit_core.scenes import world as data

W = data.SIZE


@pytest.fixture(scope="module")
def scenes():
    return [data.make_scene(s) for s in range(150)]


def test_same_seed_same_scene_and_different_seeds_differ():
    a, b = data.make_scene(1234), data.make_scene(1234)
    assert a.image.tobytes() == b.image.tobytes()
    assert np.array_equal(a.mask, b.mask) and a.caption == b.caption
    images = {data.make_scene(s).image.tobytes() for s in range(20)}
    assert len(images) == 20
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.label = 3


def test_scene_fields(scenes):
    for sc in scenes[:20]:
        assert sc.image.size == (W, W) and sc.image.mode == "RGB"
        assert sc.mask.shape == (W, W) and sc.mask.dtype in (np.uint8, np.int64)
        assert sc.label_name == data.CLASS_NAMES[sc.label]
        assert sc.colour in data.COLOURS and sc.background in data.BACKGROUNDS
        assert sc.position in data.POSITIONS
        spec = data.scene_spec(sc.seed)  # the cheap path describes the same scene
        assert (spec.caption, spec.label) == (sc.caption, sc.label)


def test_masks_agree_with_labels_and_are_a_reasonable_size(scenes):
    for sc in scenes:
        assert set(np.unique(sc.mask)) == {0, sc.label + 1}
        assert 0.015 < (sc.mask > 0).mean() < 0.5, sc.seed


def test_object_pixels_have_the_named_colour(scenes):
    names, rgb = list(data.COLOURS), np.array(list(data.COLOURS.values()), float)
    for sc in scenes:
        mean = np.asarray(sc.image, float)[sc.mask > 0].mean(0)
        assert names[np.argmin(((rgb - mean) ** 2).sum(1))] == sc.colour, sc.seed


def test_position_word_agrees_with_mask_centroid(scenes):
    for sc in scenes:
        ys, xs = np.nonzero(sc.mask)
        x, y = xs.mean() / W, ys.mean() / W
        ok = {"centre": 0.4 < x < 0.6 and 0.4 < y < 0.6,
              "left": x < 0.4 and 0.3 < y < 0.7, "right": x > 0.6 and 0.3 < y < 0.7,
              "top": y < 0.4 and 0.3 < x < 0.7, "bottom": y > 0.6 and 0.3 < x < 0.7}
        assert ok[sc.position], (sc.seed, sc.position, x, y)


def test_captions_round_trip_through_the_tokenizer():
    tok = Tokenizer(data.VOCAB)
    lengths = []
    for s in range(500):
        spec = data.scene_spec(s)
        enc = tok.encode(spec.caption)
        assert enc.unknown == [] and tok.decode(enc.ids) == spec.caption
        words = split_words(spec.caption)
        assert " ".join(words) == spec.caption  # lower case, no punctuation
        assert words[:2] == ["a", spec.colour] and words[2:6] == [spec.label_name, "on", "the",
                                                                   spec.background]
        lengths.append(len(words))
    assert max(lengths) == data.MAX_CAPTION_WORDS and min(lengths) == 6


def test_position_phrases():
    want = {"centre": "", "left": " on the left", "right": " on the right",
            "top": " at the top", "bottom": " at the bottom"}
    for s in range(200):
        spec = data.scene_spec(s)
        base = f"a {spec.colour} {spec.label_name} on the {spec.background}"
        assert spec.caption == base + want[spec.position]


def test_red_ball_on_the_grass_is_reachable():
    seed = data.find_seed("a red ball on the grass")
    assert seed is not None and 0 <= seed < data.HELDOUT_BASE
    sc = data.make_scene(seed)
    assert (sc.caption, sc.label_name, sc.colour, sc.position) == (
        "a red ball on the grass", "ball", "red", "centre")


def test_everything_appears_and_clashes_never_do():
    specs = [data.scene_spec(s) for s in range(500)]
    assert len(data.CLASS_NAMES) == 10
    assert {s.label for s in specs} == set(range(len(data.CLASS_NAMES)))
    assert {s.colour for s in specs} == set(data.COLOURS) and len(data.COLOURS) >= 8
    assert {s.background for s in specs} == set(data.BACKGROUNDS) and len(data.BACKGROUNDS) >= 5
    assert {s.position for s in specs} == set(data.POSITIONS)
    for s in specs + [data.scene_spec(i) for i in range(500, 3000)]:
        assert s.colour not in data.CLASHES[s.background]


def test_heldout_seeds_never_overlap_training():
    for k in range(3):
        seeds = data.heldout_seeds(1000, seed=k)
        assert len(set(seeds)) == 1000 and min(seeds) >= data.HELDOUT_BASE
    stream = data.FreshSceneStream(base_seed=5)
    assert all(0 <= stream.seed_at(g) < data.HELDOUT_BASE for g in (0, 1, 10**9, 3 * 10**9))


def test_scene_dataset_items_and_loader():
    mean, std = (0.4, 0.5, 0.6), (0.2, 0.25, 0.3)
    ds = data.SceneDataset(data.heldout_seeds(6), mean=mean, std=std)
    item = ds[2]
    sc = data.make_scene(data.heldout_seeds(6)[2])
    want = (torch.from_numpy(np.asarray(sc.image).copy()).permute(2, 0, 1) / 255
            - torch.tensor(mean).view(3, 1, 1)) / torch.tensor(std).view(3, 1, 1)
    assert item["pixels"].dtype == torch.float32 and item["pixels"].shape == (3, W, W)
    assert torch.allclose(item["pixels"], want, atol=1e-5)
    assert item["mask"].dtype == torch.int64 and torch.equal(item["mask"],
                                                             torch.from_numpy(sc.mask).long())
    assert item["label"].dtype == torch.int64 and int(item["label"]) == sc.label
    assert item["caption"] == sc.caption and item["seed"] == sc.seed
    raw = data.SceneDataset(data.heldout_seeds(6), mean=mean, std=std, raw=True)[2]
    assert raw["pixels"].dtype == torch.uint8 and raw["mask"].dtype == torch.uint8
    assert torch.equal(data.normalise(raw["pixels"][None], mean, std)[0], item["pixels"])
    batch = next(iter(DataLoader(ds, batch_size=3, num_workers=1)))
    assert batch["pixels"].shape == (3, 3, W, W) and batch["mask"].shape == (3, W, W)
    assert isinstance(batch["caption"], list) and all(isinstance(c, str) for c in batch["caption"])


def test_fresh_stream_shards_across_workers():
    stream = data.FreshSceneStream(base_seed=3, start=100, limit=24)
    loader = DataLoader(stream, batch_size=4, num_workers=2)
    seeds = [int(s) for b in loader for s in b["seed"]]
    assert len(seeds) == 24 and len(set(seeds)) == 24
    assert set(seeds) == {stream.seed_at(g) for g in range(100, 124)}
    assert data.FreshSceneStream(base_seed=4).seed_at(0) != stream.seed_at(0)
