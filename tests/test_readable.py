"""ui/readable: the font floor every chart shares (issue 39: readable from the back of the
room). Read back from the figure as Streamlit sends it, against the 14 px the issue asks for."""

import json

import numpy as np
import plotly.graph_objects as go

from tests.test_every_page import small_fonts
from ui.drawing import figures
from ui.drawing.readable import readable

LEAST_PX = 14  # the number, not the module's: lowering TEXT_PX turns this red


def sent(fig: go.Figure) -> dict:
    return json.loads(fig.to_json())


def tiny() -> go.Figure:
    """Every kind of text a figure here carries, each set small (or left to the theme)."""
    fig = figures.panels(
        [figures.matrix_heatmap(np.eye(3), "a", x_title="key", y_title="query", value_name="w",
                                row_labels=["CLS", "patch 0 (0,0)", "patch 1 (0,1)"],
                                col_labels=["CLS", "patch 0 (0,0)", "patch 1 (0,1)"])] * 2,
        ["left", "right"])
    fig.add_trace(go.Bar(x=[1, 2], y=["a", "b"], orientation="h", text=["1%", "2%"], name="bars",
                         xaxis="x3", yaxis="y3", textfont=dict(size=6)))
    fig.add_trace(go.Scatter(x=[0], y=[0], mode="text", text=["7"], textfont=dict(size=8),
                             name="cells"))
    fig.update_layout(title=dict(text="t", font=dict(size=10)), legend=dict(font=dict(size=9)),
                      annotations=[*fig.layout.annotations, dict(text="note", font=dict(size=9))])
    return fig


def test_the_checker_sees_small_text_and_text_left_to_the_theme():
    found = small_fonts(sent(tiny()))
    assert any("layout.title.font is 10 px" in f for f in found), found
    assert any("textfont is 6 px" in f for f in found), found
    assert any("xaxis2's ticks are left to the theme" in f for f in found), found
    assert any("yaxis3's ticks are left to the theme" in f for f in found), found
    assert any("legend" in f for f in found), found


def test_every_text_of_a_figure_is_at_least_14_px_after_the_shared_default():
    fig = tiny()
    before = sent(fig)
    out = sent(readable(fig))
    assert small_fonts(out) == []
    layout = out["layout"]
    for axis in ("xaxis", "xaxis2", "xaxis3", "yaxis", "yaxis2", "yaxis3"):
        assert layout[axis]["tickfont"]["size"] >= LEAST_PX
        assert layout[axis]["title"]["font"]["size"] >= LEAST_PX
    assert layout["font"]["size"] >= LEAST_PX and layout["legend"]["font"]["size"] >= LEAST_PX
    assert all(n["font"]["size"] >= LEAST_PX for n in layout["annotations"])
    bars = [t for t in out["data"] if t["type"] == "bar"][0]
    assert bars["constraintext"] == "none"  # plotly would shrink the label to fit the bar
    heat = [t for t in out["data"] if t["type"] == "heatmap"][0]
    assert heat["colorbar"]["tickfont"]["size"] >= LEAST_PX
    assert heat["colorbar"]["title"]["font"]["size"] >= LEAST_PX
    # larger text stays as it was, the data too, and the figure given is left alone (shared)
    assert sent(fig) == before
    big = readable(go.Figure(layout=dict(title=dict(text="t", font=dict(size=22)))))
    assert big.layout.title.font.size == 22
    assert out["data"][0]["z"] == before["data"][0]["z"]


def test_the_unvalidated_copy_is_what_plotly_would_validate():
    """readable() skips plotly's validation of what it copies: the same figure validated."""
    fig = readable(tiny())
    checked = go.Figure(data=[t.to_plotly_json() for t in fig.data],
                        layout=fig.layout.to_plotly_json())
    assert sent(fig) == sent(checked)
