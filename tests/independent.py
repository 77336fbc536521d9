"""What the page tests compare with: numbers computed here from raw `run_trace` tensors (float64
where it matters), never by the function the page itself calls; and readers of what AppTest
shows (plotly charts by widget key, their arrays, every text element)."""

from __future__ import annotations

import base64
import json

import numpy as np
import torch

from ui import keys
from ui.stages.attention.keys import ATTN_MATRIX
from vit_core import Tokenizer, load_image, load_model, preprocess, run_trace

SOS, EOS = 1, 2  # the text model's ids for [SOS] and [EOS] (vit_core.io.text: PAD SOS EOS UNK)


def pixels_of(at, model) -> torch.Tensor:
    """The preprocessed image the app used in this session."""
    return preprocess(load_image(at.session_state["_input"].data), model.config)


def greedy(model, pixels, mask=None) -> tuple[list[str], list[float]]:
    """Greedy caption word by word: at each step one traced pass on [SOS] + the words so far,
    the argmax of the last position's logits, and its softmax probability (float64)."""
    vocab, ids, words, probs = Tokenizer(model.config.vocab).vocab, [SOS], [], []
    for _ in range(model.config.max_text_len):
        logits = run_trace(model, pixels, text_ids=ids, mask=mask).logits[-1].double()
        nxt = int(logits.argmax())
        words.append(vocab[nxt])
        probs.append(float(torch.exp(logits[nxt] - torch.logsumexp(logits, 0))))
        ids.append(nxt)
        if nxt == EOS:
            break
    return words, probs


def sampled(model, pixels, temperature: float, seed: int, steps: int) -> list[str]:
    """`steps` words sampled from softmax(logits / temperature), one torch.Generator seeded with
    `seed` drawing once per step (torch.multinomial), each step one traced pass."""
    vocab, ids = Tokenizer(model.config.vocab).vocab, [SOS]
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        logits = run_trace(model, pixels, text_ids=ids).logits[-1].float()
        nxt = int(torch.multinomial((logits / temperature).softmax(-1), 1, generator=gen))
        ids.append(nxt)
        if nxt == EOS:
            break
    return [vocab[i] for i in ids[1:]]


def caption_text(words: list[str]) -> str:
    """The caption as a sentence: the words before [EOS]."""
    return " ".join(words[:words.index("[EOS]")] if "[EOS]" in words else words)


def teacher_forced(model, pixels, text: str, mask=None) -> list[float]:
    """P(each word of `text`, then [EOS] | image, the words before): one traced pass fed
    [SOS] + the words; position t's softmax (float64) read at word t + 1."""
    enc = Tokenizer(model.config.vocab).encode(text, max_len=model.config.max_text_len)
    logits = run_trace(model, pixels, text_ids=enc.ids, mask=mask).logits.double()
    p = logits.exp() / logits.exp().sum(-1, keepdim=True)
    targets = enc.ids[1:] + [EOS]
    return [float(p[t, targets[t]]) for t in range(len(enc.ids))]


def trace_of(at, name: str, mask=None):
    model = load_model(name)
    return run_trace(model, pixels_of(at, model), mask=mask)


# ---- reading what AppTest shows

def charts_by_key(at) -> dict[str, dict]:
    """Widget key (the end of the element id) -> the plotly figure as a dict."""
    return {el.proto.id.split("-", 2)[-1]: json.loads(el.proto.spec)
            for el in at.get("plotly_chart")}


def array(v) -> np.ndarray:
    """A plotly array from a figure's JSON: a list, or binary {'dtype', 'bdata', 'shape'}."""
    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        shape = v.get("shape")
        if shape:
            a = a.reshape([int(s) for s in str(shape).split(",")])
        return a
    return np.asarray(v, dtype=float)


def texts(at) -> list[str]:
    """Every text element of the page and sidebar (markdown, captions, alerts, titles)."""
    out = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning",
                 "error", "success", "text"):
        out += [e.value for e in getattr(at, kind)]
    return out


def attention_pattern_shown(at) -> np.ndarray:
    """The S x S matrix the attention page draws, switched to the softmax pattern A."""
    view = at.radio(key=keys.ATTN_VIEW)
    pattern = next(o for o in view.options if "pattern" in o.lower() or "softmax" in o.lower())
    if view.value != pattern:
        view.set_value(pattern).run()
    return array(charts_by_key(at)[ATTN_MATRIX]["data"][0]["z"]).astype(np.float64)
