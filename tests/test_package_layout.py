"""vit_core's packages import one way: the model (the modules at the top: config, model, hooks,
trace, masks, patches), then io and explain, then the scene world, which imports both. Read
from the source (every import statement, lazy ones too), not from what an import happens to
load. The package's own __init__ (a facade re-exporting from every layer) and the fetch CLI sit
on top of everything and are their own nodes; nothing in vit_core imports them."""

from __future__ import annotations

import pytest

from tests.imports import cycles, import_graph

SUBPACKAGES = ("vit_core.io", "vit_core.explain", "vit_core.scenes")
ENTRY_POINTS = ("vit_core", "vit_core.fetch")  # the facade and the CLI: imported by no module


def module_graph() -> dict[str, set[str]]:
    """vit_core's modules (a package by its own name, for its __init__) -> the ones it imports."""
    return import_graph(dirs=("vit_core",), app=False)


def package_of(module: str) -> str:
    """The node a module belongs to: its subpackage, the model (vit_core's top-level modules),
    or itself for an entry point."""
    if module in ENTRY_POINTS:
        return module
    return next((p for p in SUBPACKAGES if module == p or module.startswith(p + ".")),
                "vit_core (the model)")


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        out.setdefault(package_of(module), set()).update(
            package_of(d) for d in deps if package_of(d) != package_of(module))
    return out


def test_the_cycle_check_sees_a_package_cycle():
    graph = module_graph()
    graph["vit_core.explain.stages"] = graph["vit_core.explain.stages"] | {"vit_core.scenes.world"}
    assert cycles(module_graph()) == []  # modules alone: no cycle here...
    found = cycles(package_graph(graph))  # ...but explain -> scenes -> explain is one
    assert found and {"vit_core.explain", "vit_core.scenes"} <= set(found[0]), found


def test_the_scan_sees_the_imports():
    graph = module_graph()
    assert "vit_core.explain.segmentation" in graph["vit_core.scenes.train"]  # `from ..x import`
    assert "vit_core.io.hub" in graph["vit_core.fetch"]  # `from .io import hub`: a module
    assert "vit_core.io.external" in graph["vit_core.io.hub"]  # a lazy import counts


@pytest.mark.parametrize("level", ["module", "package"])
def test_vit_core_imports_in_no_circle(level):
    graph = module_graph()
    assert cycles(graph if level == "module" else package_graph(graph)) == []


def test_the_packages_point_one_way():
    packages = package_graph(module_graph())
    model = "vit_core (the model)"
    assert packages[model] == set()  # the model imports no io, explain or scenes
    assert "vit_core.scenes" not in packages["vit_core.explain"] | packages["vit_core.io"]
    assert packages["vit_core.scenes"] >= {"vit_core.explain", "vit_core.io", model}
    assert not any(entry in deps for deps in packages.values() for entry in ENTRY_POINTS)
