"""The house's numbers, read from the source (standard library only: ast, tokenize, pathlib).

    python tools/house.py [--root DIR] [--json]

Each measure is a function of the repository's root that returns plain data (tests import them):

    big_modules      ui/'s largest modules and every one over MODULE_LIMIT lines (lines = the
                     file's physical lines, blank and comment lines included)
    long_functions   every function in ui/, vit_core/, app.py over FUNCTION_LINES lines
                     (`def` line to last line, nested functions included) or FUNCTION_BRANCHES
                     branches. The branch rule: each `if` and `elif`, `for`, `while` (async too),
                     `except` clause, boolean operator (`a and b or c`: two), `if` of a
                     comprehension and ternary (`x if c else y`) counts one. `else`, `with`,
                     `try`, `match` and a comprehension's `for` do not. A nested function's
                     branches are its own, not its parent's.
    repeats          blocks of REPEAT_WINDOW or more lines that occur in two places or more across
                     ui/, vit_core/, app.py, tools/. Lines are compared normalised: tokens
                     joined by one space (so indentation and comments do not matter); blank lines,
                     comment lines, import statements and lines of brackets/commas alone are left
                     out, and a window is REPEAT_WINDOW consecutive kept lines. Overlapping windows
                     that repeat in the same places are one block.
    cycles           import circles in the graph of ui/, vit_core/ and app.py: every import
                     statement (inside functions too) and every `importlib.import_module(...)` or
                     `__import__(...)` whose name is a literal or an f-string that can be resolved
                     (`__name__`/`__package__`; a part `{D[k]}` with D a module-level dict literal
                     takes D's values; any other part matches one name of a module that exists).
    private_uses     private names reached outside the one guarded module (GUARDED): imports from
                     Streamlit modules outside its documented API or from modules with a `_` name,
                     `from x import _y` of another library, and `obj._attr` (also getattr/setattr
                     with a literal `"_attr"`) where `obj` starts from another library's name or
                     `_attr` is defined nowhere in the repository (so it is not ours).
    hand_formats     numbers formatted by hand in ui/stages/ (they go through
    ui/drawing/numbers.py):
                     f-string specs with a `%` or a precision (`:.0%`, `:.2f`), printf-style
                     `"%.2f" % x`, `format(x, ".1f")`, `"{:.1%}".format(x)`, `round(100 * x)`.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import sys
import tokenize
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE_LIMIT = 400
FUNCTION_LINES, FUNCTION_BRANCHES = 60, 15
REPEAT_WINDOW = 6
GRAPH_DIRS = ("ui", "vit_core", "app.py")
CODE_DIRS = GRAPH_DIRS
REPEAT_DIRS = (*GRAPH_DIRS, "tools")
GUARDED = ("ui/serving/server.py",)
STAGES_DIR = "ui/stages"
# Streamlit's documented modules: `import streamlit as st` and these; every other one is private.
STREAMLIT_PUBLIC = ("streamlit", "streamlit.components.v1", "streamlit.components.v2",
                    "streamlit.testing.v1", "streamlit.column_config")
STREAMLIT_SUBMODULES = ("config", "runtime", "proto", "web", "elements", "delta_generator",
                        "source_util", "util", "logger", "watcher", "commands", "navigation")


# ---------------------------------------------------------------- reading the tree
def python_files(root: Path, dirs=CODE_DIRS) -> list[Path]:
    """The .py files under `dirs` (a directory or a file each), relative paths sorted."""
    root = Path(root)
    out = []
    for d in dirs:
        p = root / d
        out += [p] if p.is_file() else sorted(p.rglob("*.py")) if p.is_dir() else []
    return [p for p in out if ".venv" not in p.parts]


def rel(root: Path, path: Path) -> str:
    return Path(path).relative_to(root).as_posix()


def parse(path: Path) -> ast.Module:
    return ast.parse(Path(path).read_text(), str(path))


def module_name(root: Path, path: Path) -> str:
    parts = list(Path(path).relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# ---------------------------------------------------------------- (1) modules, (2) functions
def big_modules(root=ROOT, top: int = 5, limit: int = MODULE_LIMIT) -> list[dict]:
    """ui/'s `top` largest modules and every one over `limit` lines, largest first:
    [{"path", "lines", "over"}]."""
    sizes = sorted(((len(p.read_text().splitlines()), rel(root, p))
                    for p in python_files(root, ("ui",))), reverse=True)
    return [{"path": path, "lines": n, "over": n > limit}
            for i, (n, path) in enumerate(sizes) if i < top or n > limit]


def branches(node: ast.AST) -> int:
    """The branches of one function by the module's rule, nested functions left out."""
    count = 0
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(child, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler,
                              ast.IfExp)):
            count += 1
        elif isinstance(child, ast.BoolOp):
            count += len(child.values) - 1
        elif isinstance(child, ast.comprehension):
            count += len(child.ifs)
        count += branches(child)
    return count


def functions(tree: ast.Module):
    """(qualified name, node) of every function in a module, methods and nested ones too."""
    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield prefix + child.name, child
                yield from walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")
            else:
                yield from walk(child, prefix)
    return walk(tree, "")


def function_sizes(root=ROOT, dirs=CODE_DIRS) -> list[dict]:
    """Every function: [{"path", "name", "line", "lines", "branches"}]."""
    out = []
    for path in python_files(root, dirs):
        for name, node in functions(parse(path)):
            out.append({"path": rel(root, path), "name": name, "line": node.lineno,
                        "lines": node.end_lineno - node.lineno + 1, "branches": branches(node)})
    return out


def long_functions(root=ROOT, dirs=CODE_DIRS, max_lines: int = FUNCTION_LINES,
                   max_branches: int = FUNCTION_BRANCHES) -> list[dict]:
    """The functions over `max_lines` lines or `max_branches` branches, worst first."""
    over = [f for f in function_sizes(root, dirs)
            if f["lines"] > max_lines or f["branches"] > max_branches]
    return sorted(over, key=lambda f: (-max(f["lines"] / max_lines,
                                            f["branches"] / max_branches), f["path"]))


# ---------------------------------------------------------------- (3) repeated blocks
BRACKETS_ONLY = re.compile(r"^[\s()\[\]{},:;]*$")
SKIPPED_TOKENS = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                  tokenize.DEDENT, tokenize.ENDMARKER)


def kept_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, normalised text) of a file's lines that count for repeats."""
    text = Path(path).read_text()
    imports = {n for node in ast.walk(ast.parse(text)) if isinstance(node, (ast.Import,
               ast.ImportFrom)) for n in range(node.lineno, node.end_lineno + 1)}
    lines: dict[int, list[str]] = defaultdict(list)
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in SKIPPED_TOKENS and tok.start[0] not in imports:
            lines[tok.start[0]].append(tok.string)
    return [(n, " ".join(words)) for n, words in sorted(lines.items())
            if not BRACKETS_ONLY.match(" ".join(words))]


def repeats(root=ROOT, dirs=REPEAT_DIRS, window: int = REPEAT_WINDOW) -> list[dict]:
    """Blocks of `window`+ normalised lines found in two places or more, most places (then
    longest) first: [{"lines": n kept lines, "places": [(path, first line), ...], "text"}]."""
    files = {rel(root, p): kept_lines(p) for p in python_files(root, dirs)}
    seen: dict[tuple, list[tuple[str, int]]] = defaultdict(list)  # window -> (path, index)
    for path, lines in files.items():
        for i in range(len(lines) - window + 1):
            seen[tuple(t for _, t in lines[i:i + window])].append((path, i))
    repeated = {places[0]: places for places in seen.values() if len(places) > 1}
    at = {place: key for key, places in repeated.items() for place in places}
    blocks = []
    for first, places in repeated.items():
        if _continues(places, at, repeated, -1):
            continue  # the window before repeats in the same places: part of that block
        length = window
        while _continues([(p, i + length - window) for p, i in places], at, repeated, +1):
            length += 1
        blocks.append({"lines": length, "places": sorted((p, files[p][i][0]) for p, i in places),
                       "text": [t for _, t in files[first[0]][first[1]:first[1] + length]]})
    return sorted(blocks, key=lambda b: (-len(b["places"]), -b["lines"], b["places"]))


def _continues(places, at, repeated, step: int) -> bool:
    """Whether the windows one line after (step +1) / before (-1) `places` repeat in exactly
    those places shifted."""
    moved = [(p, i + step) for p, i in places]
    key = at.get(moved[0])
    return key is not None and sorted(repeated[key]) == sorted(moved)


# ---------------------------------------------------------------- (4) import cycles
def literal_dicts(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level `NAME = {...}` dict literals -> their string values."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            values = [v.value for v in node.value.values
                      if isinstance(v, ast.Constant) and isinstance(v.value, str)]
            out.update({t.id: values for t in node.targets if isinstance(t, ast.Name)})
    return out


def dynamic_names(node: ast.Call, name: str, package: str, dicts: dict) -> list[str] | None:
    """The module name(s) an `importlib.import_module(...)` / `__import__(...)` call may import,
    as regular expressions; None for another call or a name that cannot be read."""
    f = node.func
    is_import = (isinstance(f, ast.Attribute) and f.attr == "import_module") or \
        (isinstance(f, ast.Name) and f.id in ("import_module", "__import__"))
    if not is_import or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        parts = [re.escape(arg.value)]
    elif isinstance(arg, ast.JoinedStr):
        parts = [_fstring_part(v, name, package, dicts) for v in arg.values]
    else:
        return None
    pattern = "".join(parts)
    if pattern.startswith(r"\."):  # relative: import_module(".x", package=__package__)
        pattern = re.escape(package) + pattern
    return [pattern]


def _fstring_part(v, name: str, package: str, dicts: dict):
    if isinstance(v, ast.Constant):
        return re.escape(str(v.value))
    expr = v.value
    if isinstance(expr, ast.Name) and expr.id in ("__name__", "__package__"):
        return re.escape(name if expr.id == "__name__" else package)
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name) \
            and expr.value.id in dicts:
        return "(" + "|".join(re.escape(s) for s in dicts[expr.value.id]) + ")"
    return r"[^.]+"  # anything else: any one name


def imports_in(name: str, path: Path, known, dynamic: bool = True) -> set[str]:
    """Every module of `known` that the module `name` at `path` imports: import statements
    anywhere in the file (inside functions too) and, with `dynamic`, importlib/__import__ calls
    whose names can be read (see the module docstring)."""
    package = name if Path(path).name == "__init__.py" else name.rpartition(".")[0]
    tree = parse(path)
    dicts = literal_dicts(tree) if dynamic else {}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                      for a in node.names}  # `from pkg import mod`: a module, or a name in pkg
        elif dynamic and isinstance(node, ast.Call):
            for pattern in dynamic_names(node, name, package, dicts) or ():
                found |= {m for m in known if re.fullmatch(pattern, m)}
    return (found & set(known)) - {name}


def _absolute(node: ast.ImportFrom, package: str) -> str:
    base = node.module or ""
    if not node.level:
        return base
    anchor = package.split(".")
    anchor = anchor[:len(anchor) - (node.level - 1)]
    return ".".join(anchor + ([base] if base else []))


def import_graph(root=ROOT, dirs=GRAPH_DIRS, dynamic: bool = True) -> dict[str, set[str]]:
    mods = {module_name(root, p): p for p in python_files(root, dirs)}
    return {name: imports_in(name, path, set(mods), dynamic) for name, path in mods.items()}


def strong_components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
                on.discard(comp[-1])
            if len(comp) > 1:
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(out, key=lambda c: (-len(c), c))


def cycles(root=ROOT, dirs=GRAPH_DIRS, dynamic: bool = True) -> list[list[str]]:
    """The import circles (strongly connected components), largest first."""
    return strong_components(import_graph(root, dirs, dynamic))


# ---------------------------------------------------------------- (5) private names
def defined_names(root: Path, dirs=REPEAT_DIRS + ("tests",)) -> set[str]:
    """Every underscore name the repository defines (functions, classes, assignments, self._x)."""
    out = set()
    for path in python_files(root, dirs):
        for node in ast.walk(parse(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                    and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                out.add(node.attr)
    return {n for n in out if _private(n)}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_module(module: str) -> bool:
    if module == "streamlit" or module.startswith("streamlit."):
        return module not in STREAMLIT_PUBLIC
    return any(_private(part) for part in module.split("."))


def foreign_names(tree: ast.Module, own: set[str]) -> dict[str, str]:
    """Names bound (at any level) to another library's module or object -> that module."""
    out = _imported_names(tree, own)
    for node in tree.body:  # BASE = asyncio.x.Y: BASE is asyncio's too
        if isinstance(node, ast.Assign) and _root_name(node.value) in out:
            for t in node.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out[n.id] = out[_root_name(node.value)]
    return out


def _imported_names(tree: ast.Module, own: set[str]) -> dict[str, str]:
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] not in own:
                    out[(a.asname or a.name).split(".")[0]] = a.name
        elif isinstance(node, ast.ImportFrom) and not node.level \
                and (node.module or "").split(".")[0] not in own:
            out.update({a.asname or a.name: node.module for a in node.names})
    return out


def _root_name(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def private_uses(root=ROOT, dirs=CODE_DIRS, guarded=GUARDED) -> list[dict]:
    """Private names of other libraries (Streamlit, the standard library, ...) used outside the
    guarded module(s): [{"path", "line", "what", "library"}]."""
    root = Path(root)
    ours = defined_names(root)
    own_tops = {p.name.removesuffix(".py") for p in root.iterdir() if p.suffix == ".py"
                or (p / "__init__.py").exists()}
    out = []
    for path in python_files(root, dirs):
        if rel(root, path) in guarded:
            continue
        tree = parse(path)
        foreign = foreign_names(tree, own_tops)
        for line, what, library in _private_in(tree, foreign, ours, own_tops):
            out.append({"path": rel(root, path), "line": line, "what": what, "library": library})
    return sorted(out, key=lambda u: (u["path"], u["line"], u["what"]))


def _private_in(tree, foreign: dict, ours: set, own_tops: set):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from _private_import(node, own_tops)
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            yield from _private_attribute(node, node.attr, foreign, ours)
        elif _getattr_private(node):
            yield from _private_attribute(node.args[0], node.args[1].value, foreign, ours,
                                          node.lineno)


def _getattr_private(node) -> bool:
    """getattr/setattr/hasattr/delattr(obj, "_name", ...) with a literal private name."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
        and node.func.id in ("getattr", "setattr", "hasattr", "delattr") \
        and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
        and isinstance(node.args[1].value, str) and _private(node.args[1].value)


def _private_import(node, own_tops: set):
    if isinstance(node, ast.Import):
        for a in node.names:
            if _private_module(a.name) and a.name.split(".")[0] not in own_tops:
                yield node.lineno, f"import {a.name}", a.name.split(".")[0]
        return
    if node.level or not node.module or node.module.split(".")[0] in own_tops:
        return
    module = node.module
    for a in node.names:
        sub = module == "streamlit" and a.name in STREAMLIT_SUBMODULES  # streamlit.config
        if _private_module(module) or _private(a.name) or sub:
            yield node.lineno, f"from {module} import {a.name}", module.split(".")[0]


def _private_attribute(node, attr: str, foreign: dict, ours: set, line: int | None = None):
    obj = node.value if isinstance(node, ast.Attribute) and line is None else node
    root = _root_name(obj)
    if root in ("self", "cls") and attr in ours:
        return
    library = foreign.get(root, "").split(".")[0] if root else ""
    if library or attr not in ours:
        yield (line or node.lineno), f"{ast.unparse(obj)}.{attr}", library or "unknown"


# ---------------------------------------------------------------- numbers by hand
PRINTF = re.compile(r"%[-+ #0]*\d*(\.\d+)?[dfegEGs%]")


def hand_formats(root=ROOT, dirs=(STAGES_DIR,)) -> list[dict]:
    """Numbers formatted by hand in the stages: [{"path", "line", "what", "kind"}], kind
    "share" (a `%` spec, or a value times 100) or "number" (a precision: `:.2f`, `%.3g`)."""
    out = []
    for path in python_files(root, dirs):
        for node in ast.walk(parse(path)):
            what = _hand_format(node)
            if what:
                kind = "share" if "%" in what.replace("%%", "") and not _printf_number(what) \
                    or _times_100(node) else "number"
                out.append({"path": rel(root, path), "line": node.lineno, "what": what,
                            "kind": kind})
    return sorted(out, key=lambda u: (u["path"], u["line"]))


def _printf_number(what: str) -> bool:
    """A printf-style format whose only % signs are its specs (not a share)."""
    return bool(PRINTF.search(what)) and "%%" not in what and ":" not in what


def _times_100(node) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult) and any(
        isinstance(s, ast.Constant) and s.value == 100 for s in (n.left, n.right))
        for n in ast.walk(node))


def _hand_format(node) -> str | None:
    if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
        spec = ast.unparse(node.format_spec)[2:-1]  # f'...' -> ...
        if "%" in spec or re.search(r"\.\d|\.\{", spec) or spec.endswith(("f", "e", "g")):
            return f"{{{ast.unparse(node.value)}:{spec}}}"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) \
            and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str) \
            and any(m.group(1) for m in PRINTF.finditer(node.left.value)):
        return ast.unparse(node)
    if isinstance(node, ast.Call):
        return _hand_format_call(node)
    return None


def _hand_format_call(node: ast.Call) -> str | None:
    f = node.func
    if isinstance(f, ast.Name) and f.id == "format" and len(node.args) == 2:
        return ast.unparse(node)
    if isinstance(f, ast.Attribute) and f.attr == "format" and isinstance(f.value, ast.Constant) \
            and isinstance(f.value.value, str) and re.search(r"\{[^}]*:[^}]*[.%]", f.value.value):
        return ast.unparse(node)
    if isinstance(f, ast.Name) and f.id == "round" and node.args and _times_100(node.args[0]):
        return ast.unparse(node)
    return None


# ---------------------------------------------------------------- the report
def measure(root=ROOT) -> dict:
    """Every measure, as plain data."""
    blocks = repeats(root)
    return {"big_modules": big_modules(root), "long_functions": long_functions(root),
            "repeats": {"count": len(blocks), "lines": sum(b["lines"] for b in blocks),
                        "top": blocks[:5]},
            "cycles": cycles(root), "private_uses": private_uses(root),
            "hand_formats": hand_formats(root)}


def table(m: dict) -> str:
    """The measures as text tables."""
    big = m["big_modules"]
    over = [b for b in big if b["over"]]
    out = [f"(1) ui/ modules: largest {big[0]['lines'] if big else 0} lines; "
           f"{len(over)} over {MODULE_LIMIT}"]
    out += [f"    {b['lines']:5d}  {b['path']}{'  (over)' if b['over'] else ''}" for b in big]
    out.append(f"(2) functions over {FUNCTION_LINES} lines or {FUNCTION_BRANCHES} branches: "
               f"{len(m['long_functions'])}")
    out += [f"    {f['lines']:4d} lines {f['branches']:3d} branches  {f['path']}:{f['line']} "
            f"{f['name']}" for f in m["long_functions"]]
    r = m["repeats"]
    out.append(f"(3) repeated blocks ({REPEAT_WINDOW}+ normalised lines, 2+ places): "
               f"{r['count']} blocks, {r['lines']} lines; the top {len(r['top'])}:")
    for b in r["top"]:
        places = ", ".join(f"{p}:{n}" for p, n in b["places"])
        out.append(f"    {len(b['places'])}x {b['lines']} lines  {places}")
        out.append(f"        {b['text'][0][:90]}")
    out.append(f"(4) import cycles (importlib and in-function imports read): {len(m['cycles'])}")
    out += [f"    {len(c)} modules: {' '.join(c)}" for c in m["cycles"]]
    out.append(f"(5) private names outside {', '.join(GUARDED)}: {len(m['private_uses'])}")
    out += [f"    {u['path']}:{u['line']}  {u['what']}  ({u['library']})"
            for u in m["private_uses"]]
    hand = m["hand_formats"]
    shares = [u for u in hand if u["kind"] == "share"]
    out.append(f"(6) numbers formatted by hand in {STAGES_DIR}/: {len(shares)} shares, "
               f"{len(hand) - len(shares)} other numbers (by module: "
               f"{_per_module(u for u in hand if u['kind'] == 'number')})")
    out += [f"    {u['path']}:{u['line']}  {u['what']}" for u in shares]
    return "\n".join(out)


def _per_module(uses) -> str:
    counts: dict[str, int] = defaultdict(int)
    for u in uses:
        counts[Path(u["path"]).stem] += 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="the repository's root")
    ap.add_argument("--json", action="store_true", help="print the measures as JSON")
    args = ap.parse_args(argv)
    m = measure(args.root.resolve())
    print(json.dumps(m, indent=1) if args.json else table(m))
    return 0


if __name__ == "__main__":
    sys.exit(main())
