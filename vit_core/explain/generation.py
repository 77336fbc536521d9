"""Text generation for the image -> text model, one token at a time, keeping every distribution."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..io.text import Tokenizer


@dataclass
class Generation:
    text: str  # the generated words, without [SOS]/[EOS]
    ids: list[int]  # generated ids, [EOS] included if the model produced it
    words: list[str]  # the word for each id
    probs: list[torch.Tensor]  # at each step, the [V] next-token distribution sampled from
    chosen: list[float]  # the probability of the token that was picked at each step


def tokenizer_for(model) -> Tokenizer:
    if not model.config.has_text or not model.config.vocab:
        raise ValueError("This model has no text vocabulary.")
    return Tokenizer(model.config.vocab)


@torch.inference_mode()
def next_token_logits(model, pixels, ids, mask=None) -> torch.Tensor:
    """Logits [B, V] for the token after `ids` [B, t] (a full forward; no KV cache needed here)."""
    return model(pixels, ids, mask=mask)[:, -1]


@torch.inference_mode()
def greedy_ids(model, pixels, max_new_tokens: int | None = None, mask=None) -> torch.Tensor:
    """Greedy captions for a batch: [B, steps] ids after [SOS] (for evaluation)."""
    tok = tokenizer_for(model)
    B = pixels.shape[0]
    room = model.config.max_text_len  # input lengths 1..max_text_len
    steps = min(max_new_tokens or room, room)
    ids = torch.full((B, 1), tok.sos_id, dtype=torch.long)  # [SOS]
    done = torch.zeros(B, dtype=torch.bool)
    for _ in range(steps):
        nxt = next_token_logits(model, pixels, ids, mask).argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, tok.pad_id), nxt)  # [PAD] after [EOS]
        ids = torch.cat([ids, nxt[:, None]], dim=1)
        done |= nxt == tok.eos_id
        if done.all():
            break
    return ids[:, 1:]


def generate(model, pixels, max_new_tokens: int | None = None, temperature: float = 0.0,
             top_k: int | None = None, seed: int | None = None, mask=None) -> Generation:
    """Caption one image token by token.

    Args:
        model: a ViT with a text stream.
        pixels: one preprocessed image [1, C, H, W].
        max_new_tokens: most tokens to produce (default: until the text positions run out).
        temperature: 0 = greedy (argmax); otherwise softmax(logits / temperature) is sampled.
        top_k: sample only among the k most likely tokens.
        seed: makes sampling repeatable.
        mask: the attention mask (default: the one the model was trained with).
    """
    tok = tokenizer_for(model)
    room = model.config.max_text_len  # the input grows from [SOS] to max_text_len tokens
    steps = room if max_new_tokens is None else max(0, min(max_new_tokens, room))
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    ids = [tok.sos_id]
    out, probs, chosen = [], [], []
    for _ in range(steps):
        logits = next_token_logits(model, pixels, torch.tensor([ids]), mask)[0].float()
        if top_k:
            kth = logits.topk(min(top_k, logits.numel())).values[-1]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        if temperature > 0:
            p = (logits / temperature).softmax(-1)
            nxt = int(torch.multinomial(p, 1, generator=gen))
        else:
            p = logits.softmax(-1)
            nxt = int(logits.argmax())
        probs.append(p)
        chosen.append(float(p[nxt]))
        out.append(nxt)
        ids.append(nxt)
        if nxt == tok.eos_id:
            break
    return Generation(text=tok.decode(out), ids=out, words=[tok.vocab[i] for i in out],
                      probs=probs, chosen=chosen)


@dataclass
class Scored:
    words: list[str]  # the caption's words as tokenized, then [EOS] unless the text was cut
    probs: list[float]  # P(word | image, earlier words) under teacher forcing
    unknown: list[bool]  # True where the word became [UNK]
    notice: str  # one sentence about unknown words / truncation ("" if none)


def score_text(model, pixels, text: str, mask=None) -> Scored:
    """Teacher forcing: feed [SOS] + the caption and read each next word's probability.

    The logits at text position t are the model's guess for token t + 1, so one forward pass
    scores every word of the caption, and [EOS] after it when the caption ended there; a caption
    cut to fit the text positions did not end there, so its [EOS] is not scored.
    """
    from ..trace import run_trace

    tok = tokenizer_for(model)
    enc = tok.encode(text, max_len=model.config.max_text_len)
    return score_logits(tok, enc, run_trace(model, pixels, text_ids=enc.ids, mask=mask).logits)


def score_logits(tok, enc, logits: torch.Tensor) -> Scored:
    """Each word's probability from the [T, V] logits of a pass that was fed `enc.ids`.

    Position t predicts token t + 1; the last position predicts [EOS] only when the whole caption
    fitted (when it was cut, what follows is the next word that was cut off, not [EOS])."""
    probs = logits.softmax(-1)
    targets, words = enc.ids[1:], enc.words[1:]
    notice = enc.notice
    if enc.truncated:
        notice += " [EOS] is not scored, because the caption does not end there."
    else:
        targets, words = targets + [tok.eos_id], words + ["[EOS]"]
    n = len(targets)  # position t predicts targets[t]
    return Scored(words=words, probs=[float(probs[t, targets[t]]) for t in range(n)],
                  unknown=[targets[t] == tok.unk_id for t in range(n)], notice=notice.strip())


def learning_curve(card: str, metric: str = "exact_match") -> dict[int, float]:
    """A model card's held-out learning curve (its "| step | metric | ..." table) as
    {step: value}; {} when the card has none."""
    import re

    lines = card.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "step" and metric in cells:
            col = cells.index(metric)
            out = {}
            for row in lines[i + 2:]:
                parts = [c.strip() for c in row.strip().strip("|").split("|")]
                if not row.startswith("|") or len(parts) <= col or not re.fullmatch(r"\d+",
                                                                                   parts[0]):
                    break
                out[int(parts[0])] = float(parts[col])
            return out
    return {}
