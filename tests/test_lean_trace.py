"""The lean trace against an eager pass that keeps everything.

The reference here does not go through `run_trace`: it runs the model inside `hooks.capture()`,
which keeps every hook point's tensor. A lean trace must give every name, bit for bit, with the
same names in the same order, and hold only what was read.
"""

import random
import threading
from pathlib import Path

import pytest
import torch

from tests.support import SMALL, TEXT, randomised
from vit_core import ViTConfig, load_model, make_mask, run_trace
from vit_core.hooked import experiment_hooks
from vit_core.hooks import capture, writing
from vit_core.trace import KEEP_BLOCKS

DEIT = Path(__file__).parent / "fixtures" / "hub" / "tiny-org" / "deit-distilled"
SEG = ViTConfig(img_size=32, patch_size=8, embed_dim=48, depth=3, num_heads=3, num_classes=4,
                global_pool="avg", fc_norm=True, seg_classes=3, seg_upsample=2)
WIDE = ViTConfig(img_size=64, patch_size=8, embed_dim=192, depth=3, num_heads=6, num_classes=7)
IDS = torch.tensor([1, 4, 7, 9, 5])


def eager(model, pixels, text_ids=None, mask=None, head_mask=None, positions=True):
    """Every intermediate of one plain forward pass, by name, in forward order, batch removed."""
    if isinstance(mask, str) or mask is None:
        mask = mask or model.config.default_mask
        n_text = 0 if text_ids is None else len(text_ids)
        mask = None if mask == "full" else make_mask(mask, model.config.num_image_tokens, n_text)
    ids = None if text_ids is None else text_ids[None]
    hooks = experiment_hooks(model, head_mask, positions)  # head switches, positions: hooks
    with torch.inference_mode(), writing(hooks), capture() as store:
        model(pixels, ids, mask="full" if mask is None else mask)
    return {name: t[0] for name, t in store.items()}


def assert_same(trace, ref):
    assert trace.names() == list(ref) == list(trace)
    for name, expected in ref.items():
        got = trace[name]
        assert got.shape == expected.shape, name
        assert torch.equal(got, expected), (name, (got - expected).abs().max())  # bit for bit


def deit():
    return load_model(str(DEIT))


CASES = {
    "classifier": (lambda: randomised(SMALL), {}),
    "classifier, head_mask": (lambda: randomised(SMALL),
                              {"head_mask": torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])}),
    "classifier, no positions": (lambda: randomised(SMALL), {"positions": False}),
    "captioner, default (prefix)": (lambda: randomised(TEXT), {"text_ids": IDS}),
    "captioner, full": (lambda: randomised(TEXT), {"text_ids": IDS, "mask": "full"}),
    "captioner, causal": (lambda: randomised(TEXT), {"text_ids": IDS, "mask": "causal"}),
    "captioner, prefix": (lambda: randomised(TEXT), {"text_ids": IDS, "mask": "prefix"}),
    "captioner, causal, head_mask, no positions": (
        lambda: randomised(TEXT), {"text_ids": IDS, "mask": "causal", "positions": False,
                                   "head_mask": torch.tensor([[0.0, 1.0, 1.0], [1.0, 1.0, 0.0]])}),
    "captioner, custom mask": (lambda: randomised(TEXT),
                               {"text_ids": IDS, "mask": make_mask("causal", 16, 5) * 0.5}),
    "deit distilled": (deit, {}),
    "deit distilled, head_mask, no positions": (
        deit, {"positions": False, "head_mask": torch.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])}),
    "avg pool, fc_norm, segmentation head": (lambda: randomised(SEG), {}),
    "wider (multithreaded kernels)": (lambda: randomised(WIDE), {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_name_is_what_the_eager_pass_computed(case):
    make, kwargs = CASES[case]
    model = make()
    c = model.config
    torch.manual_seed(1)
    pixels = torch.randn(1, c.in_chans, c.img_size, c.img_size)
    ref = eager(model, pixels, **kwargs)
    assert_same(run_trace(model, pixels, **kwargs), ref)
    assert_same(run_trace(model, pixels, lean=False, **kwargs), ref)
    # block by block, kept nowhere: the same tensors again
    tr = run_trace(model, pixels, **kwargs)
    for layer, (block, pattern) in enumerate(zip(tr.blocks(), tr.patterns(), strict=True)):
        prefix = f"blocks.{layer}."
        assert list(block) == [n.removeprefix(prefix) for n in ref if n.startswith(prefix)]
        for short, t in block.items():
            assert torch.equal(t, ref[prefix + short]), prefix + short
        assert torch.equal(pattern, ref[prefix + "attn.pattern"])
    residuals = list(tr.residuals())
    assert len(residuals) == c.depth + 1 and torch.equal(residuals[0], ref["embed"])
    for layer, r in enumerate(residuals[1:]):
        assert torch.equal(r, ref[f"blocks.{layer}.resid_post"])


@pytest.mark.parametrize("case", list(CASES))
def test_sublayer_norms_are_the_eager_pass_s_without_running_an_mlp_again(case):
    """What each block's attention and MLP add, in norms per token: a lean trace recomputes
    only the attention half of each block (no MLP runs, nothing is kept), a full trace reads
    its tensors; both agree with float64 norms of the eager pass's attn_out and mlp_out."""
    make, kwargs = CASES[case]
    model = make()
    c = model.config
    torch.manual_seed(2)
    pixels = torch.randn(1, c.in_chans, c.img_size, c.img_size)
    ref = eager(model, pixels, **kwargs)
    expected = {part: torch.stack([torch.linalg.vector_norm(ref[f"blocks.{i}.{part}_out"].double(),
                                                            dim=-1) for i in range(c.depth)])
                for part in ("attn", "mlp")}
    tr = run_trace(model, pixels, **kwargs)
    full = run_trace(model, pixels, lean=False, **kwargs)
    held = tr.nbytes()
    mlp_runs = []
    hooks = [b.mlp.register_forward_hook(lambda *_: mlp_runs.append(1)) for b in model.blocks]
    try:
        for trace in (tr, full):
            got = trace.sublayer_norms()
            for part in ("attn", "mlp"):
                assert got[part].shape == (c.depth, ref["embed"].shape[0])
                torch.testing.assert_close(got[part].double(), expected[part], rtol=1e-5,
                                           atol=1e-5)
    finally:
        for h in hooks:
            h.remove()
    assert mlp_runs == []  # the MLP half was not run again
    assert tr.nbytes() == held  # and nothing new is kept
    torch.testing.assert_close(tr.sublayer_norms()["attn"], full.sublayer_norms()["attn"],
                               rtol=0, atol=0)  # attn_out itself is recomputed exactly


@pytest.mark.filterwarnings("ignore:Ignored pooler")
def test_the_headless_encoder_has_no_logits_and_the_rest_is_exact():
    model = load_model(str(DEIT.parent / "vit-headless"))
    c = model.config
    pixels = torch.randn(1, c.in_chans, c.img_size, c.img_size)
    ref = eager(model, pixels)
    assert "logits" not in ref and "logits" not in run_trace(model, pixels)
    assert_same(run_trace(model, pixels), ref)


def held_by(tensors) -> int:
    return sum({t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
                for t in tensors}.values())


def test_reading_one_name_recomputes_and_keeps_only_its_block():
    model = randomised(WIDE)
    pixels = torch.randn(1, 3, 64, 64)
    ref = eager(model, pixels)
    tr = run_trace(model, pixels)
    kept = ["patches", "embed", "logits"] + [f"blocks.{i}.resid_post" for i in range(3)]
    lean = tr.nbytes()
    assert lean == held_by(ref[n] for n in kept)
    full = run_trace(model, pixels, lean=False).nbytes()
    assert lean < full / 10

    # names, membership, length and the kept names cost nothing
    assert "blocks.1.attn.pattern" in tr and len(tr) == len(ref) and tr.names() == list(ref)
    for name in ["embed", "blocks.0.resid_pre", "blocks.2.resid_pre", "blocks.2.resid_post",
                 "logits", "patches"]:
        tr[name]
    assert tr.nbytes() == lean

    # one name of block 1: block 1's internals, and nothing of blocks 0 or 2
    tr["blocks.1.attn.pattern"]
    block1 = [n for n in ref if n.startswith("blocks.1.") and not n.endswith("resid_pre")
              and not n.endswith("resid_post")]
    grown = tr.nbytes() - lean
    assert grown == held_by(ref[n] for n in block1)
    assert grown < (full - lean) / 2
    for name in block1:  # the rest of block 1 is already there
        tr[name]
    assert tr.nbytes() - lean == grown

    # aggregates over all layers keep nothing new
    sum(p.sum() for p in tr.patterns())
    sum(b["mlp_out"].sum() for b in tr.blocks())
    assert tr.nbytes() - lean == grown

    # patch_embed and ln_final: one tensor each
    tr["patch_embed"]
    tr["ln_final"]
    assert tr.nbytes() - lean == grown + held_by([ref["patch_embed"]]) + held_by([ref["ln_final"]])

    # everything read: what the pass kept, patch_embed, ln_final and the KEEP_BLOCKS blocks
    # read last, never every block (the full trace keeps them all)
    for name in tr:
        tr[name]
    last = [n for n in ref if n.startswith(tuple(f"blocks.{b}." for b in
                                                  range(SMALL.depth - KEEP_BLOCKS, SMALL.depth)))
            and not n.endswith(("resid_pre", "resid_post"))]
    assert tr.nbytes() == lean + held_by(ref[n] for n in last) + held_by(
        [ref["patch_embed"], ref["ln_final"]])
    assert tr.nbytes() < full
    for layer in range(SMALL.depth):  # and an evicted block comes back with the same numbers
        for name in [n for n in ref if n.startswith(f"blocks.{layer}.")]:
            assert torch.equal(tr[name], ref[name]), name


def test_block_view_is_kept_and_read_only():
    model = randomised(SMALL)
    tr = run_trace(model, torch.randn(1, 3, 32, 32))
    lean = tr.nbytes()
    view = tr.block(1)
    assert tr.nbytes() > lean
    assert view["attn.pattern"] is tr["blocks.1.attn.pattern"]
    assert view["resid_pre"] is tr["blocks.0.resid_post"]
    with pytest.raises(TypeError):
        view["ln1"] = torch.zeros(1)
    with pytest.raises(IndexError, match="blocks 0 to 1"):
        tr.block(2)


ONE_BLOCK = ViTConfig(img_size=64, patch_size=8, embed_dim=192, depth=KEEP_BLOCKS,
                      num_heads=6, num_classes=7)  # every block it has stays kept


@pytest.mark.parametrize("cfg", [WIDE, ONE_BLOCK], ids=["evicting", "keeping every block"])
def test_eight_threads_reading_one_trace_get_the_same_tensors(cfg):
    """Equal to the eager pass in every thread; where no block is ever evicted (depth <=
    KEEP_BLOCKS), each block is recomputed once, by one thread: every thread gets the same
    tensor objects."""
    model = randomised(cfg)
    pixels = torch.randn(1, 3, 64, 64)
    ref = eager(model, pixels)
    tr = run_trace(model, pixels)
    barrier = threading.Barrier(8)
    results, errors = [None] * 8, []

    def read(i):
        try:
            names = list(ref)
            random.Random(i).shuffle(names)
            barrier.wait()
            got = {name: tr[name] for name in names}
            if i % 2:  # half of them also stream the blocks meanwhile
                for layer, pattern in enumerate(tr.patterns()):
                    assert torch.equal(pattern, ref[f"blocks.{layer}.attn.pattern"])
            results[i] = got
        except BaseException as e:  # re-raised in the main thread below
            errors.append(e)

    threads = [threading.Thread(target=read, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    assert all(got is not None and got.keys() == ref.keys() for got in results)
    for got in results:
        for name, t in got.items():
            assert torch.equal(t, ref[name]), name
    if cfg.depth <= KEEP_BLOCKS:
        for got in results:
            for name, t in got.items():
                assert t is results[0][name], name


def test_recomputing_with_changed_weights_is_refused():
    model = randomised(SMALL)
    tr = run_trace(model, torch.randn(1, 3, 32, 32))
    tr["blocks.0.ln1"]
    with torch.no_grad():
        model.blocks[1].mlp.fc1.weight.mul_(2)
    tr["blocks.0.attn.z"]  # kept already: still the pass's numbers
    with pytest.raises(RuntimeError, match="weights changed"):
        tr["blocks.1.ln1"]


def test_the_callers_masks_may_change_after_the_trace():
    model = randomised(TEXT)
    pixels = torch.randn(1, 3, 32, 32)
    mask, heads = make_mask("causal", 16, 5), torch.ones(2, 3)
    ref = eager(model, pixels, IDS, mask=mask.clone(), head_mask=heads.clone())
    tr = run_trace(model, pixels, IDS, mask=mask, head_mask=heads)
    mask.zero_()
    heads.zero_()
    assert_same(tr, ref)


def test_a_lean_trace_keeps_only_the_blocks_read_last():
    """Visiting every layer (a page's layer slider) keeps KEEP_BLOCKS blocks, not all of them:
    the cache's measure of a trace stays true after pages read it."""
    cfg = ViTConfig(img_size=32, patch_size=8, embed_dim=48, depth=KEEP_BLOCKS + 3, num_heads=3,
                    num_classes=5)
    model = randomised(cfg)
    pixels = torch.randn(1, 3, 32, 32)
    ref = eager(model, pixels)
    tr = run_trace(model, pixels)
    lean = tr.nbytes()
    per_block = held_by(ref[n] for n in ref if n.startswith("blocks.0.")
                        and not n.endswith(("resid_pre", "resid_post")))
    for layer in range(cfg.depth):
        assert torch.equal(tr[f"blocks.{layer}.mlp.post"], ref[f"blocks.{layer}.mlp.post"])
        assert tr.nbytes() == lean + per_block * min(layer + 1, KEEP_BLOCKS)
    tr["blocks.0.ln1"]  # evicted long ago: recomputed, the same numbers
    assert torch.equal(tr["blocks.0.ln1"], ref["blocks.0.ln1"])
    assert tr.nbytes() == lean + per_block * KEEP_BLOCKS


@pytest.mark.parametrize("case", ["classifier", "captioner, causal", "deit distilled",
                                  "avg pool, fc_norm, segmentation head"])
def test_the_attention_summary_walks_the_layers_once_and_keeps_none_of_them(case):
    """summarise() (the Attention page's rollout, distances, entropy, prefix shares and CLS/DIST
    rows) against hand math in float64 on the eager pass's patterns; the lean trace it read
    holds no more than before."""
    from vit_core.explain.attention import summarise

    make, kwargs = CASES[case]
    model = make()
    c = model.config
    torch.manual_seed(3)
    pixels = torch.randn(1, c.in_chans, c.img_size, c.img_size)
    ref = eager(model, pixels, **kwargs)
    A = [ref[f"blocks.{i}.attn.pattern"].double() for i in range(c.depth)]
    pre, N, P = c.num_prefix_tokens, c.num_patches, c.patch_size
    joint = torch.eye(A[0].shape[-1], dtype=torch.float64)
    for a in A:
        m = 0.5 * torch.eye(a.shape[-1], dtype=torch.float64) + 0.5 * a.mean(0)
        joint = (m / m.sum(-1, keepdim=True)) @ joint
    rc = torch.tensor([(i // c.grid, i % c.grid) for i in range(N)], dtype=torch.float64)
    dist = ((rc[:, None] - rc[None]) ** 2).sum(-1).sqrt() * P  # patch centres, in pixels
    tr = run_trace(model, pixels, **kwargs)
    held = tr.nbytes()
    got = summarise(tr)
    assert tr.nbytes() == held
    torch.testing.assert_close(got["rollout"].double(), joint, rtol=1e-5, atol=1e-6)
    for layer, a in enumerate(A):
        pp = a[:, pre:pre + N, pre:pre + N]
        pp = pp / pp.sum(-1, keepdim=True)
        expected_dist = (pp * dist).sum(-1).mean(-1)
        plogp = torch.where(a > 0, a * a.log(), torch.zeros_like(a))
        expected = {"distance": expected_dist, "entropy": -plogp.sum(-1).mean(-1),
                    "prefix_share": a[:, pre:pre + N, :pre].sum(-1).mean(-1)}
        for field, want in expected.items():
            torch.testing.assert_close(torch.as_tensor(got[field][layer]).double(), want,
                                       rtol=1e-4, atol=1e-5, msg=f"{field}, layer {layer}")
        assert torch.equal(got["prefix_rows"][layer], ref[f"blocks.{layer}.attn.pattern"][:, :pre])


@pytest.mark.parametrize("case", list(CASES) + ["headless"])
def test_shape_says_every_tensor_s_shape_without_recomputing_it(case):
    """The model map and the stage table print shapes only: Trace.shape gives each name's shape
    as the eager pass made it, for every family, and reading shapes recomputes no block."""
    if case == "headless":
        model, kwargs = load_model(str(DEIT.parent / "vit-headless")), {}
    else:
        make, kwargs = CASES[case]
        model = make()
    c = model.config
    pixels = torch.randn(1, c.in_chans, c.img_size, c.img_size)
    ref = eager(model, pixels, **kwargs)
    tr = run_trace(model, pixels, **kwargs)
    held = tr.nbytes()
    assert {name: tuple(tr.shape(name)) for name in tr} == {
        name: tuple(t.shape) for name, t in ref.items()}
    assert tr.nbytes() == held and not tr._recomputed.tensors()
    tr["blocks.0.attn.pattern"]  # a block the trace now holds: its own tensor's shape
    assert tr.shape("blocks.0.mlp.pre") == ref["blocks.0.mlp.pre"].shape
    with pytest.raises(KeyError):
        tr.shape("blocks.0.attn.nothing")
