"""Shares in the stages are worded through ui/numbers.py's one formatter (`pct`), never by a
hand-made percent format ({x:.0%}) that prints 0 % for a share above 0 (issue 40)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HAND_MADE = re.compile(r"\{[^{}]*:[^{}]*%\}")  # an f-string field whose format ends in %
# Stage modules being moved to the formatter in parallel work of issue 40 (ui/stages/logits.py,
# training.py): take a name off this list when its module no longer has one.
NOT_YET = {"logits.py", "training.py"}


def hand_made(path: Path) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
            for i, line in enumerate(path.read_text().splitlines(), 1) if HAND_MADE.search(line)]


def test_the_pattern_finds_a_hand_made_percent():
    assert HAND_MADE.search('f"{share:.0%} of the patches"')
    assert HAND_MADE.search('f"{p:.1%}"') and not HAND_MADE.search('f"{pct(share)} and {n:,}"')


def test_no_stage_formats_a_percent_by_hand():
    found = [hit for path in sorted((ROOT / "ui" / "stages").rglob("*.py"))
             if path.name not in NOT_YET for hit in hand_made(path)]
    assert not found, "\n".join(found)
