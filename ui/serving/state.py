"""The one module that owns caching: what the app computes, once, for every session.

Models and everything computed from them (prepared images, traces, experiment traces, attention
summaries, the patch PCA, generations) share ONE byte budget (ui/serving/cache.py: 2 GB by default,
`-- --cache-mb N` or VIT_EXPLAINER_CACHE_MB), least recently used dropped first; what was
computed with a model goes with it. Traces are keyed by (sha256 of the image bytes, model name,
mask, text), never by hashing a PIL image. A model at another input size has its own name,
'NAME@288px' (`sized`), so everything computed at that size is keyed by the size too. Values
are read-only, so sessions share them without copies. Forward passes run on one worker thread
shared by all sessions (ui/serving/worker.py says why). Models by name, the budget and the worker
live
in ui/serving/budget.py; they are named here too, as the pages call them (state.get_model...).
Nothing here reads the session: the page passes its image, model and mask (ui/selection/session.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st
import torch
from PIL import Image

import vit_core
from ui.selection.inputs import Input
from ui.serving.budget import (  # noqa: F401  loading by name: the pages call them as state.get_model...
    forward_worker,
    get_model,
    held,
    shared_cache,
    size_pair,
    sized,
    stepped,
    training_log,
)
from vit_core import display_crop, load_image, preprocess, run_trace
from vit_core.io.ref import ModelRef


@dataclass(frozen=True)
class Prepared:
    crop: Image.Image  # the img_size x img_size RGB crop the model sees
    pixels: torch.Tensor  # [1, 3, H, W] normalised


@held
def _prepare(key: str, model_name: str, _raw: bytes) -> Prepared:
    config = get_model(model_name).config
    img = load_image(_raw)
    return Prepared(display_crop(img, config), preprocess(img, config))


def prepare(inp: Input, model_name: str) -> Prepared:
    """Decode and preprocess once per (image, model); raises ImageError for unreadable files."""
    return _prepare(inp.key, model_name, inp.data)


@held
def _trace(key: str, model_name: str, mask: str | None, text: tuple | None, _pixels):
    model = get_model(model_name)
    return forward_worker().run(run_trace, model, _pixels, text_ids=text, mask=mask, model=model)


def same_mask(model_name: str, mask):
    """`mask` as a cache key: None for the mask the model was trained with, however it was
    asked for ("full" for a classifier is None), so one pass serves both."""
    return None if mask == get_model(model_name).config.default_mask else mask


def trace(inp: Input, model_name: str, mask: str | None = None, text_ids=None):
    """The cached trace for this image, model, mask and text (computed once, then shared)."""
    pixels = prepare(inp, model_name).pixels
    text = None if text_ids is None else tuple(int(i) for i in text_ids)
    return _trace(inp.key, model_name, same_mask(model_name, mask), text, pixels)


@held
def _logits(key: str, model_name: str, mask: str | None, text: tuple | None, _pixels):
    model = get_model(model_name)
    return forward_worker().run(_final_logits, model, _pixels, text, mask, model=model)


def _final_logits(model, pixels, text, mask):
    return run_trace(model, pixels, text_ids=text, mask=mask).logits.clone()


def logits(inp: Input, model_name: str, mask: str | None = None, text_ids=None):
    """The logits of trace(inp, model_name, mask, text_ids) without keeping the trace (a lean
    ViT-B/16 trace is 8 MB; its logits 4 KB): for pages that read only the answer. The cached
    trace's own logits if that trace is cached."""
    pixels = prepare(inp, model_name).pixels
    text = None if text_ids is None else tuple(int(i) for i in text_ids)
    mask = same_mask(model_name, mask)
    if ("_trace", inp.key, model_name, mask, text) in shared_cache():
        return _trace(inp.key, model_name, mask, text, pixels).logits
    return _logits(inp.key, model_name, mask, text, pixels)


def scores(inp: Input, model_name: str, text: str, mask: str | None = None):
    """Each word of `text` scored by teacher forcing, read from the cached trace of this image
    fed with that text (vit_core.score_text, without a second forward pass)."""
    from vit_core.explain.generation import score_logits, tokenizer_for

    model = get_model(model_name)
    tok = tokenizer_for(model)
    enc = tok.encode(text, max_len=model.config.max_text_len)
    return score_logits(tok, enc, trace(inp, model_name, mask=mask, text_ids=enc.ids).logits)


@held
def _experiment(key: str, model_name: str, kind: str, arg: tuple, text: tuple | None,
                mask: str | None, _pixels):
    model = get_model(model_name)
    return forward_worker().run(_run_experiment, model, kind, arg, text, mask, _pixels,
                               model=model)


def _run_experiment(model, kind: str, arg: tuple, text: tuple | None, mask: str | None, _pixels):
    from vit_core.explain import interventions

    return interventions.run(model, _pixels, kind, arg, text_ids=text, mask=mask)


def experiment(inp: Input, model_name: str, kind: str, arg: tuple = (), text_ids=None,
               mask: str | None = None):
    """A cached intervention trace (vit_core.explain.interventions.run) for this image, model,
    intervention, text and mask (the mask of the run before the change: the sidebar's)."""
    text = None if text_ids is None else tuple(int(i) for i in text_ids)
    return _experiment(inp.key, model_name, kind, tuple(arg), text, same_mask(model_name, mask),
                       prepare(inp, model_name).pixels)


@held
def _experiment_caption(key: str, model_name: str, kind: str, arg: tuple, mask: str | None,
                        _pixels):
    from vit_core.explain import interventions

    # one word per turn on the worker, like `_generation`
    model = forward_worker().stepwise(get_model(model_name))
    return interventions.caption(model, _pixels, kind, arg, mask)


def experiment_caption(inp: Input, model_name: str, kind: str, arg: tuple = (),
                       mask: str | None = None):
    """The greedy caption with an intervention in place, cached like `experiment`."""
    return _experiment_caption(inp.key, model_name, kind, tuple(arg),
                               same_mask(model_name, mask), prepare(inp, model_name).pixels)


@held
def _generation(key: str, model_name: str, mask: str | None, settings: tuple, _pixels):
    from vit_core import generate

    max_new, temperature, top_k, seed = settings
    # one word per turn on the worker: a new student's first view need not wait for the caption
    model = forward_worker().stepwise(get_model(model_name))
    return generate(model, _pixels, max_new_tokens=max_new,
                    temperature=temperature, top_k=top_k, seed=seed, mask=mask)


def generation(inp: Input, model_name: str, max_new_tokens: int | None = None,
               temperature: float = 0.0, top_k: int | None = None, seed: int | None = None,
               mask: str | None = None):
    """vit_core.generate for this image, cached per image, model, mask and settings."""
    settings = (max_new_tokens, float(temperature), top_k, seed)
    return _generation(inp.key, model_name, same_mask(model_name, mask), settings,
                       prepare(inp, model_name).pixels)


def caption_pass(inp: Input, model_name: str, mask: str | None = None):
    """A captioner's greedy caption and the pass in which it wrote its last token: the image
    with [SOS] and every word before that token, the text stream the pages show.

    Returns:
        (the generation, the text ids fed, the trace of that pass).
    """
    from vit_core.explain.generation import tokenizer_for
    from vit_core.explain.stages import caption_input

    model = get_model(model_name)
    gen = generation(inp, model_name, mask=mask)
    ids = caption_input(tokenizer_for(model).sos_id, gen.ids, model.config.max_text_len)
    return gen, ids, trace(inp, model_name, mask=mask, text_ids=ids)


def greedy_caption(inp: Input, model_name: str, mask: str | None = None) -> str:
    """The caption a text model writes for this image, greedily."""
    return generation(inp, model_name, mask=mask).text


@dataclass(frozen=True)
class WindowTop1:
    """A classifier's top-1 on held-out scenes with full attention and with windows of
    size x size patches, plain and shifted on alternate blocks (None for 1 x 1: no shift)."""

    n: int  # held-out scenes
    seed: int  # their block of held-out seeds (vit_core.scenes.world.heldout_seeds)
    size: int
    full: float
    plain: float
    shifted: float | None


@st.cache_resource(show_spinner=False, max_entries=16)
def window_top1(model_name: str, size: int) -> WindowTop1:
    """vit_core.scenes.windowed.top1_by_mask for this classifier and window size, once per
    process (a few seconds of passes for the bundled classifier: 200 scenes, three masks)."""
    from vit_core.masks import window_name
    from vit_core.scenes.windowed import HELDOUT_N, HELDOUT_SEED, masks_for, top1_by_mask

    model = get_model(model_name)
    names = masks_for([size])
    top1 = forward_worker().run(top1_by_mask, model, names, timeout=600, model=model)
    return WindowTop1(HELDOUT_N, HELDOUT_SEED, size, top1["full"], top1[window_name(size)],
                      top1.get(window_name(size, True)))


@held
def weight_views(model_name: str) -> dict:
    """Per-model pictures of the weights (W_E's principal components, position similarity,
    similarity by grid distance), computed once per model instead of on every rerun of the
    embeddings page (the distance means are ~150 small torch calls, each of which waits for the
    interpreter lock when other students' pages are busy)."""
    from vit_core.explain.embeddings import (
        embedding_filters,
        position_distance_stats,
        position_similarity,
    )

    model = get_model(model_name)
    c = model.config
    sim = position_similarity(model.pos_embed.detach(), c.grid, c.num_prefix_tokens)
    stats = position_distance_stats(model.pos_embed.detach(), c.grid, c.num_prefix_tokens)
    base = str(ModelRef.parse(model_name).unsized)
    if base != model_name:  # the model at another size: W_E is its own size's, shared
        own = weight_views(base)
        return {"filters": own["filters"], "ratio": own["ratio"], "pos_sim": sim.numpy(),
                "pos_stats": stats}
    comps, ratio = embedding_filters(model.patch_embed.proj.weight.detach(),
                                     k=min(28, c.embed_dim))
    return {"filters": comps.numpy(), "ratio": ratio.tolist(), "pos_sim": sim.numpy(),
            "pos_stats": stats}


@held
def _attention_summary(key: str, model_name: str, mask: str | None, _trace) -> dict:
    from vit_core.explain.attention import summarise

    # on the worker: it recomputes every block up to its pattern (a quarter of a pass), and
    # thirty students' pages doing that on their own threads at once only fight for the cores
    return forward_worker().run(summarise, _trace, model=get_model(model_name))


def layer_block(inp: Input, model_name: str, mask: str | None, layer: int) -> None:
    """Block `layer`'s internals in the cached trace, recomputed now on the worker (a lean
    trace keeps the block read last): the Attention stage's first steps read them."""
    tr = trace(inp, model_name, mask=mask)
    layer = min(max(int(layer), 0), tr.config.depth - 1)
    forward_worker().run(tr.__getitem__, f"blocks.{layer}.attn.scores", model=get_model(model_name))


def attention_summary(inp: Input, model_name: str, mask: str | None) -> dict:
    """Rollout, attention distance, entropy and the CLS / DIST rows of every layer of the
    trace (vit_core.explain.attention.summarise), computed once per trace."""
    mask = same_mask(model_name, mask)
    return _attention_summary(inp.key, model_name, mask, trace(inp, model_name, mask=mask))


@held
def _sublayer_norms(key: str, model_name: str, mask: str | None, _trace) -> dict:
    from vit_core.explain.tokens import sublayer_norms

    # the attention half of every block again (about 40 % of a pass): on the worker
    return forward_worker().run(sublayer_norms, _trace, model=get_model(model_name))


def sublayer_norms(inp: Input, model_name: str, mask: str | None) -> dict:
    """What each block's attention and MLP add to every token, in norms ([L, S] each), once per
    trace: the MLP page's residual-stream chart would otherwise recompute them on every rerun."""
    mask = same_mask(model_name, mask)
    return _sublayer_norms(inp.key, model_name, mask, trace(inp, model_name, mask=mask))


@held
def _patch_pca(key: str, model_name: str, mask: str | None, _trace):
    from vit_core.explain.tokens import pca_rgb

    c = _trace.config
    pre = c.num_prefix_tokens
    return pca_rgb(_trace["ln_final"][pre:pre + c.num_patches], c.grid).numpy()


def patch_pca(inp: Input, model_name: str, mask: str | None):
    """The final patch tokens' first three principal components as a [g, g, 3] RGB grid,
    computed once per trace (an SVD of N x D)."""
    mask = same_mask(model_name, mask)
    return _patch_pca(inp.key, model_name, mask, trace(inp, model_name, mask=mask))


# ---- MAE
# The masked-autoencoder stage (ui/stages/mae.py): the MAE, and one pass of it per image, model
# and masking. Its encoder is what get_model gives under the same name (prepare() reads its
# config), so the image is prepared once for both.
@dataclass(frozen=True)
class MAERun:
    out: vit_core.MAEOutput  # the pass, batch of 1
    pixels: torch.Tensor  # [1, 3, H, W] the normalised input
    predicted: torch.Tensor  # [1, 3, H, W] every patch as the decoder predicts it
    pasted: torch.Tensor  # [1, 3, H, W] the visible patches as they are, hidden ones predicted


def get_mae(name: str):
    """The masked autoencoder `name` (vit_core.load_mae; never downloads), loaded once and kept
    in the byte budget."""
    return shared_cache().get(("get_mae", name),
                              lambda: vit_core.load_mae(name, local_files_only=True))


def _run_mae(mae, pixels, ratio: float, seed: int, hidden: tuple | None) -> MAERun:
    from vit_core.mae import noise_hiding

    N = mae.encoder.config.num_patches
    if hidden is None:  # random masking at `ratio`, the noise drawn from `seed`
        noise, keep = torch.rand(1, N, generator=torch.Generator().manual_seed(seed)), None
    else:  # exactly the chosen patches
        noise, keep = noise_hiding(N, hidden), N - len(hidden)
    with torch.inference_mode():
        out = mae(pixels, noise=noise, mask_ratio=ratio, n_visible=keep)
        return MAERun(out, pixels, mae.reconstruction(out, pixels),
                      mae.reconstruction(out, pixels, paste_visible=True))


@held
def _mae_run(key: str, model_name: str, ratio: float, seed: int, hidden: tuple | None, _pixels):
    mae = get_mae(model_name)
    return forward_worker().run(_run_mae, mae, _pixels, ratio, seed, hidden, model=mae)


def mae_run(inp: Input, model_name: str, ratio: float, seed: int = 0,
            hidden: tuple | None = None) -> MAERun:
    """MAE `model_name` on this image: random masking at `ratio` from noise seeded `seed`, or
    (`hidden` given) exactly those patches hidden. Cached per image, model and masking."""
    hidden = None if hidden is None else tuple(sorted(int(i) for i in hidden))
    return _mae_run(inp.key, model_name, float(ratio), int(seed), hidden,
                    prepare(inp, model_name).pixels)
