"""How the Experiments stage prints its numbers (through ui.drawing.numbers) and names what a model
answers with."""

from __future__ import annotations

from ui.drawing.numbers import pct
from vit_core.explain import interventions as ex


def share(p: float) -> str:
    """A probability as this stage prints it (ui.drawing.numbers.pct): one decimal, three under 1 %
    (an
    untrained model's 1000 classes sit near 0.1 %, where one decimal would hide every change)."""
    return pct(p, 1 if p >= 0.01 else 3)


def _printed_points(before: str, after: str) -> tuple[float, int] | None:
    """(the change in points between two printed percentages, the decimals it is printed
    with); None when either is printed as a bound ('<0.001%', '>99.9%')."""
    if before[0] in "<>" or after[0] in "<>":
        return None
    a, b = before.removesuffix("%"), after.removesuffix("%")
    digits = max(len(a.partition(".")[2]), len(b.partition(".")[2]))
    return round(float(b) - float(a), digits) + 0.0, digits  # + 0.0: never "-0.0"


def points(before: str, after: str) -> str | None:
    """The change from one printed percentage to another, in points, computed from the printed
    numbers so the reader's subtraction holds ('91.2%' to '87.5%': '−3.7 points')."""
    found = _printed_points(before, after)
    if found is None:
        return None
    d, digits = found
    sign = "+" if d > 0 else "−" if d < 0 else ""
    return f"{sign}{abs(d):.{digits}f} points"


def moved(ch: ex.ClassChange) -> bool:
    """The answer moved: another top class, or its probability moved by ex.SAME_P or more, as
    printed (so that "did not change" never stands beside "+1.0 points")."""
    found = _printed_points(share(ch.before), share(ch.after))
    if ch.changed or found is None:
        return ch.moved
    return abs(found[0]) >= 100 * ex.SAME_P


def names_of(c) -> list[str]:
    return list(c.class_names) or [f"class {k}" for k in range(c.num_classes)]


def family(c) -> str:
    """What the model answers with: "class" logits, "text" logits, or nothing ("headless")."""
    return "class" if c.num_classes else "text" if c.has_text else "headless"


def outputs_name(fam: str, tr) -> str:
    """What the runs' largest difference is measured on, said after 'the'."""
    return ("logits" if fam == "class" else "text logits" if fam == "text"
            else "final " + " and ".join(ex.summary(tr)))


def listed(items) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def turned(sims: dict[str, float]) -> str:
    return " and ".join(f"{v:.3f} for {name}" for name, v in sims.items())
