"""Every stage is declared as a list of steps, and everything reads that list.

Builds every stage's declaration for each model family and checks what the header shows against
it (presenter mode, AppTest); no module addresses a step by its position (an AST check).
"""

import ast
import inspect
import re
import sys
from pathlib import Path

import pytest

from tests.support import open_app
from ui import keys, stages
from ui.lesson import deck
from ui.stages import BY_SLUG as STAGES
from vit_core import load_model

ROOT = Path(__file__).resolve().parents[1]
HUB = "tests/fixtures/hub"
FAMILIES = {  # one model per family whose steps differ
    "classifier": "shapes-classifier",
    "captioner": "shapes-captioner-causal",
    "no CLS, mean-pooled": f"{HUB}/timm/vit_tiny_avg_nocls.test",
    "headless": f"{HUB}/tiny-org/vit-headless",
    "distilled": f"{HUB}/tiny-org/deit-distilled",
}


def where(at) -> str:
    found = [m.value for m in at.markdown if re.search(r"(Stage \d+/\d+|Overview) · step", m.value)]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_stage_declares_steps_for_every_family(family):
    c = load_model(FAMILIES[family]).config
    for slug in STAGES:
        stage = stages.get(slug)
        assert isinstance(stage, deck.Stage) and stage.slug == slug
        steps = stage.steps_for(c)
        assert steps, slug
        assert len({s.key for s in steps}) == len(steps), f"{slug}: step keys repeat"
        for s in steps:
            title = s.title_for(c)
            assert isinstance(title, str) and title.strip(), (slug, s.key)
            assert set(s.controls) <= set(deck.CONTROLS), (slug, s.key, s.controls)


def test_every_read_a_step_declares_is_a_call_the_read_ahead_can_make():
    """A step's reads are the functions themselves (no name looked up elsewhere): each, given
    what a session shows, returns calls that take no argument (the read-ahead runs them)."""
    from ui.selection import inputs
    from ui.serving import tour

    inp = inputs.make_input("sample", inputs.sample_bytes(inputs.sample_seeds()[0]))
    for name in FAMILIES.values():
        c = load_model(name).config
        ask = tour.Ask(inp, name, None, 0, tour.MASK_CAPTION, 0)
        for slug in STAGES:
            stage = stages.get(slug)
            for read in [*stage.extra_reads, *(r for s in stage.steps_for(c) for r in s.reads)]:
                assert callable(read) and not isinstance(read, str), (slug, read)
                calls = read(ask)
                assert isinstance(calls, list), (slug, read)
                assert all(callable(f) and no_argument_needed(f) for f in calls), (slug, read)


def no_argument_needed(f) -> bool:
    return all(p.default is not p.empty for p in inspect.signature(f).parameters.values())


def test_the_reads_are_declared_with_their_stages():
    """ui/serving/tour.py has no table of reads by name; a read only one stage declares lives in
    it."""
    from ui.serving import tour

    assert not hasattr(tour, "READS")
    owners = {}
    for stage in stages.STAGES:
        for read in [*stage.extra_reads, *(r for s in stage.steps for r in s.reads)]:
            owners.setdefault(read, set()).add(stage.slug)
    for read, slugs in owners.items():
        if read.__module__ != "ui.serving.tour":
            assert len(slugs) == 1, (read.__qualname__, slugs)
            assert read.__module__.startswith(stage_module(next(iter(slugs)))), (
                read.__module__, slugs)


def stage_module(slug: str) -> str:
    """The module (or package) that declares stage `slug`: 'ui.stages.masks'."""
    found = [m for m, mod in sys.modules.items() if m.startswith("ui.stages.")
             and getattr(getattr(mod, "STAGE", None), "slug", None) == slug]
    assert len(found) == 1, (slug, found)
    return found[0]


def test_steps_differ_by_family_where_the_model_differs():
    titles = {f: stages.titles("logits", load_model(m).config) for f, m in FAMILIES.items()}
    assert titles["captioner"] != titles["classifier"] != titles["headless"]
    nocls = load_model(FAMILIES["no CLS, mean-pooled"]).config
    assert not any("CLS" in t for t in stages.titles("attention", nocls))
    deit = load_model(FAMILIES["distilled"]).config
    assert any("DIST" in t for t in stages.titles("attention", deit))


@pytest.mark.slow
@pytest.mark.parametrize("family", ["classifier", "captioner", "no CLS, mean-pooled"])
def test_the_header_shows_the_declared_steps(family):
    """Presenter mode on the last step of every stage: the header's count and title are the
    declaration's, and the step's question (if it has one) is the only one on the slide."""
    name = FAMILIES[family]
    c = load_model(name).config
    for i, slug in enumerate(STAGES):
        steps = stages.get(slug).steps_for(c)
        n = len(steps)
        at = open_app(model=name, params={"page": slug, "presenter": "1", "step": str(n)})
        head = where(at)
        assert f"step {n}/{n}" in head and steps[-1].title_for(c) in head, (slug, head)
        assert (f"Stage {i}/{len(STAGES) - 1}" if i else "Overview") in head
        toggles = [str(t.key) for t in at.toggle if str(t.key).startswith(keys.REVEAL_PREFIX)]
        assert set(toggles) <= {keys.reveal(slug, steps[-1].key)}, (slug, toggles)


# ---------------------------------------------------------------- no step by position
def python_files():
    for folder in ("ui", "pages", "tools"):
        yield from (ROOT / folder).rglob("*.py")
    yield ROOT / "app.py"


def positional_uses(tree: ast.AST) -> list[str]:
    """Calls like steps.show("attention", 2) / steps.first(), and subscripts like
    stage.steps[2] or steps_for(c)[k + 1] with a number in the index."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id == "steps" and \
                node.func.attr in ("show", "first"):
            found.append(f"line {node.lineno}: steps.{node.func.attr}(…)")
        if isinstance(node, ast.Subscript):
            target = ast.unparse(node.value)
            if "steps" in target or "titles" in target:
                numbers = [n for n in ast.walk(node.slice) if isinstance(n, ast.Constant) and
                           isinstance(n.value, int) and n.value not in (-1, 0)]
                if numbers or (isinstance(node.slice, ast.Constant) and node.slice.value == 0
                               and "titles" in target):
                    found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_addresses_a_step_by_its_position():
    bad = {}
    for path in python_files():
        found = positional_uses(ast.parse(path.read_text()))
        if found:
            bad[str(path.relative_to(ROOT))] = found
    assert not bad, bad


def test_the_position_check_finds_what_it_looks_for():
    assert positional_uses(ast.parse('if steps.show("attention", 2): pass'))
    assert positional_uses(ast.parse("x = stage.steps_for(c)[k + 1]"))
    assert positional_uses(ast.parse("x = titles[2]"))
    assert not positional_uses(ast.parse("x = stage.steps_for(c)[k]"))


def test_the_list_of_stages_is_the_tours_order():
    """ui/stages.STAGES (what reads a stage by its slug) holds every routed stage, in the tour's
    order, each once."""
    assert [s.slug for s in stages.STAGES] == list(STAGES)


# ---------------------------------------------------------------- each stage declares its keys
STAGES_DIR = ROOT / "ui" / "stages"
SHARED_MODULES = ("__init__.py", "common.py", "choices.py")  # ui/stages/ modules no stage owns


def stage_files() -> dict[str, list[Path]]:
    """Each stage's source files, by the name of its module or package."""
    found = {}
    for p in sorted(STAGES_DIR.iterdir()):
        if p.is_dir() and (p / "__init__.py").exists():
            found[p.name] = sorted(p.rglob("*.py"))
        elif p.suffix == ".py" and p.name not in SHARED_MODULES:
            found[p.stem] = [p]
    return found


def shared_key_uses(files) -> dict[str, set[str]]:
    """ui/keys.py's names -> the owners that use them as `keys.NAME` (a stage: its name)."""
    owners = {name: set() for name in dir(keys) if name.isupper()}
    by_stage = {f: stage for stage, fs in stage_files().items() for f in fs}
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id == "keys" and node.attr in owners:
                owners[node.attr].add(by_stage.get(f, str(f.relative_to(ROOT))))
    return owners


KEYS_MARK = "# the stage's own widget keys"  # atop a one-module stage: its keys, to a blank line


def own_keys(stage: str, files: list[Path]) -> dict[str, str]:
    """The widget keys the stage declares itself: a package's keys.py, or in a one-module stage
    the constants from the line starting KEYS_MARK to the first blank line."""
    if len(files) > 1:
        source = (STAGES_DIR / stage / "keys.py")
        text = source.read_text() if source.exists() else ""
    else:
        text = files[0].read_text()
        at = text.find("\n" + KEYS_MARK)
        text = text[at:].split("\n\n", 1)[0] if at >= 0 else ""
    found = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                isinstance(node.value.value, str) and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value.value
    return found


def widget_key_names(files: list[Path]) -> set[str]:
    """The bare names a stage keys its widgets by: `key=NAME`, and deck.chart / deck.table's
    key argument (`keys.X` are ui/keys.py's)."""
    found = set()
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "key":
                found.add(node.value)
            if isinstance(node, ast.Call) and ast.unparse(node.func) in DECK_KEYED and \
                    len(node.args) > 1:
                found.add(node.args[1])
    return {n.id for n in found if isinstance(n, ast.Name)}


DECK_KEYED = ("deck.chart", "deck.table", "chart", "table")  # (figure or rows, key, …)


def test_a_key_only_one_stage_uses_is_declared_in_that_stage():
    files = [ROOT / "app.py", *(ROOT / "ui").rglob("*.py")]
    only = {name: next(iter(o)) for name, o in shared_key_uses(files).items()
            if len(o) == 1 and next(iter(o)) in stage_files()}
    assert not only, f"move these from ui/keys.py into their stage: {only}"


def test_every_key_a_stage_names_is_declared_in_it():
    for stage, files in stage_files().items():
        declared = own_keys(stage, files)
        names = widget_key_names(files) - {"key"}  # a helper's own `key` argument passed on
        assert names <= set(declared), (stage, names - set(declared))


def test_no_key_is_declared_twice():
    values = [(getattr(keys, n), f"ui/keys.py {n}") for n in dir(keys)
              if n.isupper() and isinstance(getattr(keys, n), str)]
    values += [(v, f"{stage} {k}") for stage, files in stage_files().items()
               for k, v in own_keys(stage, files).items()]
    seen = {}
    for value, where in values:
        assert value not in seen, f"{value!r}: {seen[value]} and {where}"
        seen[value] = where
    assert len(seen) > 100  # every key of the app, read


def test_the_key_checks_find_what_they_look_for(tmp_path):
    f = tmp_path / "s.py"
    f.write_text(f'from ui import keys\n\n{KEYS_MARK}\nA = "a"\nC = "c"\n\nD = "d"\n'
                 'st.slider("x", key=A)\nst.radio("y", key=B)\ndeck.chart(fig, C)\n'
                 'st.button("z", key=keys.MAP_OPEN)\n')
    assert widget_key_names([f]) == {"A", "B", "C"}
    assert own_keys("s", [f]) == {"A": "a", "C": "c"}
