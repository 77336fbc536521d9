"""vit_core/recorded.py: a pass replayed from its TorchScript recording is the eager pass.

The reference is `model(...)` itself, run eagerly with recording switched off; every output must
be equal bit for bit. (The lean trace's names against an eager capture pass are checked in
test_lean_trace.py, which now goes through the recording.)
"""

import pytest
import torch

from tests import test_lean_trace as lean
from tests.test_model import SMALL, TEXT, randomised
from vit_core import generate, load_model, recorded, run_trace
from vit_core.explain import interventions

IDS = torch.tensor([[1, 4, 7, 9, 5]])


@pytest.fixture(autouse=True)
def recording_on(monkeypatch):
    monkeypatch.setenv(recorded.ENV, "1")  # off by default (the README says why)
    monkeypatch.setattr(recorded, "_recordings", {})  # counts start at 0 in every test


def eager(model, *args, **kwargs):
    with torch.inference_mode():
        return model(*args, **kwargs)


def replayed(model, *args, **kwargs):
    with torch.inference_mode():
        return recorded.forward(model, *args, **kwargs)


def pixels(model, seed=1):
    c = model.config
    return torch.randn(1, c.in_chans, c.img_size, c.img_size,
                       generator=torch.Generator().manual_seed(seed))


def as_forward(kwargs: dict) -> dict:
    """test_lean_trace's run_trace arguments as ViT.forward's (text ids get a batch axis)."""
    return {k: (v[None] if k == "text_ids" else v) for k, v in kwargs.items()}


# test_lean_trace's models and settings, and a bundled captioner
CASES = {name: (make, as_forward(kwargs)) for name, (make, kwargs) in lean.CASES.items()}
CASES["bundled captioner, causal"] = (lambda: load_model("shapes-captioner-causal"),
                                      {"text_ids": IDS, "mask": "causal"})


@pytest.mark.parametrize("case", CASES)
def test_a_replayed_pass_equals_the_eager_pass_bit_for_bit(case):
    make, kwargs = CASES[case]
    model = make()
    x = pixels(model)
    expected = eager(model, x, **kwargs)
    for _ in range(3):  # the recording run, then replays
        got = replayed(model, x, **kwargs)
        assert got.shape == expected.shape and torch.equal(got, expected), case
    assert recorded.count(model) == 1
    other = pixels(model, seed=2)  # a new image replays the same recording
    assert torch.equal(replayed(model, other, **kwargs), eager(model, other, **kwargs))
    assert recorded.count(model) == 1


def test_new_shapes_and_settings_get_their_own_recording_and_each_is_right():
    model = randomised(TEXT)
    x = pixels(model)
    for n in range(1, 6):  # a caption grows one token at a time
        for mask in ("causal", "prefix", "full"):
            ids = IDS[:, :n]
            assert torch.equal(replayed(model, x, ids, mask=mask),
                               eager(model, x, ids, mask=mask)), (n, mask)
    assert recorded.count(model) == 10  # causal and prefix: one recording, the mask an input


def test_weights_edited_or_replaced_and_a_twin_model_use_the_one_recording():
    model = randomised(SMALL)
    x = pixels(model)
    before = replayed(model, x)
    with torch.no_grad():
        model.head.weight.mul_(-2.0)
    after = replayed(model, x)
    assert not torch.equal(before, after) and torch.equal(after, eager(model, x))
    model.head.weight = torch.nn.Parameter(torch.ones_like(model.head.weight))
    assert torch.equal(replayed(model, x), eager(model, x))
    twin = randomised(SMALL, seed=7)  # the same architecture, other weights
    assert torch.equal(replayed(twin, x), eager(twin, x))
    assert not torch.equal(replayed(twin, x), replayed(model, x))
    assert recorded.count(model) == 1


def test_a_model_with_buffers_runs_eagerly():
    model = randomised(SMALL)
    model.register_buffer("scale", torch.ones(1))
    x = pixels(model)
    assert torch.equal(replayed(model, x), eager(model, x))
    assert recorded.count(model) == 0


def test_a_subclass_with_its_own_forward_or_any_other_module_is_called_as_given(monkeypatch):
    """A recording is of ViT.forward; a model that changes forward runs its own, with the
    arguments it was given (no extra head_mask or positions it may not take)."""
    from vit_core.model import ViT

    class Doubled(ViT):
        def forward(self, pixels):
            return 2 * super().forward(pixels)

    model = Doubled(SMALL).eval()
    model.load_state_dict(randomised(SMALL).state_dict())
    x = pixels(model)
    assert torch.equal(replayed(model, x), eager(model, x))
    assert recorded.count(model) == 0
    other = torch.nn.Linear(3, 2).eval()
    assert torch.equal(replayed(other, torch.ones(1, 3)), eager(other, torch.ones(1, 3)))
    for env in ("0", "1"):
        monkeypatch.setenv(recorded.ENV, env)
        with pytest.raises(TypeError):
            replayed(randomised(SMALL), x, unknown=1)


def test_off_by_the_environment_with_gradients_or_in_training_the_pass_runs_eagerly(monkeypatch):
    model = randomised(SMALL)
    x = pixels(model)
    monkeypatch.setenv(recorded.ENV, "0")
    assert torch.equal(replayed(model, x), eager(model, x))
    run_trace(model, x)
    assert recorded.count(model) == 0
    monkeypatch.setenv(recorded.ENV, "1")
    out = recorded.forward(model, x)  # gradients on: a recording is for inference only
    assert out.requires_grad and recorded.count(model) == 0
    model.train()
    with torch.inference_mode():
        recorded.forward(model, x)
    assert recorded.count(model) == 0


def test_a_lean_trace_and_its_eager_twin_agree_on_every_name():
    model = load_model("shapes-captioner-prefix")
    x = pixels(model)
    fast = run_trace(model, x, text_ids=IDS[0], mask="causal")
    assert recorded.count(model) == 1
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(recorded.ENV, "0")
        slow = run_trace(model, x, text_ids=IDS[0], mask="causal")
    assert fast.names() == slow.names()
    for name in fast.names():
        assert torch.equal(fast[name], slow[name]), name


def test_captions_with_and_without_recordings_are_the_same_word_for_word(monkeypatch):
    model = load_model("shapes-captioner-prefix")
    x = pixels(model, seed=5)
    fast = generate(model, x)
    cut = interventions.caption(model, x, "heads", ((0, 0), (1, 1)))
    assert recorded.count(model) >= len(fast.ids)
    monkeypatch.setenv(recorded.ENV, "0")
    slow = generate(model, x)
    assert fast.ids == slow.ids and fast.chosen == slow.chosen
    assert all(torch.equal(a, b) for a, b in zip(fast.probs, slow.probs, strict=True))
    assert cut.ids == interventions.caption(model, x, "heads", ((0, 0), (1, 1))).ids


def test_bad_input_raises_the_models_own_error():
    model = randomised(SMALL)
    with pytest.raises(ValueError, match="reads 3x32x32 images"):
        replayed(model, torch.zeros(1, 3, 16, 16))
    with pytest.raises(ValueError, match="no text stream"):
        replayed(model, pixels(model), IDS)


@pytest.mark.parametrize("case", ["classifier, head_mask", "captioner, causal",
                                  "deit distilled, head_mask, no positions"])
def test_the_attention_summary_replayed_equals_its_eager_walk(case, monkeypatch):
    from vit_core.explain.attention import summarise

    make, kwargs = CASES[case]
    model = make()
    x = pixels(model)
    kwargs = lean.CASES[case][1]  # run_trace's arguments
    fast = summarise(run_trace(model, x, **kwargs))
    assert recorded.count(model) == 2  # the pass and the walk
    monkeypatch.setenv(recorded.ENV, "0")
    slow = summarise(run_trace(model, x, **kwargs))
    for field in ("rollout", "prefix_rows"):
        assert torch.equal(fast[field], slow[field]), field
    for field in ("distance", "entropy", "prefix_share"):
        assert (fast[field] == slow[field]).all(), field


def test_off_unless_asked(monkeypatch):
    monkeypatch.delenv(recorded.ENV)
    model = randomised(SMALL)
    run_trace(model, pixels(model))
    with torch.inference_mode():
        recorded.forward(model, pixels(model))
    assert recorded.count(model) == 0


@pytest.mark.parametrize("case", list(lean.CASES))
def test_a_replayed_lean_trace_gives_every_name_of_the_eager_pass(case):
    make, kwargs = lean.CASES[case]
    model = make()
    c = model.config
    torch.manual_seed(3)
    x = torch.randn(1, c.in_chans, c.img_size, c.img_size)
    tr = run_trace(model, x, **kwargs)
    assert recorded.count(model) == 1
    lean.assert_same(tr, lean.eager(model, x, **kwargs))
