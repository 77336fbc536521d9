"""Property tests (hypothesis) and many-thread tracing: the core never mixes up its inputs."""

import threading

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import SMALL, randomised
from vit_core import Tokenizer, allowed_keys, make_mask, run_trace
from vit_core.scenes.world import VOCAB

TOK = Tokenizer(VOCAB)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(VOCAB), max_size=30))
def test_known_words_round_trip(words):
    text = " ".join(words)
    enc = TOK.encode(text)
    assert not enc.unknown and TOK.decode(enc.ids) == text


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400), st.integers(1, 12))
def test_any_text_encodes_within_bounds(text, max_len):
    enc = TOK.encode(text, max_len=max_len)
    assert 1 <= len(enc.ids) <= max_len and enc.ids[0] == TOK.sos_id
    assert all(0 <= i < len(TOK) for i in enc.ids)
    assert len(enc.unknown) == enc.ids.count(TOK.unk_id)
    assert "\n" not in enc.notice


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["full", "causal", "prefix"]), st.integers(0, 60), st.integers(0, 20))
def test_every_row_of_every_mask_keeps_a_visible_key(kind, n_image, n_text):
    if n_image + n_text == 0:
        return
    allowed = allowed_keys(kind, n_image, n_text)
    assert allowed.any(dim=1).all()
    assert allowed.diagonal().all()  # every token may always read itself
    m = make_mask(kind, n_image, n_text)
    assert torch.equal(torch.isfinite(m), allowed)
    assert allowed[n_image:, :n_image].all()  # text always reads the whole image


def test_many_threads_tracing_different_images_get_their_own_results():
    model = randomised(SMALL)
    images = [torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(i))
              for i in range(8)]
    alone = [run_trace(model, x) for x in images]
    results: dict[int, list] = {i: [] for i in range(8)}
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work(i):
        try:
            start.wait()
            for _ in range(10):
                results[i].append(run_trace(model, images[i]))
        except BaseException as e:  # a thread's exception is lost unless kept for the main one
            errors.append(e)
            start.abort()  # the others stop waiting for this one

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert {i: len(r) for i, r in results.items()} == {i: 10 for i in range(8)}
    for i in range(8):
        for tr in results[i]:
            for name in ("patches", "blocks.1.attn.pattern", "logits"):
                assert torch.equal(tr[name], alone[i][name]), (i, name)
