"""The widgets of a page as a browser tab knows them (for tools/st_protocol.Tab).

A widget arrives in a delta with its id, `$$ID-<hash>-<key>` (the key the app gave it, or
"None"), its label and, for a choice, its options. Streamlit's frontend keeps one state per
widget on the page and sends all of them with every `rerun_script`; a button's click is a
trigger, sent once; after a full run the states of widgets no longer drawn are dropped. `Widgets`
does the same, so a protocol client can click "Send" or choose a radio option as a student does.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from streamlit.proto.WidgetStates_pb2 import WidgetState

# element type -> the WidgetState field its value travels in (streamlit 1.65's register_widget)
KINDS = {
    "button": "trigger_value",
    "checkbox": "bool_value",  # st.checkbox and st.toggle
    "radio": "string_value",  # the option as shown
    "selectbox": "string_value",
    "multiselect": "string_array_value",  # the options chosen, as shown
    "text_input": "string_value",
    "text_area": "string_value",
    "number_input": "double_value",
    "plotly_chart": "string_value",  # a selection (on_select), as JSON
    "file_uploader": "file_uploader_state_value",  # given by Tab.upload
}


class WidgetError(LookupError):
    """No widget (or more than one) answers to that name, or the value does not fit it."""


@dataclass(frozen=True)
class Widget:
    kind: str  # an element type of KINDS
    id: str
    label: str
    options: tuple[str, ...] = ()
    disabled: bool = False
    fragment: str = ""  # the fragment that drew it: its change reruns only that fragment

    @property
    def key(self) -> str | None:
        """The app's `key=` for it (None when it has none)."""
        key = self.id.split("-", 2)[-1]
        return None if key == "None" else key


def widget_of(element) -> Widget | None:
    """The widget an Element proto draws, or None for a plain element (or a chart that reports
    no selection)."""
    kind = element.WhichOneof("type")
    if kind not in KINDS:
        return None
    proto = getattr(element, kind)
    if not proto.id:
        return None
    return Widget(kind, proto.id, getattr(proto, "label", ""),
                  tuple(getattr(proto, "options", ())), bool(getattr(proto, "disabled", False)))


def encode(widget: Widget, value) -> WidgetState:
    """The state a browser sends for `widget` holding `value`: an option (or its index) for a
    radio or selectbox, a number, a string, a bool, or for a chart the chosen points' customdata
    (a patch grid: the patch indices)."""
    state = WidgetState(id=widget.id)
    if widget.kind in ("radio", "selectbox"):
        if isinstance(value, int):
            value = widget.options[value]
        if value not in widget.options:
            raise WidgetError(f"{value!r} is not an option of {widget.label!r}: "
                              f"{widget.options}")
        state.string_value = value
    elif widget.kind == "multiselect":
        unknown = [v for v in value if v not in widget.options]
        if unknown:
            raise WidgetError(f"{unknown} are not options of {widget.label!r}: {widget.options}")
        state.string_array_value.data.extend(value)
    elif widget.kind == "number_input":
        state.double_value = float(value)
    elif widget.kind == "checkbox":
        state.bool_value = bool(value)
    elif widget.kind == "plotly_chart":
        points = [{"curve_number": 1, "point_number": int(p), "point_index": int(p),
                   "customdata": int(p)} for p in value]
        state.string_value = json.dumps({"selection": {
            "points": points, "point_indices": [int(p) for p in value], "box": [], "lasso": []}})
    elif widget.kind == "button":
        state.trigger_value = True
    else:
        state.string_value = str(value)
    return state


class Widgets:
    """The widgets a tab shows and the states it sends back."""

    def __init__(self):
        self.shown: dict[str, Widget] = {}  # id -> widget, as last drawn
        self.states: dict[str, WidgetState] = {}  # id -> the value this tab gave it

    def saw(self, element, fragment: str = "") -> Widget | None:
        """Note the widget an element draws (None: not a widget), inside `fragment` if one
        drew it. A widget the app gave a value (`set_value`, e.g. through session state) keeps
        the app's: this tab's is dropped."""
        widget = widget_of(element)
        if widget is not None:
            widget = dataclasses.replace(widget, fragment=fragment)
            self.shown[widget.id] = widget
            if getattr(getattr(element, widget.kind), "set_value", False):
                self.states.pop(widget.id, None)
        return widget

    def full_run(self, drawn: set[str]) -> None:
        """A full run drew exactly these widgets: the others are gone, with their states."""
        self.shown = {i: w for i, w in self.shown.items() if i in drawn}
        self.states = {i: s for i, s in self.states.items() if i in drawn}

    def find(self, name: str, kind: str | None = None) -> Widget:
        """The one widget shown whose key, or else label, is `name` (of `kind` if given)."""
        fits = [w for w in self.shown.values() if kind in (None, w.kind)]
        found = [w for w in fits if w.key == name] or [w for w in fits if w.label == name]
        if len(found) != 1:
            seen = sorted(f"{w.kind} {w.key or w.label!r}" for w in fits)
            raise WidgetError(f"{len(found)} widgets answer to {name!r}; shown: {seen}")
        return found[0]

    def click(self, name: str) -> list[WidgetState]:
        """The states of a rerun that clicks the button `name` (its trigger is not kept)."""
        button = self.find(name, "button")
        if button.disabled:
            raise WidgetError(f"the button {name!r} is disabled")
        return [*self.states.values(), encode(button, True)]

    def set(self, name: str, value) -> list[WidgetState]:
        """The states of a rerun after the widget `name` took `value` (kept for later runs)."""
        widget = self.find(name)
        self.states[widget.id] = encode(widget, value)
        return list(self.states.values())

    def current(self) -> list[WidgetState]:
        return list(self.states.values())
