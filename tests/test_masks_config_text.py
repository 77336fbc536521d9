"""Masks' block structure, config validation, and the word-level tokenizer."""

import pytest
import torch

from vit_core import PRESETS, Tokenizer, ViTConfig, allowed_keys, make_mask

NEG = float("-inf")


def test_full_mask_is_all_zero():
    assert torch.equal(make_mask("full", 3, 2), torch.zeros(5, 5))


def test_causal_mask_is_upper_triangle_of_minus_infinity():
    m = make_mask("causal", 3, 2)
    for i in range(5):
        for j in range(5):
            assert m[i, j] == (NEG if j > i else 0.0)


def test_prefix_mask_has_the_notes_block_structure():
    n, t = 4, 3
    m = make_mask("prefix", n, t)
    assert (m[:n, :n] == 0).all()  # image -> image: bidirectional
    assert (m[:n, n:] == NEG).all()  # image -> text: blocked
    assert (m[n:, :n] == 0).all()  # text -> image: allowed
    text = m[n:, n:]
    assert torch.equal(text, make_mask("causal", 0, t))  # text -> text: causal


@pytest.mark.parametrize("kind", ["full", "causal", "prefix"])
@pytest.mark.parametrize("n,t", [(1, 0), (5, 0), (0, 3), (197, 9)])
def test_every_row_keeps_a_visible_key(kind, n, t):
    assert allowed_keys(kind, n, t).any(dim=1).all()


def test_unknown_mask_is_a_clear_error():
    with pytest.raises(ValueError, match="Unknown mask 'diagonal'"):
        make_mask("diagonal", 3, 1)


@pytest.mark.parametrize("changes,message", [
    (dict(patch_size=15), "must divide the image size 224"),
    (dict(num_heads=5), "split evenly into 5 heads"),
    (dict(class_token=False), "needs class_token=True"),
    (dict(num_classes=3, class_names=("a", "b")), "has 2 names"),
    (dict(num_classes=0, vocab_size=10), "needs max_text_len > 0"),
    (dict(depth=0), "depth must be a positive whole number"),
    (dict(default_mask="diag"), "default_mask must be one of"),
])
def test_invalid_configs_explain_themselves(changes, message):
    with pytest.raises(ValueError, match=message):
        ViTConfig(**changes)


def test_presets_and_derived_sizes():
    c = PRESETS["vit-b16"]
    assert (c.img_size, c.patch_size, c.embed_dim, c.depth, c.num_heads) == (224, 16, 768, 12, 12)
    assert (c.grid, c.num_patches, c.num_image_tokens, c.head_dim, c.mlp_hidden) == (
        14, 196, 197, 64, 3072)


def test_config_json_round_trip_and_unknown_fields():
    c = ViTConfig(num_classes=2, class_names=("cat", "dog"), vocab=())
    assert ViTConfig.from_json(c.to_json()) == c
    with pytest.raises(ValueError, match="does not know"):
        ViTConfig.from_json('{"img_size": 224, "wings": 2}')


TOK = Tokenizer(["a", "red", "ball", "on", "the", "grass"])


def test_tokenizer_round_trip_and_specials():
    enc = TOK.encode("a red ball on the grass")
    assert enc.ids == [1, 4, 5, 6, 7, 8, 9]
    assert TOK.decode(enc.ids) == "a red ball on the grass"
    assert TOK.vocab[:4] == ("[PAD]", "[SOS]", "[EOS]", "[UNK]")
    assert TOK.decode([1, 4, 5, 2, 6]) == "a red"  # stops at [EOS]
    assert enc.notice == ""


def test_unknown_words_become_unk_and_are_reported():
    enc = TOK.encode("A RED Zebra, on the 🌈 grass")
    assert enc.unknown == ["zebra", ",", "🌈"]
    assert enc.ids.count(TOK.unk_id) == 3
    assert "'zebra'" in enc.notice and "[UNK]" in enc.notice


@pytest.mark.parametrize("text,words,unknown", [
    ("a red_ball", ["a", "red_ball"], ["red_ball"]),  # part of a word
    ("a _ ball", ["a", "_", "ball"], ["_"]),  # its own word
    ("the __grass__", ["the", "__grass__"], ["__grass__"]),
    ("_", ["_"], ["_"]),
])
def test_an_underscore_never_vanishes(text, words, unknown):
    enc = TOK.encode(text)
    assert enc.words[1:] == words and enc.unknown == unknown
    assert len(enc.ids) == len(words) + 1 and enc.ids.count(TOK.unk_id) == len(unknown)
    assert all(f"'{w}'" in enc.notice for w in unknown) and "[UNK]" in enc.notice
    # nothing but whitespace is lost between the text and its words
    assert "".join(enc.words[1:]) == "".join(text.split())


def test_long_text_is_truncated_with_a_notice():
    enc = TOK.encode("the " * 5000, max_len=10)
    assert len(enc.ids) == 10 and enc.truncated == 4991
    assert "cut off" in enc.notice
    assert TOK.encode("", max_len=10).ids == [1]
    assert TOK.encode("日本語 テキスト").unknown == ["日本語", "テキスト"]
