"""A live class in the app (AppTest sessions in one process, sharing its in-memory store): a
teacher in presenter mode starts a class; students open its link on their own images and follow
the teacher's stage, step and controls; they answer; the teacher sees the tally, reveals and
downloads; what a student sends without the teacher's secret changes nothing.

What a page shows is read from the page (its banner, its step, its fingerprint) and compared
with what the test sent or computes itself (the sha256 of each student's own image)."""

from __future__ import annotations

import csv
import hashlib
import io
import re

import pytest

from tests.support import open_app
from ui import keys
from ui.live import classes, session
from ui.selection import inputs
from ui.serving import state
from ui.stages import BY_SLUG as STAGES

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def start_class(page: str = "overview", **params):
    teacher = open_app(page, params={"presenter": "1", **params})
    teacher.button(key=keys.LIVE_START).click().run()
    assert not teacher.exception, [e.value for e in teacher.exception]
    code = teacher.session_state[keys.LIVE_CODE]
    assert teacher.query_params[keys.LIVE_CODE] == [code] or \
        teacher.query_params[keys.LIVE_CODE] == code
    return teacher, code


def join(code: str, seed: int | None = None, page: str = "overview", model: str | None = None):
    params = {keys.LIVE_JOIN: code}
    if seed is not None:
        params[keys.SAMPLE] = str(seed)
    if model is not None:
        params[keys.MODEL] = model
    at = open_app(page, params=params)
    assert at.session_state[keys.LIVE_JOIN] == code, "the student did not join"
    return at


def banner(at) -> str:
    found = [m.value for m in at.markdown if "class " in m.value and (
        "Following" in m.value or "Exploring" in m.value)]
    assert found, "no class banner on the page"
    return found[0]


def fingerprint(at) -> str:
    text = next(c.value for c in at.sidebar.caption if c.value.startswith("fingerprint "))
    return text.split()[1]


def own_fingerprint(seed: int) -> str:
    return hashlib.sha256(inputs.sample_bytes(seed)).hexdigest()[:8]


def settle(code: str) -> None:
    """Wait until this process's Watcher has heard of the class's last change (the store
    delivers its messages on a thread, as Redis does; a browser's next tick, a second later,
    would see it)."""
    import time

    end = time.monotonic() + 60  # a busy machine's message thread may run late
    while time.monotonic() < end:
        now = classes.get(session.store(), code)
        seen = session.watcher().latest(code)
        if (now is None and seen is None) or (now and seen and now.version == seen.version):
            return
        time.sleep(0.01)
    raise AssertionError("the Watcher never heard of the change")


def planned(monkeypatch) -> list:
    """Switch the read-ahead on and catch what it queues instead of running it: a list of
    (interest, items), one per plan."""
    from ui.serving import readahead

    queued = []

    class Queue:
        def add(self, interest, items):
            queued.append((interest, items))

    monkeypatch.setenv(readahead.ENV, "1")
    monkeypatch.setattr(readahead, "shared", Queue)
    return queued


def where(at) -> tuple[str, int]:
    return at.session_state[keys.PRESENTER_AT], at.session_state[keys.PRESENTER_STEP]


def step_line(at) -> str:
    """The teacher's header: "**Stage i/n · step k/m** · …" -> "step k/m"."""
    text = next(m.value for m in at.markdown if re.search(r"step \d+/\d+\*\*", m.value))
    return re.search(r"step \d+/\d+", text).group(0)


def test_students_follow_the_teacher_on_their_own_images():
    teacher, code = start_class("overview")
    seeds = inputs.sample_seeds()[1:3]
    students = [join(code, s) for s in seeds]
    for _ in range(4):  # the overview's last steps, then the next stage's first
        teacher.button(key=keys.PRESENTER_NEXT).click().run()
        settle(code)
    assert not teacher.exception
    at_stage, at_step = where(teacher)
    assert (at_stage, at_step) == ("input-patches", 0) or at_stage != "overview"
    for student, seed in zip(students, seeds, strict=True):
        student.run()
        assert not student.exception, [e.value for e in student.exception]
        assert where(student) == (at_stage, at_step)
        assert f"step {at_step + 1}/" in banner(student)
        assert fingerprint(student) == own_fingerprint(seed)  # their image, not the teacher's
    assert fingerprint(students[0]) != fingerprint(students[1])


def test_the_teachers_layer_applies_unless_the_student_chose_their_own():
    teacher, code = start_class("attention")
    a, b = join(code), join(code)
    b.session_state[keys.LAYER] = 0  # b moves the layer slider
    b.run()
    teacher.session_state[keys.LAYER] = 1
    teacher.run()
    settle(code)
    a.run()
    b.run()
    assert a.session_state[keys.LAYER] == 1
    assert b.session_state[keys.LAYER] == 0  # b's own choice stays


def top_line(name: str, seed: int) -> str:
    """The fingerprint's "top: ball 91%", computed here from the named model (its training step
    and input size in the name) on the sample scene `seed`."""
    from ui.drawing import numbers

    inp = inputs.make_input("a sample", inputs.sample_bytes(seed))
    tr = state.trace(inp, name)
    k = int(tr.logits.argmax())
    return f"top: {tr.config.class_names[k]} {numbers.percent(float(tr.logits.softmax(-1)[k]))}"


def shown_top(at) -> str:
    text = next(c.value for c in at.sidebar.caption if c.value.startswith("fingerprint "))
    return text.split(" · ", 1)[1]


def move(teacher, code: str, widget) -> None:
    """The teacher changes a widget (on the slide or in the presenter's popover); the class
    moves."""
    widget.run()
    assert not teacher.exception, [e.value for e in teacher.exception]
    assert teacher.session_state[keys.PRESENTER], "the teacher left presenter mode"
    assert teacher.session_state[keys.LIVE_CODE] == code, "the teacher left the class"
    settle(code)


def test_students_follow_the_experiment_the_training_step_and_the_input_size():
    """Two students on the teacher's model take each of the teacher's choices; a student on
    ViT-Ti/16 (3 heads, no training snapshots) gets them fitted to its model; a student who
    chose their own experiment keeps it until Follow again."""
    teacher, code = start_class("experiments")
    seeds = inputs.sample_seeds()[1:3]
    a, b = (join(code, s) for s in seeds)
    tiny = join(code, seeds[0], model="vit-ti16")
    assert where(a)[0] == "experiments" and a.radio(key=keys.EXP_KIND).value == \
        "Switch off attention heads"
    move(teacher, code, teacher.multiselect(key=keys.EXP_HEADS).set_value([1, 3]))
    b.radio(key=keys.EXP_KIND).set_value("Shuffle the patches").run()  # b's own choice
    for s in (a, b, tiny):
        s.run()
        assert not s.exception, [e.value for e in s.exception]
    assert a.multiselect(key=keys.EXP_HEADS).value == [1, 3]
    assert tiny.multiselect(key=keys.EXP_HEADS).value == [1]  # it has heads 0-2
    move(teacher, code, teacher.multiselect(key=keys.EXP_HEADS).set_value([2]))
    for s in (a, tiny):
        s.run()
    assert a.multiselect(key=keys.EXP_HEADS).value == tiny.multiselect(
        key=keys.EXP_HEADS).value == [2]  # a value fitted to it was no choice of its own

    move(teacher, code, teacher.radio(key=keys.EXP_KIND).set_value("Grey out patches"))
    greyed = teacher.session_state[keys.EXP_OCCLUDED]
    for s in (a, b, tiny):
        s.run()
    assert a.radio(key=keys.EXP_KIND).value == "Grey out patches"
    assert tiny.radio(key=keys.EXP_KIND).value == "Grey out patches"
    assert a.session_state[keys.EXP_OCCLUDED] == greyed
    assert b.radio(key=keys.EXP_KIND).value == "Shuffle the patches"  # theirs stays

    base = "shapes-classifier"
    move(teacher, code, teacher.select_slider(key=keys.TRAIN_STEP).set_value(3300))
    for s in (a, b, tiny):
        s.run()
    for s, seed in ((a, seeds[0]), (b, seeds[1])):
        assert s.select_slider(key=keys.TRAIN_STEP).value == 3300
        assert shown_top(s) == top_line(state.stepped(base, 3300), seed)
    assert keys.TRAIN_STEP not in tiny.session_state  # kept at no earlier step: skipped
    assert not [w for w in tiny.select_slider if w.key == keys.TRAIN_STEP]

    move(teacher, code, teacher.selectbox(key=keys.SIZE).set_value(288))
    for s in (a, b, tiny):
        s.run()
    for s, seed in ((a, seeds[0]), (b, seeds[1])):
        assert s.selectbox(key=keys.SIZE).value == 288
        assert s.select_slider(key=keys.TRAIN_STEP).value == 3300
        assert shown_top(s) == top_line(state.sized(state.stepped(base, 3300), 288), seed)
    assert tiny.selectbox(key=keys.SIZE).value == 288  # ViT-Ti/16 reads 288 px too
    assert tiny.session_state[keys.PATCH] < 18 * 18

    next(w for w in b.button if w.label == "Explore on my own").click().run()
    next(w for w in b.button if w.label == "Follow again").click().run()
    b.run()
    assert b.radio(key=keys.EXP_KIND).value == "Grey out patches"  # the teacher's again


def test_exploring_stays_put_then_follow_again_catches_up():
    teacher, code = start_class("overview")
    student = join(code)
    next(b for b in student.button if b.label == "Explore on my own").click().run()
    assert not student.session_state[keys.LIVE_FOLLOW]
    assert "Exploring on your own" in banner(student)
    before = where(student)
    teacher.button(key=keys.PRESENTER_NEXT).click().run()
    settle(code)
    teacher.button(key=keys.PRESENTER_NEXT).click().run()
    settle(code)
    student.run()
    assert where(student) == before  # stays put
    next(b for b in student.button if b.label == "Follow again").click().run()
    student.run()
    assert where(student) == where(teacher)
    assert "Following class" in banner(student)


def send(at, stage: str, step: str, text: str, number: float) -> str:
    """Answer the step's question with whatever input it has; returns what was sent, as text."""
    box = keys.answer(stage, step)
    radios = [w for w in at.radio if w.key == box]
    numbers = [w for w in at.number_input if w.key == box]
    texts = [w for w in at.text_input if w.key == box]
    assert radios or numbers or texts, f"no answer input for {stage}/{step}"
    if radios:
        value = radios[0].options[int(number) % len(radios[0].options)]
        radios[0].set_value(value)
    elif numbers:
        numbers[0].set_value(number)
        value = f"{number:g}"
    else:
        texts[0].set_value(text)
        value = text
    at.run()
    at.button(key=keys.answer_send(stage, step)).click().run()
    assert not at.exception, [e.value for e in at.exception]
    return value


def test_answers_are_counted_once_revealed_to_all_and_downloaded(capfd):
    teacher, code = start_class("mlp")
    stage = teacher.session_state[keys.PRESENTER_AT]
    step = classes.get(session.store(), code).position.step
    students = [join(code) for _ in range(3)]
    sent = []
    for i, s in enumerate(students):
        s.run()
        assert any("Question for the class" in m.value for m in s.markdown)
        value = send(s, stage, step, f"answer {i}", number=i + 1)
        sent.append((s.session_state[keys.LIVE_ME], value))
        assert any(m.value.startswith(f"Your answer: **{value}") for m in s.markdown)
        asked = next(m.value for m in s.markdown if "Question for the class" in m.value)
        assert [t.value for t in s.toast] == [
            f"Your answer to “{asked.split(':** ', 1)[1]}” was saved."]
        assert not any(b.key == keys.answer_send(stage, step) for b in s.button)  # once
    # Send's toast is drawn by the box's run, not inside its callback (Streamlit warned of an
    # element drawn in a fragment's callback at every Send: the class run's server logs)
    assert "A fragment rerun was triggered with a callback" not in "".join(capfd.readouterr())
    assert not classes.answer(session.store(), classes.get(session.store(), code),
                              sent[0][0], "", stage, step, "?", "words", "again", None)
    teacher.run()
    settle(code)
    assert "3 answered" in " ".join(c.value for c in teacher.caption)
    secret = teacher.session_state[keys.LIVE_SECRET]
    rows = list(csv.DictReader(io.StringIO(classes.csv_text(session.store(), code, secret))))
    assert len(rows) == 3
    assert sorted((r["student"], r["answer"].split(" ")[0]) for r in rows) == \
        sorted((who, value.split(" ")[0]) for who, value in sent)
    # the teacher reveals: every student sees the answer computed for their own image
    teacher.button(key=keys.reveal_class(stage, step)).click().run()
    settle(code)
    for s in students:
        s.run()
        assert any(i.icon == ":material/lightbulb:" for i in s.info), "no answer on Reveal"


def test_a_student_without_the_secret_moves_nothing():
    teacher, code = start_class("overview")
    before = classes.get(session.store(), code)
    intruder = open_app("attention", params={"presenter": "1", keys.LIVE_CODE: code,
                                             keys.LIVE_SECRET: "not-the-secret"})
    intruder.button(key=keys.PRESENTER_NEXT).click().run()
    after = classes.get(session.store(), code)
    assert after is not None and after.position == before.position
    assert after.version == before.version
    assert intruder.session_state.get(keys.LIVE_CODE) is None  # left: refused in one sentence


def test_a_wrong_code_says_so_and_many_are_slowed_down(monkeypatch):
    monkeypatch.setattr(session, "address", lambda: "10.9.9.9")  # its own count of tries
    at = open_app("overview", params={keys.LIVE_JOIN: "ZZZ-ZZZ"})
    text = " ".join(i.value for i in at.info)
    assert "No class has the code 'ZZZ-ZZZ'" in text
    for _ in range(classes.WRONG_CODES + 1):
        at.sidebar.text_input(key=keys.LIVE_CODE_INPUT).set_value("QQQ-QQQ")
        next(b for b in at.sidebar.button if b.label == "Join").click().run()
    assert "Too many wrong codes" in " ".join(i.value for i in at.info)
    assert not at.exception


def test_ending_the_class_sends_everyone_back_to_exploring():
    teacher, code = start_class("overview")
    student = join(code)
    teacher.button(key=keys.LIVE_END).click().run()
    settle(code)
    assert classes.get(session.store(), code) is None
    student.run()
    assert not student.exception
    assert student.session_state.get(keys.LIVE_JOIN) is None
    assert "The class has ended" in " ".join(i.value for i in student.info)


def test_behind_a_balancer_without_a_shared_store_a_class_is_refused(monkeypatch):
    from ui.selection import models

    monkeypatch.setattr(models, "through_proxy", lambda: True)
    at = open_app("overview", params={"presenter": "1"})
    assert not [b for b in at.button if b.key == keys.LIVE_START]
    assert any(w.value.startswith("Classes need the shared store") for w in at.warning)


def test_a_class_that_expired_tells_the_teacher_in_one_sentence():
    teacher, code = start_class("overview")
    session.store().delete(f"vitx:class:{code}")  # what its lifetime does after 4 quiet hours
    session.store().publish(classes.CHANNEL, code)
    settle(code)
    teacher.run()
    assert not teacher.exception
    assert teacher.session_state.get(keys.LIVE_CODE) is None
    said = [t.value for t in teacher.toast]
    assert len(said) == 1 and said[0].startswith(f"Class {classes.pretty(code)} has ended")
    assert teacher.button(key=keys.LIVE_START)  # and a new class can be started


def test_a_followers_read_ahead_starts_at_the_class_stage_and_again_when_it_moves(monkeypatch):
    """A following student's read-ahead is planned from the stage the class is on (the stages
    behind the class are computed for nobody), and planned again when the class moves on."""
    from ui.serving import ahead

    queued = planned(monkeypatch)
    teacher, code = start_class("attention", step="6")  # the stage's last step
    student = join(code, inputs.sample_seeds()[1])
    assert where(student)[0] == "attention"
    first, items = queued[-1]
    n_first = len(items)
    assert first.what[-1] == "attention"
    inp = inputs.make_input("a sample", inputs.sample_bytes(inputs.sample_seeds()[1]))
    name, mask = student.session_state[keys.MODEL], first.what[2]
    assert n_first == len(ahead.plan(inp, name, mask, 0, start="attention"))
    assert n_first < len(ahead.plan(inp, name, mask, 0))  # the first four stages are left out
    teacher.button(key=keys.PRESENTER_NEXT).click().run()  # on to the Masks stage
    settle(code)
    student.run()
    assert where(student)[0] == "masks"
    assert queued[-1][0].what[-1] == "masks" and first.cancelled


def test_a_lesson_of_chosen_stages_is_what_next_walks_and_what_followers_prepare(monkeypatch):
    """The teacher picks today's stages before starting: Next goes from the overview's last
    step to the lesson's next stage (Attention, not Patches), the class holds the lesson, and a
    follower's read-ahead is planned over the lesson's stages only."""
    from ui.serving import ahead

    queued = planned(monkeypatch)
    teacher = open_app("overview", params={"presenter": "1", "step": "6"})  # its last step
    picker = teacher.multiselect(key=keys.LIVE_LESSON)
    assert picker.value == list(STAGES)  # the whole tour unless the teacher picks
    picker.set_value(["logits", "overview", "attention"]).run()  # in any order: the tour's
    teacher.button(key=keys.LIVE_START).click().run()
    code = teacher.session_state[keys.LIVE_CODE]
    assert classes.get(session.store(), code).lesson == ("overview", "attention", "logits")
    assert any("Today's stages: The whole pass → 4 · Attention heads → 7 · Logits" in c.value
               for c in teacher.caption)
    student = join(code, inputs.sample_seeds()[1])
    before = len(queued)
    teacher.button(key=keys.PRESENTER_NEXT).click().run()
    assert where(teacher) == ("attention", 0) and step_line(teacher) == "step 1/6"
    mine, items = queued[-1]  # the teacher's own read-ahead walks the lesson too: its later
    assert len(queued) == before + 1 and mine.what[-1] == "attention"  # stages would load
    assert len(items) == 2  # models nobody is shown (the layer's internals, the summary)
    settle(code)
    student.run()
    assert where(student)[0] == "attention"
    interest, items = queued[-1]
    assert interest.what[-1] == "attention"
    inp = inputs.make_input("a sample", inputs.sample_bytes(inputs.sample_seeds()[1]))
    name, mask = student.session_state[keys.MODEL], interest.what[2]
    assert name == "shapes-classifier"
    # on a classifier, what Attention and Logits read beyond the trace: the internals of the
    # student's layer (its first steps) and the attention summary (the Logits stage's own
    # reads are a captioner's and a typed caption's)
    from vit_core import trace as traces

    recomputed = []
    block = traces._Rerun.block
    monkeypatch.setattr(traces._Rerun, "block",
                        lambda self, layer, *a, **k: recomputed.append(layer) or block(
                            self, layer, *a, **k))
    layer = student.session_state[keys.LAYER]
    tr = state.trace(inp, name, mask=mask)  # the student's: its page read the layer already;
    tr[f"blocks.{(layer + 1) % tr.config.depth}.attn.scores"]  # another block read replaces it
    recomputed.clear()
    assert len(items) == 2 and items[0]() is None and recomputed == [layer]
    assert tr[f"blocks.{layer}.attn.scores"].shape[0] == tr.config.num_heads
    assert recomputed == [layer]  # the page's read found it done
    assert "rollout" in items[1]()
    assert len(items) < len(ahead.plan(inp, name, mask, 0, start="attention"))  # Masks, MLP, …
    teacher.button(key=keys.PRESENTER_PREV).click().run()  # Previous walks the lesson too
    assert where(teacher)[0] == "overview"
