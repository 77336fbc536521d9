"""What an attribution explains (vit_core.explain.targets): a class's logit and a caption word's
log-probability, each against the test's own reading of the model's output."""

import math

import pytest
import torch

from vit_core import ViT, ViTConfig, generate, load_model, preprocess
from vit_core.explain import targets
from vit_core.explain.generation import tokenizer_for
from vit_core.scenes import world


def classifier():
    torch.manual_seed(0)
    c = ViTConfig(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=5,
                  class_names=("a", "b", "c", "d", "e"))
    return ViT(c).eval()


def test_a_class_is_read_from_the_logits_and_the_top_one_is_predicted():
    m, x = classifier(), torch.randn(3, 3, 32, 32)
    logits = m(x)
    top = targets.predicted(m, x[:1])
    assert top.index == int(logits[0].argmax()) and top.label == "abcde"[top.index]
    assert torch.allclose(targets.score(m, x, top), logits[:, top.index])
    assert torch.allclose(targets.probability(m, x, top), logits.softmax(-1)[:, top.index])


def test_the_answer_read_from_a_pass_already_made_is_the_predicted_one():
    m, x = classifier(), torch.randn(1, 3, 32, 32)
    assert targets.answered(m, logits=m(x)) == targets.predicted(m, x)
    assert targets.answered(m, logits=-m(x)[0]).index == int(m(x)[0].argmin())
    cap = load_model("shapes-captioner-causal")
    for seed in range(3):
        pixels = preprocess(world.make_scene(seed).image, cap.config)
        said = targets.answered(cap, caption=generate(cap, pixels).ids)
        assert said == targets.predicted(cap, pixels) == targets.word_targets(cap, pixels)[0]
    eos = tokenizer_for(cap).eos_id
    with pytest.raises(ValueError, match="The caption is empty"):
        targets.answered(cap, caption=[eos])


def test_a_class_outside_the_model_says_so():
    with pytest.raises(ValueError, match="not one of this model's 5 classes"):
        targets.class_target(classifier(), 7)


def test_a_word_is_its_probability_as_generated_under_teacher_forcing():
    m = load_model("shapes-captioner-causal")
    pixels = preprocess(world.make_scene(3).image, m.config)
    gen = generate(m, pixels)
    words = targets.word_targets(m, pixels)
    tok = tokenizer_for(m)
    assert [w.label for w in words] == [tok.vocab[i] for i in gen.ids if i != tok.eos_id]
    for w, p in zip(words, gen.chosen, strict=False):  # greedy: the chosen word's probability
        assert float(targets.probability(m, pixels, w)) == pytest.approx(p, abs=1e-5)
        assert float(targets.score(m, pixels, w)) == pytest.approx(math.log(p), abs=1e-4)
    assert targets.predicted(m, pixels) == words[0]


def test_a_words_score_has_a_gradient_with_respect_to_the_pixels():
    m = load_model("shapes-captioner-causal")
    pixels = preprocess(world.make_scene(3).image, m.config).requires_grad_(True)
    targets.score(m, pixels, targets.predicted(m, pixels.detach())).sum().backward()
    assert pixels.grad is not None and pixels.grad.abs().sum() > 0
