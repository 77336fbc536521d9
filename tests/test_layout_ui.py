"""Layout rules of the UI, read from the source (STYLE.md, "Thin pages, logic below"):
every session-state and widget key is a name from ui/keys.py, and pages draw no figures."""

from __future__ import annotations

import ast
from pathlib import Path

from ui import keys

ROOT = Path(__file__).resolve().parents[1]
KEYS_FILE = ROOT / "ui" / "keys.py"
UI_FILES = [ROOT / "app.py", *sorted((ROOT / "ui").rglob("*.py"))]
DICT_METHODS = ("get", "setdefault", "pop")
FIGURE_MODULES = ("plotly", "matplotlib", "PIL.ImageDraw")


def _literal(node) -> bool:
    """A key written out: "model", or an f-string such as f"qkv_{nm}"."""
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)) or isinstance(
        node, ast.JoinedStr)


def literal_keys(source: str, name: str = "<source>") -> list[str]:
    """Where `source` writes a session-state key or a widget key as a string literal."""
    tree = ast.parse(source)
    aliases = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and isinstance(node.value, ast.Attribute) and node.value.attr == "session_state"
               for t in node.targets if isinstance(t, ast.Name)}  # ss = st.session_state

    def session(node) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "session_state") or (
            isinstance(node, ast.Name) and node.id in aliases)

    found = []
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and session(node.value):
            key = node.slice  # st.session_state["model"]
        elif isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr in DICT_METHODS and session(f.value)
                    and node.args):
                key = node.args[0]  # st.session_state.get("model")
            for kw in node.keywords:
                if kw.arg == "key" and _literal(kw.value):
                    found.append(f"{name}:{kw.value.lineno}: key={ast.unparse(kw.value)}")
        elif isinstance(node, ast.Compare) and any(
                isinstance(op, ast.In | ast.NotIn) and session(c)
                for op, c in zip(node.ops, node.comparators, strict=True)):
            key = node.left  # "model" in st.session_state
        if key is not None and _literal(key):
            found.append(f"{name}:{key.lineno}: {ast.unparse(node)}")
    return found


def test_the_scanner_finds_every_form_of_literal_key():
    src = '''
import streamlit as st
ss = st.session_state
st.session_state["a"] = 1
x = st.session_state.get("b", 0)
ss.setdefault("c", [])
ss.pop(f"d_{x}", None)
if "e" in ss or "f" not in st.session_state:
    st.slider("Layer", key="g")
st.button("Go", key=f"h_{x}")
sorted([], key=lambda kv: kv)  # not a widget key
st.session_state[keys.MODEL] = st.session_state.get(keys.MASK, "trained")  # by name: fine
"a" in {"a": 1}  # not session state
'''
    found = literal_keys(src)
    assert len(found) == 8, found
    for k in "abcdefgh":
        assert any(f'"{k}' in f or f"'{k}" in f for f in found), (k, found)


def test_every_session_and_widget_key_is_a_name_from_ui_keys():
    found = [f for path in UI_FILES if path != KEYS_FILE
             for f in literal_keys(path.read_text(), str(path.relative_to(ROOT)))]
    assert not found, "write these keys as ui/keys.py constants:\n" + "\n".join(found)


def test_pages_import_no_plotting_library():
    """app.py routes the pages (each one a stage's deck.run); ui/drawing/figures.py builds
    figures."""
    bad = []
    for path in [ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            bad += [f"{path.name}:{node.lineno}: {n}" for n in names
                    if any(n == m or n.startswith(m + ".") for m in FIGURE_MODULES)]
    assert not bad, bad


def constants() -> dict[str, str]:
    return {n: v for n, v in vars(keys).items() if n.isupper() and isinstance(v, str)}


def test_every_key_constant_is_unique_and_used():
    values = list(constants().values())
    dupes = {v for v in values if values.count(v) > 1}
    assert not dupes, f"two names for the same key: {dupes}"
    # keys built at run time stay apart from the fixed ones
    built = [keys.qkv(k) for k in ("Q", "K", "V", "QKV")]
    built += [keys.kept(k) for k in (keys.PRESENTER, keys.MODEL, keys.MASK, keys.SAMPLE)]
    assert not set(built) & set(values)
    # every constant is read somewhere: by a page or ui module, or by a key builder in keys.py
    used = set()
    for path in UI_FILES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                    node.value.id == "keys"):
                used.add(node.attr)
            elif path == KEYS_FILE and isinstance(node, ast.Name) and isinstance(
                    node.ctx, ast.Load):
                used.add(node.id)
    assert not set(constants()) - used, f"unused keys: {set(constants()) - used}"
