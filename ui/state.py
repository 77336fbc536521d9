"""The one module that owns caching (the session-state keys are defined in ui/keys.py).

Models and everything computed from them (prepared images, traces, experiment traces, attention
summaries, the patch PCA, generations) share ONE byte budget (ui/cache.py: 2 GB by default,
`-- --cache-mb N` or VIT_EXPLAINER_CACHE_MB), least recently used dropped first; what was
computed with a model goes with it. Traces are keyed by (sha256 of the image bytes, model name,
mask, text), never by hashing a PIL image. Values are read-only, so sessions share them without
copies. Forward passes run on one worker thread shared by all sessions (ui/worker.py says why).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import io
from dataclasses import dataclass

import streamlit as st
import torch
from PIL import Image

import vit_core
from vit_core import ImageError, display_crop, load_image, preprocess, run_trace
from vit_core.scenes import world

from . import cache, figures, keys, models, worker


@dataclass(frozen=True)
class Input:
    """What the user chose to look at."""

    key: str  # sha256 of the bytes: the cache key
    label: str  # shown to the user ("sample: a red ball on the grass", "upload: cat.jpg")
    data: bytes


@dataclass(frozen=True)
class Prepared:
    crop: Image.Image  # the img_size x img_size RGB crop the model sees
    pixels: torch.Tensor  # [1, 3, H, W] normalised


@st.cache_resource(show_spinner=False)
def shared_cache() -> cache.ByteLRU:
    """The one byte-bounded cache of every session (its budget read once: ui/cache.py)."""
    return cache.ByteLRU(int(cache.budget_mb() * cache.MB))


def held(fn):
    """Cache `fn` in shared_cache(), keyed by its name and the arguments whose names do not
    start with "_" (as st.cache_resource does); what it returns counts against the budget and
    belongs to the model its `model_name` argument names (dropped with that model)."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def cached(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        key = (fn.__name__,) + tuple(v for name, v in bound.arguments.items()
                                     if not name.startswith("_"))
        model = bound.arguments.get("model_name")
        return shared_cache().get(key, lambda: fn(*args, **kwargs),
                                  owner=None if model is None else _model_key(model))

    cached.clear = lambda: shared_cache().clear(lambda key: key[0] == fn.__name__)
    return cached


def _model_key(name: str) -> tuple:
    return ("get_model", name)


def get_model(name: str):
    """A model by picker name ('hf:ORG/NAME' from the local Hugging Face cache; a loaded file
    may carry options as 'PATH?heads=H'), loaded once and kept in the byte budget."""
    return shared_cache().get(_model_key(name), lambda: _load(name))


def _load(name: str):
    """Never downloads: in the app only the teacher fetches (ui/models.py)."""
    path, _, heads = name.partition("?heads=")
    options = {"num_heads": int(heads)} if heads else {}
    return vit_core.load_model(path, local_files_only=True, **options)


@st.cache_resource(max_entries=1024, show_spinner=False)
def qr_png(url: str) -> bytes:
    """The QR code of a share link (figures.qr_png), drawn once per link: the sidebar shows it
    on every script run, and drawing it each time took ~10 % of a classroom's script time."""
    return figures.qr_png(url)


@st.cache_resource(show_spinner=False)
def sample_seeds() -> list[int]:
    """Gallery scenes from held-out seeds (never trained on), starting with the notes' example."""
    red_ball = world.find_seed("a red ball on the grass", start=world.HELDOUT_BASE)
    rest = [s for s in world.heldout_seeds(7, seed=42) if s != red_ball]
    return [red_ball] + rest if red_ball is not None else rest


@st.cache_resource(max_entries=16, show_spinner=False)
def sample_bytes(seed: int) -> bytes:
    buf = io.BytesIO()
    world.make_scene(seed).image.save(buf, format="PNG")
    return buf.getvalue()


def sample_caption(seed: int) -> str:
    return world.scene_spec(seed).caption


@st.cache_resource(max_entries=16, show_spinner=False)
def composed_bytes(code: str) -> bytes:
    """PNG of a composed scene (world.Composition code), drawn by the scenes' own generator."""
    buf = io.BytesIO()
    world.compose(world.Composition.parse(code)).image.save(buf, format="PNG")
    return buf.getvalue()


def make_input(label: str, raw: bytes) -> Input:
    return Input(hashlib.sha256(raw).hexdigest(), label, raw)


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
    return worker.shared().run(run_trace, model, _pixels, text_ids=text, mask=mask, model=model)


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
    return worker.shared().run(_final_logits, model, _pixels, text, mask, model=model)


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


def image_error(inp: Input, model_name: str) -> str | None:
    """One sentence when `inp` cannot be read (the app then shows a sample scene), else None."""
    try:
        prepare(inp, model_name)
    except ImageError as e:
        what = inp.label.removeprefix("upload: ") if inp.label.startswith("upload: ") else \
            f"the {inp.label}"
        return f"{e} Showing a sample scene instead of {what}."
    return None


def current() -> tuple[Input, str]:
    """The input and model name chosen in the sidebar (set by app.py before the page runs)."""
    return st.session_state[keys.INPUT], st.session_state[keys.MODEL]


def load_current(text_free_note: bool = False):
    """(input, model name, model, prepared image, trace) for the page; a spinner on first use.

    A file that cannot be read shows one line and falls back to the default sample scene.

    Args:
        text_free_note: the page draws what image tokens compute inside the blocks; say so
            when the trace (fed no text) differs from a captioner's writing passes, i.e. when
            the mask lets image tokens read the text (the full mask).
    """
    inp, name = current()
    with st.spinner(f"Loading {name}…"):
        model = get_model(name)
    if st.session_state.get(keys.INPUT_ERROR):  # the sidebar already fell back to a sample
        st.error(st.session_state[keys.INPUT_ERROR])
    try:
        prep = prepare(inp, name)
    except ImageError as e:
        st.error(f"{e} Showing a sample scene instead.")
        seed = sample_seeds()[0]
        inp = make_input(f"sample: {sample_caption(seed)}", sample_bytes(seed))
        st.session_state[keys.INPUT] = inp
        prep = prepare(inp, name)
    with st.spinner(f"Running {name} on this image: one forward pass…"):
        tr = trace(inp, name, mask=chosen_mask())
    if not model.info.trained:
        st.warning(f"{name} has random weights: every shape and number here is real, but "
                   f"nothing was learned, so patterns and predictions mean nothing.")
    note = models.honesty_note(model, inp.label)
    if note:
        st.info(note, icon=":material/info:")
    if text_free_note and model.config.has_text and tr.mask_kind == "full":
        st.caption("This page shows the pass over the image alone, with no text fed. Under the "
                   "full mask the image tokens also read the words while the model writes a "
                   "caption, so inside the blocks its writing passes differ from this one; the "
                   "Masks and Logits pages feed text.")
    return inp, name, model, prep, tr


def chosen_mask() -> str | None:
    """The sidebar's attention mask: None means the one the model was trained with."""
    mask = st.session_state.get(keys.MASK, "trained")
    return None if mask == "trained" else mask


SIDEBAR_MASK = object()  # a default meaning "the mask chosen in the sidebar" (read in a script run)


def trace_npz(inp: Input, model_name: str, mask: str | None | object = SIDEBAR_MASK) -> bytes:
    """The trace as a compressed .npz: every trace name, plus `mask` (the additive mask used).

    A download button calls this when clicked, on a thread of its own where st.session_state
    does not exist: such a caller must pass `mask` (chosen_mask() read in the script run).
    """
    import numpy as np

    tr = trace(inp, model_name, mask=chosen_mask() if mask is SIDEBAR_MASK else mask)
    buf = io.BytesIO()
    np.savez_compressed(buf, **{name: t.numpy() for name, t in tr.items()},
                        mask=tr.mask.numpy())
    return buf.getvalue()


@held
def _experiment(key: str, model_name: str, kind: str, arg: tuple, text: tuple | None,
                mask: str | None, _pixels):
    model = get_model(model_name)
    return worker.shared().run(_run_experiment, model, kind, arg, text, mask, _pixels,
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
    model = worker.shared().stepwise(get_model(model_name))
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
    model = worker.shared().stepwise(get_model(model_name))
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
    comps, ratio = embedding_filters(model.patch_embed.proj.weight.detach(),
                                     k=min(28, c.embed_dim))
    sim = position_similarity(model.pos_embed.detach(), c.grid, c.num_prefix_tokens)
    stats = position_distance_stats(model.pos_embed.detach(), c.grid, c.num_prefix_tokens)
    return {"filters": comps.numpy(), "ratio": ratio.tolist(), "pos_sim": sim.numpy(),
            "pos_stats": stats}


@held
def _attention_summary(key: str, model_name: str, mask: str | None, _trace) -> dict:
    from vit_core.explain.attention import summarise

    # on the worker: it recomputes every block up to its pattern (a quarter of a pass), and
    # thirty students' pages doing that on their own threads at once only fight for the cores
    return worker.shared().run(summarise, _trace, model=get_model(model_name))


def attention_summary(inp: Input, model_name: str, mask: str | None | object = SIDEBAR_MASK
                      ) -> dict:
    """Rollout, attention distance, entropy and the CLS / DIST rows of every layer of the page's
    trace (vit_core.explain.attention.summarise), computed once per trace. Off a script run
    (ui.readahead) pass `mask`."""
    mask = same_mask(model_name, chosen_mask() if mask is SIDEBAR_MASK else mask)
    return _attention_summary(inp.key, model_name, mask, trace(inp, model_name, mask=mask))


@held
def _sublayer_norms(key: str, model_name: str, mask: str | None, _trace) -> dict:
    from vit_core.explain.tokens import sublayer_norms

    # the attention half of every block again (about 40 % of a pass): on the worker
    return worker.shared().run(sublayer_norms, _trace, model=get_model(model_name))


def sublayer_norms(inp: Input, model_name: str, mask: str | None | object = SIDEBAR_MASK
                   ) -> dict:
    """What each block's attention and MLP add to every token, in norms ([L, S] each), once per
    trace: the MLP page's residual-stream chart would otherwise recompute them on every rerun.
    Off a script run (ui.readahead) pass `mask`."""
    mask = same_mask(model_name, chosen_mask() if mask is SIDEBAR_MASK else mask)
    return _sublayer_norms(inp.key, model_name, mask, trace(inp, model_name, mask=mask))


@held
def _patch_pca(key: str, model_name: str, mask: str | None, _trace):
    from vit_core.explain.tokens import pca_rgb

    c = _trace.config
    pre = c.num_prefix_tokens
    return pca_rgb(_trace["ln_final"][pre:pre + c.num_patches], c.grid).numpy()


def patch_pca(inp: Input, model_name: str):
    """The final patch tokens' first three principal components as a [g, g, 3] RGB grid,
    computed once per trace (an SVD of N x D)."""
    mask = same_mask(model_name, chosen_mask())
    return _patch_pca(inp.key, model_name, mask, trace(inp, model_name, mask=mask))
