"""The trace-name table in docs/library.md is TRACE_NAMES, and TRACE_NAMES describes real
traces exactly."""

from pathlib import Path

import pytest
import torch

from tests.support import SMALL, TEXT
from vit_core import ViT, run_trace
from vit_core.trace import TRACE_NAMES, name_pattern, names_table, symbol_sizes

LIBRARY_DOC = Path(__file__).resolve().parents[1] / "docs" / "library.md"


def test_the_library_doc_shows_the_names_table():
    assert names_table() in LIBRARY_DOC.read_text()


def expected_shapes(symbols: str, sizes: dict) -> list[tuple[int, ...]]:
    """'H, S, d_k' -> [(3, 17, 16)]; alternatives separated by ' or '."""
    return [tuple(sizes[s.strip()] for s in alt.split(",")) for alt in symbols.split(" or ")]


@pytest.mark.parametrize("config,text", [
    (SMALL.replace(seg_classes=4, seg_upsample=2), None),
    (TEXT, [1, 2, 3]),
])
def test_every_traced_tensor_is_documented_with_its_shape(config, text):
    tr = run_trace(ViT(config).eval(), torch.randn(1, 3, 32, 32), text_ids=text)
    sizes = symbol_sizes(config, n_text=0 if text is None else len(text))
    seen = set()
    for name in tr:
        symbols, _ = TRACE_NAMES[name_pattern(name)]
        assert tuple(tr[name].shape) in expected_shapes(symbols, sizes), name
        seen.add(name_pattern(name))
    optional = {"seg_logits"} if config.seg_classes == 0 else set()
    assert seen | optional == set(TRACE_NAMES)
    assert len([n for n in tr if n.startswith("blocks.1.")]) == 15
