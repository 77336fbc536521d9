"""A word-level tokenizer for the image->text model.

Words are lower-cased and split on whitespace; punctuation is split off as its own token, so
"a red ball, on the grass." becomes ["a", "red", "ball", ",", "on", "the", "grass", "."].
An underscore counts as a letter (as in a regular expression's word class): "red_ball" is one
word and "_" alone is a word. A word that is not in the vocabulary becomes [UNK] and is
reported, never silently dropped: every character but whitespace ends up in some word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PAD, SOS, EOS, UNK = "[PAD]", "[SOS]", "[EOS]", "[UNK]"
SPECIALS = (PAD, SOS, EOS, UNK)

_WORD = re.compile(r"\w+(?:'\w+)?|[^\w\s]", re.UNICODE)


def split_words(text: str) -> list[str]:
    """Lower-case `text` and cut it into words and single punctuation marks."""
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class Encoding:
    """What `Tokenizer.encode` produced, and what it had to change to get there."""

    ids: list[int]  # token ids, starting with [SOS] when add_sos=True
    words: list[str]  # the word each id stands for ([UNK] kept as the user's word)
    unknown: list[str]  # words not in the vocabulary, in order of appearance
    truncated: int  # how many words were cut off to fit max_len (0 = none)

    @property
    def notice(self) -> str:
        """One sentence for the user about unknown words and truncation ("" if neither)."""
        parts = []
        if self.unknown:
            shown = ", ".join(f"'{w}'" for w in dict.fromkeys(self.unknown))
            parts.append(f"Not in the model's vocabulary, so read as [UNK]: {shown}.")
        if self.truncated:
            parts.append(f"The text was too long: the last {self.truncated} word(s) were cut off.")
        return " ".join(parts)


class Tokenizer:
    """Maps words to ids: ids 0..3 are [PAD] [SOS] [EOS] [UNK], then `words` in order."""

    def __init__(self, words: list[str] | tuple[str, ...]):
        words = [w for w in words if w not in SPECIALS]
        if len(set(words)) != len(words):
            raise ValueError("The vocabulary lists a word twice; every word must be unique.")
        self.vocab: tuple[str, ...] = SPECIALS + tuple(words)
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.pad_id, self.sos_id, self.eos_id, self.unk_id = range(4)

    def __len__(self) -> int:
        return len(self.vocab)

    def encode(self, text: str, max_len: int | None = None, add_sos: bool = True) -> Encoding:
        """Turn `text` into ids.

        Args:
            text: any string; empty is allowed and gives just [SOS].
            max_len: the most ids to return, [SOS] included; extra words are cut off.
            add_sos: start the ids with [SOS] (what the captioner expects as its first token).
        """
        words = split_words(text)
        room = None if max_len is None else max(0, max_len - int(add_sos))
        truncated = 0 if room is None else max(0, len(words) - room)
        if truncated:
            words = words[:room]
        ids = [self.index.get(w, self.unk_id) for w in words]
        unknown = [w for w, i in zip(words, ids, strict=True) if i == self.unk_id]
        if add_sos:
            ids, words = [self.sos_id] + ids, [SOS] + words
        return Encoding(ids=ids, words=words, unknown=unknown, truncated=truncated)

    def decode(self, ids, skip_special: bool = True) -> str:
        """Join the words for `ids`; stops at [EOS] and drops [PAD]/[SOS] when skip_special."""
        out = []
        for i in (int(i) for i in ids):
            if skip_special and i == self.eos_id:
                break
            if skip_special and i in (self.pad_id, self.sos_id):
                continue
            out.append(self.vocab[i] if 0 <= i < len(self.vocab) else UNK)
        return " ".join(out)
