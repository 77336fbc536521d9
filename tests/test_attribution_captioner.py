"""A word's map points at what the word needs: on the bundled captioner's held-out scenes,
greying the K patches a map ranks highest lowers the word's probability more than greying K
random patches. The greying and the probabilities are the test's own (pixel slices, softmax of
the model's logits); the figures are in the assertion's message and docs/library.md."""

import pytest
import torch

from vit_core import load_model, preprocess
from vit_core.explain import attribution, targets
from vit_core.scenes import world

SCENES = 50  # held-out scenes (world.heldout_seeds): 100 gave the same order (docs/library.md)
K = 5  # patches greyed, of 49
RANDOM = 10  # random sets of K patches per scene
WORD = 2  # the caption's third word, the shape: "a red *ball* on the grass ..."
FAST = {"integrated_gradients": {"steps": 16}, "occlusion": {"batch": 49}}


def greyed(x, sets, config):
    """[len(sets), C, H, W]: x with each set's patches mid-grey, by pixel slices."""
    P, g = config.patch_size, config.grid
    grey = ((0.5 - torch.tensor(config.mean)) / torch.tensor(config.std)).view(-1, 1, 1)
    out = x.repeat(len(sets), 1, 1, 1)
    for b, chosen in enumerate(sets):
        for i in chosen:
            r, c = divmod(int(i), g)
            out[b, :, r * P:(r + 1) * P, c * P:(c + 1) * P] = grey
    return out


def word_probability(model, x, word) -> torch.Tensor:
    fed = torch.tensor([word.ids[:word.index]]).expand(x.shape[0], -1)
    with torch.no_grad():
        return model(x, fed)[:, -1].softmax(-1)[:, word.ids[word.index]]


def measure(model, seeds) -> dict[str, float]:
    """Mean drop of the word's probability over the scenes: per method (its top K patches
    greyed) and for RANDOM random sets of K per scene ("random")."""
    rng = torch.Generator().manual_seed(0)
    drops = {m: [] for m in [*attribution.METHODS, "random"]}
    N = model.config.num_patches
    for seed in seeds:
        x = preprocess(world.make_scene(seed).image, model.config)
        word = targets.word_targets(model, x)[WORD]
        p = float(word_probability(model, x, word)[0])
        sets = [torch.randperm(N, generator=rng)[:K] for _ in range(RANDOM)]
        drops["random"].append(p - float(word_probability(model, greyed(x, sets, model.config),
                                                          word).mean()))
        for method in attribution.METHODS:
            a = attribution.attribute(model, x, method, word, **FAST.get(method, {}))
            top = greyed(x, [a.patches.topk(K).indices], model.config)
            drops[method].append(p - float(word_probability(model, top, word)[0]))
    return {m: sum(v) / len(v) for m, v in drops.items()}


@pytest.mark.slow  # six maps on 100 scenes
def test_greying_a_words_top_patches_lowers_it_more_than_random_patches():
    model = load_model("shapes-captioner-causal")
    mean = measure(model, world.heldout_seeds(SCENES))
    figures = ", ".join(f"{m} {v:.3f}" for m, v in mean.items())
    message = (f"mean drop of the shape word's probability over {SCENES} held-out scenes, "
               f"{K} of 49 patches greyed: {figures}")
    print(message)
    for method in attribution.METHODS:
        assert mean[method] > mean["random"], message
