"""ui/drawing/numbers.py, the app's one way of printing shares and differences of shares (the stages
use nothing else: tests/test_house_limits.py finds a share printed by hand)."""

from ui.drawing.numbers import pct, points


def test_a_share_is_never_printed_as_0_or_100_percent_when_it_is_not():
    assert pct(0.0004) == "<0.1%" and pct(0.9996) == ">99.9%"
    assert pct(0.5) == "50%" and pct(0.034) == "3.4%"


def test_a_difference_of_shares_is_said_in_points():
    assert points(0.12) == "12 points" and points(-0.12) == "12 points"
    assert points(0.01) == "1 point" and points(0.004) == "<1 point" and points(0.0) == "0 points"
