"""The deck knows nothing of the class (issue 40, item 4): read from the source (every import,
those inside functions too: tests/imports.py), the deck and presenter mode's steps reach neither
ui/live nor the stages, and no stage reaches ui/live; the class joins the deck only where
`deck.Lesson` names, which app.py wires."""

from tests.imports import import_graph
from ui.lesson import deck
from ui.live import lesson


def reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for found in graph.get(todo.pop(), ()):
            if found not in seen:
                seen.add(found)
                todo.append(found)
    return seen


def test_the_deck_reaches_neither_the_class_nor_the_stages():
    graph = import_graph(("ui", "vit_core"))
    for name in ("ui.lesson.deck", "ui.lesson.steps"):
        found = reach(graph, name)
        assert not {m for m in found if m.startswith("ui.live")}, name
        assert not {m for m in found if m == "ui.stages" or m.startswith("ui.stages.")}, name
    for stage in (m for m in graph if m.startswith("ui.stages.")):
        assert not {m for m in reach(graph, stage) if m.startswith("ui.live")}, stage


def test_the_deck_alone_is_a_slide_show():
    """Every join point's default does nothing: one step only in presenter mode, Reveal for a
    question, the whole tour for Next, nothing added to the address (the live class's answers
    are tested through the app: tests/test_live_class.py, tests/test_live_browser.py)."""
    alone = deck.Lesson()
    assert not alone.follows() and alone.address() == {}
    assert alone.walk("attention", ["overview", "attention"]) == ["overview", "attention"]
    assert alone.question("attention", "pattern", deck.Question("q", "a"), None) is False
    assert isinstance(lesson.LESSON, deck.Lesson)
