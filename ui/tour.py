"""What the tour's pages ask for beyond the image's trace: the models the Masks page compares, and
the later pages' first requests (`plan`, what the read-ahead computes before a student gets
there)."""

from __future__ import annotations

from collections.abc import Callable

from vit_core import bundled_models

from . import inputs, state

BUNDLED = ("shapes-captioner-prefix", "shapes-captioner-causal")
MASK_CAPTION = "a red ball on the grass"  # the Masks page's caption until the student types one


def masks_page_models(name: str, model) -> tuple[list[str], list[tuple[str, str]], str]:
    """(the captioners, the (captioner, mask) pairs shown live, the classifier put under a causal
    mask) for the chosen model `name`."""
    trained = [m for m in BUNDLED if m in bundled_models()]
    if trained:
        captioners = trained
    elif model.config.has_text:
        captioners = [name]
    else:
        captioners = ["vit-b16-text"]
    if len(captioners) > 1:
        runs = [(m, state.get_model(m).config.default_mask) for m in captioners]
    else:
        runs = [(captioners[0], "prefix"), (captioners[0], "causal")]
    fallback = "shapes-classifier" if "shapes-classifier" in bundled_models() else "vit-b16"
    return captioners, runs, name if model.config.num_classes else fallback


def other_sample(inp: inputs.Input) -> tuple[int, inputs.Input]:
    """The sample scene the Masks page compares the classifier's causal logits on: the first
    that is not this image. (seed, input)."""
    seed = next(sd for sd in inputs.sample_seeds() if inputs.sample_bytes(sd) != inp.data)
    raw = inputs.sample_bytes(seed)
    return seed, inputs.make_input(f"sample: {inputs.sample_caption(seed)}", raw)


def plan(inp: inputs.Input, name: str, mask: str | None, layer: int | None,
         caption: str = MASK_CAPTION) -> list[Callable]:
    """The later pages' first requests for this image, model and mask, in the tour's order:
    calls into ui.state's caches, runnable off a script run. `layer`: the session's layer;
    `caption`: the Masks page's caption."""
    from vit_core.explain.generation import tokenizer_for

    model = state.get_model(name)
    caps, runs, clf = masks_page_models(name, model)
    cap = state.get_model(caps[0])
    ids = tokenizer_for(cap).encode(caption, max_len=cap.config.max_text_len).ids
    items = [lambda: state.weight_views(name),
             lambda: state.attention_summary(inp, name, mask),
             lambda: state.logits(inp, clf, "causal"),
             lambda: state.logits(other_sample(inp)[1], clf, "causal")]
    for m, k in runs:
        items += [lambda m=m, k=k: state.trace(inp, m, mask=k, text_ids=ids),
                  lambda m=m, k=k: state.greedy_caption(inp, m, k)]
    items.append(lambda: state.sublayer_norms(inp, name, mask))
    c = model.config
    if c.num_classes and not c.has_text and layer is not None:  # the page's default: head 0 off
        head = ((min(layer, c.depth - 1), 0),)
        items.append(lambda: state.experiment(inp, name, "heads", head, None, mask))
    return items
