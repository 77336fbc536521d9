"""tools/house.py's measures on tiny source trees written here: each test states what the tree
holds (a circle through importlib, a 61-line function, a repeated block, a private name) and
fails when the measure misses it or finds what is not there."""

from __future__ import annotations

import json
import textwrap

from tests.imports import imports_of
from tools import house


def write(root, files: dict[str, str]):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


# ---------------------------------------------------------------- import cycles
STAGES = {
    "ui/__init__.py": "",
    "ui/stages/__init__.py": """
        import importlib
        MODULES = {"one": "first", "two": "second"}

        def get(slug):
            return importlib.import_module(f"{__name__}.{MODULES[slug]}").STAGE
        """,
    "ui/stages/first.py": "from ui import deck\nSTAGE = 1\n",
    "ui/stages/second.py": "STAGE = 2\n",
    "ui/stages/third.py": "STAGE = 3\n",  # not in MODULES: never imported
    "ui/deck.py": """
        def run():
            from ui import stages  # inside a function: still an import
            return stages
        """,
}


def test_a_circle_through_importlib_and_a_lazy_import_is_found(tmp_path):
    root = write(tmp_path, STAGES)
    assert house.cycles(root) == [["ui.deck", "ui.stages", "ui.stages.first"]]
    graph = house.import_graph(root)
    assert graph["ui.stages"] == {"ui.stages.first", "ui.stages.second"}  # MODULES' values only
    assert house.cycles(root, dynamic=False) == []  # the old reading misses it


def test_literal_relative_and_dunder_imports_are_read(tmp_path):
    root = write(tmp_path, {
        "ui/__init__.py": "",
        "ui/a.py": "import importlib\nm = importlib.import_module('.b', package=__package__)\n",
        "ui/b.py": "x = __import__('ui.c')\n",
        "ui/c.py": "def f():\n    import ui.a\n",
        "ui/d.py": "import importlib\nimportlib.import_module(f'ui.{NAME}')\n",
    })
    assert house.cycles(root) == [["ui.a", "ui.b", "ui.c"]]
    known = set(house.import_graph(root))
    # a part that cannot be read matches any one name: every module right under ui but itself
    assert house.imports_in("ui.d", root / "ui/d.py", known) == {"ui.a", "ui.b", "ui.c"}


def test_the_projects_import_graph_reads_importlib_unless_told_not_to(tmp_path):
    root = write(tmp_path, STAGES)
    known = {"ui", "ui.stages", "ui.stages.first", "ui.stages.second", "ui.deck"}
    path = root / "ui/stages/__init__.py"
    assert imports_of("ui.stages", path, known, dynamic=False) == set()  # statements only
    assert imports_of("ui.stages", path, known) == {"ui.stages.first", "ui.stages.second"}
    assert imports_of("ui.deck", root / "ui/deck.py", known) == {"ui.stages"}


# ---------------------------------------------------------------- functions and modules
def long_function(lines: int) -> str:
    body = "".join(f"    x{i} = {i}\n" for i in range(lines - 2))
    return f"def f():\n{body}    return 0\n"


def test_a_61_line_function_is_over_and_a_60_line_one_is_not(tmp_path):
    write(tmp_path, {"ui/a.py": long_function(61), "vit_core/b.py": long_function(60)})
    over = house.long_functions(tmp_path)
    assert [(f["path"], f["name"], f["lines"]) for f in over] == [("ui/a.py", "f", 61)]


BRANCHY = """
    def f(a, b, xs):
        if a and b or a:                 # if 1, boolean operators 2
            pass
        elif b:                          # elif 1
            pass
        else:
            pass
        for x in xs:                     # 1
            while x:                     # 1
                x -= 1
        try:
            pass
        except ValueError:               # 1
            pass
        except KeyError:                 # 1
            pass
        with open(a) as fh:              # with: 0
            pass
        ys = [x for x in xs if x if b]   # comprehension ifs 2 (its for: 0)
        z = a if b else None             # ternary 1

        def inner():                     # its own, not f's
            if a:
                pass
        return ys, z, inner
    """


def test_branches_are_counted_by_the_documented_rule(tmp_path):
    write(tmp_path, {"ui/a.py": BRANCHY})
    sizes = {f["name"]: f["branches"] for f in house.function_sizes(tmp_path)}
    assert sizes == {"f": 11, "f.inner": 1}
    assert house.long_functions(tmp_path, max_branches=10)[0]["name"] == "f"
    assert house.long_functions(tmp_path, max_branches=11) == []


def test_big_modules_lists_the_largest_and_every_one_over_the_limit(tmp_path):
    write(tmp_path, {"ui/big.py": "x = 1\n" * 401, "ui/edge.py": "x = 1\n" * 400,
                     **{f"ui/small{i}.py": "x = 1\n" * i for i in range(1, 8)},
                     "vit_core/huge.py": "x = 1\n" * 900})  # not ui/: not counted
    big = house.big_modules(tmp_path, top=3)
    assert [(b["path"], b["lines"], b["over"]) for b in big] == [
        ("ui/big.py", 401, True), ("ui/edge.py", 400, False), ("ui/small7.py", 7, False)]


# ---------------------------------------------------------------- repeated blocks
BLOCK = """
    total = 0
    for item in items:
        total += item.size
    mean = total / len(items)
    spread = max(items) - min(items)
    print(mean, spread)
    """


def test_a_block_repeated_in_two_places_is_found_once(tmp_path):
    indented = textwrap.indent(textwrap.dedent(BLOCK), "    ").replace(
        "total += item.size", "total  +=  item.size  # a comment")
    write(tmp_path, {
        "ui/a.py": "import os\n" + textwrap.dedent(BLOCK),
        "tools/b.py": "def f(items):\n    import sys\n\n    # why\n" + indented + "    return 1\n",
        "vit_core/c.py": "\n".join(textwrap.dedent(BLOCK).splitlines()[:-1]),  # 5 of the lines
    })
    blocks = house.repeats(tmp_path)
    assert len(blocks) == 1, blocks
    assert blocks[0]["lines"] == 6
    assert blocks[0]["places"] == [("tools/b.py", 6), ("ui/a.py", 3)]  # lines of "total = 0"
    assert blocks[0]["text"][0] == "total = 0"


def test_a_longer_repeat_is_one_block_not_overlapping_windows(tmp_path):
    text = "".join(f"value_{i} = compute({i}, scale={i * 3})\n" for i in range(10))
    write(tmp_path, {"ui/a.py": text, "ui/b.py": "other = 1\n" + text})
    blocks = house.repeats(tmp_path)
    assert [(b["lines"], len(b["places"])) for b in blocks] == [(10, 2)]


# ---------------------------------------------------------------- private names
PRIVATE = """
    import asyncio
    from streamlit.runtime import Runtime
    import streamlit as st
    from streamlit.testing.v1 import AppTest
    from ui import helpers

    BASE = asyncio.SelectorEventLoop

    def push(session):
        Runtime.instance()._session_mgr.get(1)
        session._scriptrunner.request_rerun()
        BASE._write_to_self = None
        getattr(st, "_private_thing")
        helpers._ours()          # the repository's own private function: not a library's
        st.write(AppTest)
    """


def test_private_names_of_libraries_are_found_outside_the_guarded_module(tmp_path):
    # ui/helpers.py defines a _write_to_self of its own (as ui/wakeups.py does): BASE's is still
    # asyncio's, by where BASE comes from
    helpers = "def _ours():\n    pass\n\n\ndef _write_to_self(loop):\n    pass\n"
    write(tmp_path, {"ui/__init__.py": "", "ui/helpers.py": helpers,
                     "ui/push.py": PRIVATE, "ui/server.py": PRIVATE})
    found = {(u["line"], u["what"], u["library"]) for u in house.private_uses(tmp_path)
             if u["path"] == "ui/push.py"}
    assert found == {
        (3, "from streamlit.runtime import Runtime", "streamlit"),
        (11, "Runtime.instance()._session_mgr", "streamlit"),
        (12, "session._scriptrunner", "unknown"),
        (13, "BASE._write_to_self", "asyncio"),
        (14, "st._private_thing", "streamlit"),
    }
    guarded = house.private_uses(tmp_path, guarded=("ui/server.py",))
    assert {u["path"] for u in guarded} == {"ui/push.py"}  # server guarded


# ---------------------------------------------------------------- numbers by hand
def test_hand_made_formats_in_a_stage_are_found(tmp_path):
    write(tmp_path, {
        "ui/stages/a.py": """
            from ui.numbers import pct
            def words(p, x, n):
                return [f"{p:.0%}", f"{x:.2f}", "%.1f" % x, round(100 * p), pct(p), f"{n}",
                        f"{n:>4}", "{:.1%}".format(p), "100%"]
            """,
        "ui/figures.py": "s = f'{0.5:.0%}'\n",  # not a stage
    })
    found = {(u["what"], u["kind"]) for u in house.hand_formats(tmp_path)}
    assert found == {("{p:.0%}", "share"), ("{x:.2f}", "number"), ("'%.1f' % x", "number"),
                     ("round(100 * p)", "share"), ("'{:.1%}'.format(p)", "share")}


def test_the_script_prints_every_measure(tmp_path, capsys):
    write(tmp_path, STAGES | {"ui/a.py": long_function(61)})
    assert house.main(["--root", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cycles"] == [["ui.deck", "ui.stages", "ui.stages.first"]]
    assert [f["name"] for f in data["long_functions"]] == ["f"]
    house.main(["--root", str(tmp_path)])
    out = capsys.readouterr().out
    assert "(4) import cycles (importlib and in-function imports read): 1" in out
