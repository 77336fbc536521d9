"""The shape trace's rows (ui/stages/shape_trace.py draws them, and describes them): every step
of the pass with this pass's traced shape, its multiply-adds over all layers, and ViT-B/16's row
of the same step; the tables' rows built from them."""

from __future__ import annotations

from dataclasses import dataclass

from vit_core import PRESETS
from vit_core.explain.flops import si, stage_rows, traced_shapes

REF = "vit-b16"  # the notes' reference model, beside every cost


# ---------------------------------------------------------------- the rows
@dataclass(frozen=True)
class Rows:
    """Every step of the pass, in order, with this pass's traced shape and ViT-B/16's row."""

    rows: list[dict]  # stage_rows(c, T), each with "traced" (str) and "macs" (all layers)
    ref: dict[str, dict]  # ViT-B/16's row of the same step (name -> row)
    first: int  # the block's first row (LN1)
    end: int  # the first row after the block (final LN)

    @property
    def in_block(self) -> tuple[bool, ...]:
        """Per row: a step of every block (counted over the layers), not once per pass."""
        return tuple(self.first <= k < self.end for k in range(len(self.rows)))

    @property
    def around(self) -> list[dict]:
        return self.rows[:self.first] + self.rows[self.end:]

    @property
    def block(self) -> list[dict]:
        return self.rows[self.first:self.end]


def rows_of(c, tr) -> Rows:
    """The rows of the pass `tr` of a model with config `c`."""
    rows = [{**r, "traced": traced, "macs": r["flops"] // 2 * r["times"]}
            for r, traced in zip(stage_rows(c, tr.n_text), traced_shapes(tr), strict=True)]
    names = [r["step"] for r in rows]
    return Rows(rows, {r["step"]: r for r in stage_rows(PRESETS[REF])}, names.index("LN1"),
                names.index("final LN"))


def shape_table(f: Rows, rows: list[dict]) -> list[dict]:
    return [{"step": r["step"], "operation": r["op"], "equation": r["eq"],
             "traced shape": r["traced"], "ViT-B/16 shape": f.ref.get(r["step"], {}).get(
                 "shape", "—"), "× layers": r["times"], "parameters": f"{r['params']:,}"}
            for r in rows]


def heads(f: Rows) -> list[dict]:
    """The rows that read the final tokens (class, text, segmentation heads)."""
    return [r for r in f.rows[f.end:] if r["step"] != "final LN"]


def cost_rows(f: Rows) -> tuple[list[dict], list[str]]:
    """The cost table's rows, and the steps left out of it: those with no matrix
    multiplication in either model (0 multiply-adds), each named once."""
    costs, left_out = [], []
    for r in f.rows:
        b16 = f.ref.get(r["step"])
        ref_macs = b16["flops"] // 2 * b16["times"] if b16 else 0
        if not r["macs"] and not ref_macs:
            left_out.append(r["step"])
            continue
        costs.append({"step": r["step"], "MACs (all layers)": si(r["macs"]),
                      "FLOPs = 2 × MACs": si(2 * r["macs"]),
                      "ViT-B/16 MACs": si(ref_macs) if b16 else "—",
                      "ViT-B/16 FLOPs": si(2 * ref_macs) if b16 else "—"})
    return costs, list(dict.fromkeys(left_out))


