"""tools/class_load.py's reading of a student's pages and tools/class_report.py's sums, on runs
made up here (the runs themselves need servers: `python tools/class_load.py`)."""

from tools.class_load import Lesson, patch_set
from tools.class_report import PROBLEMS, summarize
from tools.st_protocol import Run
from tools.st_widgets import Widget
from ui import keys

WHERE = [("Why this answer?", k, 5, title) for k, title in
         ((1, "Guess first: which patches?"), (2, "Six maps of one answer"))]


def guess_page(chosen: int = 0, k: int = 3, n: int = 49) -> Run:
    """A student's guess step as tools/st_protocol reads it: the figure's multiselect of patch
    numbers, the answer box's caption and Send (ui/live/student._input for a PatchSet)."""
    return Run(0.1, texts=[f"Your guess, chosen on the grid above: {chosen} of {k} chosen."],
               widgets=[Widget("multiselect", "$$ID-1-why_guess_pick", "Patch numbers",
                               tuple(str(p) for p in range(n))),
                        Widget("button", f"$$ID-2-{keys.answer_send('why', 'guess')}", "Send",
                               disabled=True)], full=True)


def test_a_guess_is_k_patches_chosen_with_the_figures_multiselect_then_sent():
    assert patch_set(guess_page(), 2) == ("why_guess_pick", ["6", "7", "8"],
                                          keys.answer("why", "guess"))
    assert patch_set(guess_page(k=4, n=9), 2)[1] == ["8", "0", "1", "2"]  # row by row, wrapped
    assert patch_set(guess_page(), 2, done={keys.answer("why", "guess"): (True, None)}) is None
    no_send = guess_page()
    no_send.widgets.pop()  # sent already: the box shows the answer, no Send
    assert patch_set(no_send, 2) is None


def student(i: int, seen: dict, waited: dict, joined: float = 0.0) -> dict:
    return {"student": i, "me": f"s{i}", "replica": None, "joined": joined, "seen": seen,
            "waited": waited, "took": {w: 0.1 for w in seen}, "answers": {}, "sends": {},
            "problems": {k: [] for k in PROBLEMS}}


def test_a_step_computed_after_the_class_got_there_is_timed_apart_until_drawn():
    moves = [(10.0, WHERE[0]), (20.0, WHERE[1])]
    results = [
        student(0, {WHERE[0]: 10.5, WHERE[1]: 20.4}, {}),  # both drawn at once
        student(1, {WHERE[0]: 10.7, WHERE[1]: 50.0}, {WHERE[1]: 20.6}, joined=2.0),  # a bar
        student(2, {WHERE[0]: 10.6}, {WHERE[1]: 20.8}),  # a bar, never drawn
    ]
    s = summarize(moves, results, [], {})
    assert s["follow"]["n"] == 4 and s["follow"]["max_s"] == 0.7  # 0.5, 0.4, 0.7, 0.6
    assert [(w["student"], w["from_click_s"], w["from_join_s"]) for w in s["waiting"]] == [
        (1, 30.0, 48.0), (2, None, None)]
    assert s["until_drawn"]["n"] == 1 and s["never_drawn"] == 1
    assert s["per_student"][1]["drawn_from_join_s"] == {"Why this answer? · 1": 8.7,
                                                        "Why this answer? · 2": 48.0}
    assert [m["computing"] for m in s["moves_table"]] == [0, 2]
    assert s["moves_table"][1]["n"] == 1  # student 0's run only
    assert not any(s["problems"].values())  # waiting is no missed move
    results[2]["waited"] = {}  # never drawn, never computing: a missed move
    assert len(summarize(moves, results, [], {})["problems"]["missed moves"]) == 1


def test_the_teacher_holds_until_every_page_drew_the_step_and_no_send_is_in_progress():
    lesson = Lesson(following={3, 4})
    lesson.drawn[WHERE[0]] = {3, 4, 5}  # 5 has left the class
    lesson.drawn[WHERE[1]] = {3}  # 4's page still runs, or shows a progress bar
    assert not lesson.busy(WHERE[0]) and lesson.busy(WHERE[1])
    lesson.answering.add(3)
    assert lesson.busy(WHERE[0])


def test_a_hold_names_the_pages_it_waits_for_and_what_each_one_last_showed():
    lesson = Lesson(following={3, 4, 6})
    lesson.drawn[WHERE[1]] = {3}
    lesson.shows = {4: "(step 2), computing ('Computing the six maps: 40%')"}
    lesson.answering.add(3)
    said = lesson.awaited(WHERE[1])
    assert said.startswith("awaiting 2 page(s), 1 Send(s) in progress")
    assert "student 4: (step 2), computing ('Computing the six maps: 40%')" in said
    assert "student 6: no run yet" in said and "student 3: sending" in said
    assert "student 3: (" not in said  # drew it
