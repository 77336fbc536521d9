"""The live class, joined into the deck (ui/deck.Lesson: app.py calls deck.join(LESSON)).

The deck asks the lesson at the points it names; each answer here is the class's: a following
student's page shows the class's one step; a question's box is the teacher's Reveal-to-everyone
(in presenter mode) or the student's answer box; the header has the teacher's Class popover;
Next and Previous walk the class's lesson; the session's address holds its place in the class.
What the class does around the page (following the teacher's position, publishing it, the
banner) app.py calls itself, in its run's order.
"""

from __future__ import annotations

from ui.lesson import deck
from ui.live import session, student, teacher


class LiveClass(deck.Lesson):
    def follows(self) -> bool:
        return session.following()

    def question(self, stage: str, step: str, q: deck.Question, view: deck.View) -> bool:
        role = session.role()
        if role == "teacher" and view.presenting:
            teacher.question_box(stage, step, q)
            return True
        return role == "student" and student.answer_box(stage, step, q, view)

    def header(self, bar, stage: str, config) -> None:
        teacher.header(bar, stage, config)

    def walk(self, stage: str, tour: list[str]) -> list[str]:
        return teacher.stages_walked(stage)

    def address(self) -> dict[str, str]:
        return session.params()

    def asked(self, stage: str, step: str) -> deck.Asked | None:
        return student.asked(stage, step) if session.role() == "student" else None


LESSON = LiveClass()
