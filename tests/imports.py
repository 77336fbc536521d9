"""The import graph of the repository's own modules, read from the source: every import
statement, lazy ones too, not what an import happens to load (tests/test_layout.py,
tests/test_package_layout.py)."""

from __future__ import annotations

from pathlib import Path

from tools.house import imports_in, strong_components

ROOT = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ("vit_core", "ui", "tools", "benchmarks", "tests")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def own_modules(dirs=SOURCE_DIRS, app: bool = True) -> dict[str, Path]:
    files = [ROOT / "app.py"] * app + [p for d in dirs for p in (ROOT / d).rglob("*.py")]
    return {module_name(p): p for p in files if ".venv" not in p.parts}


def imports_of(name: str, path: Path, known: set[str], dynamic: bool = True) -> set[str]:
    """Every repository module that `path` imports: import statements anywhere in the file
    (lazily or not) and, with `dynamic`, `importlib.import_module(...)` / `__import__(...)` calls
    whose names can be read (tools/house.py says how)."""
    return imports_in(name, path, known, dynamic)


def import_graph(dirs=SOURCE_DIRS, app: bool = True, dynamic: bool = True) -> dict[str, set[str]]:
    """module -> the repository modules it imports, importlib calls included (`dynamic=False`
    reads import statements only)."""
    mods = own_modules(dirs, app)
    return {name: imports_of(name, path, set(mods), dynamic) for name, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan; tools/house.py)."""
    return strong_components(graph)
