"""Live class load test: a teacher walks a lesson, N students follow it and answer every question.

    python tools/class_load.py [--students 30] [--model vit-b16] [--replicas 1] [--redis]
                               [--every 5] [--stages overview,attention,masks,logits]
                               [--moves N] [--within 30] [--threads N] [--hold S]
                               [--json out.json]

Every tab speaks Streamlit's protocol (tools/st_protocol.Tab), as tools/load_test.py does. The
teacher opens presenter mode and starts a class; the students arrive evenly within --within
seconds, each opening the join link on --model and uploading its own picture. The class's lesson
is --stages (the teacher picks them under "Today's stages" before starting it); the teacher
makes a move every --every seconds: Next, through each step of each of those stages. A student
learns of a move the way its browser does: the server reruns its page (ui/live/push.py) and
the tab reads the run (tools/st_protocol.Tab.wait). Every question a student
is shown, it answers (the first option, a number, a patch of the grid, a word, k patches chosen
on the step's own figure: the Why stage's guess) and sends.

Measured, per student and move: the teacher's click sent -> that student's full run showing
the new step finished (a move a student never showed is missed). A step whose numbers are still
being computed shows a progress bar first (the Why stage's maps and table on a big model): for
those, the time until the step is drawn, from the click and from the student's join, is
reported apart (tools/class_report.py); with --hold S the teacher stays on a step until every
student's page draws it and no Send is in progress, or S seconds after the click (a page that
shows an earlier step's question in its place has not shown the step; every 2 minutes of a
hold, stderr names the pages awaited and what each one's last run showed). Checked: every run of
every student shows its own picture's fingerprint; every answer sent is in the teacher's CSV
download once, as the page acknowledged it ("Your answer: … (sent)"; an answer sent as the
class moved on is not acknowledged on the page but must be in the CSV too): else it is lost; an
answer there twice or never sent is extra. With --redis a redis-server is started with
deploy/redis.conf in a temporary folder and every replica shares the class through it (without
it the class lives in one process's memory; replicas then refuse to start one). Prints a table;
exits non-zero on any problem.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import hashlib
import io
import json
import os
import platform
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from urllib.parse import parse_qs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.class_report import PROBLEMS, report, summarize  # noqa: E402
from tools.load_test import (  # noqa: E402
    _own_cpu_s,
    check,
    session_image,
    start_servers,
    teacher,
)
from tools.local_redis import redis_server  # noqa: E402
from tools.st_protocol import Run, Tab  # noqa: E402
from ui import keys  # noqa: E402
from ui.lesson.deck import HELD_HERE  # noqa: E402
from ui.stages import BY_SLUG as STAGES  # noqa: E402

LESSON = ["overview", "attention", "masks", "logits"]
REDIS_URL = "VIT_EXPLAINER_REDIS_URL"  # ui/live/store.ENV
CSV_BUTTON = "Download the answers (CSV)"
TELL_EVERY = 120.0  # seconds between two lines on stderr while the teacher holds on a step

# what the pages say (ui/presenter.header, ui/live/student.banner, ui/live/student.answer_box)
TEACHER_WHERE = re.compile(r"^\*\*.+ · step (\d+)/(\d+)\*\* · (.+): \*(.+)\*$")
STUDENT_WHERE = re.compile(r"\*\*Following class [A-Z0-9-]+\*\* · on your own image · "
                           r"(.+), step (\d+)/(\d+): \*(.+)\*$")
SENT = re.compile(r"^Your answer: \*\*(.+)\*\* \(sent\)$")
CHOSEN = re.compile(r"(\d+) of (\d+) chosen")  # a PatchSet's caption (ui/live/student._input)


# ---------------------------------------------------------------- reading the pages
def teacher_at(run: Run) -> tuple | None:
    """(stage, step k, of n, step title) from the teacher's header."""
    for t in run.texts:
        if m := TEACHER_WHERE.match(t):
            return m[3], int(m[1]), int(m[2]), m[4]
    return None


def student_at(run: Run) -> tuple | None:
    """(stage, step k, of n, step title) from a following student's banner."""
    for t in run.texts:
        if m := STUDENT_WHERE.search(t):
            return m[1].split(" · ", 1)[-1], int(m[2]), int(m[3]), m[4]
    return None


def sent(run: Run) -> str | None:
    """The answer the page says was sent, if it says so."""
    return next((m[1] for t in run.texts if (m := SENT.match(t))), None)


def held(run: Run) -> bool:
    """The page shows an earlier step's question in place of the class's step (ui/lesson/deck:
    what the class's step shows would give its answer away)."""
    return HELD_HERE in run.texts


def query(tab: Tab, name: str) -> str:
    return parse_qs(tab.query).get(name, [""])[0]


@dataclass
class Reply:
    """A student's answer to one step's question, as its pages showed it."""

    key: str  # keys.answer(stage, step)
    chosen: Run  # the run after choosing the value
    after: Run | None  # the run after Send (None: the page showed no Send any more: the class
    #                    moved on before it was clicked)

    @property
    def acknowledged(self) -> str | None:
        return None if self.after is None else sent(self.after)


def choice(run: Run, i: int, done=()) -> tuple[str, object, str] | None:
    """The question's input on the page (unless its answer key is in `done`) and what student
    `i` gives it: option i mod n, the number i mod 5 + 1, patch i mod 4 or a word. (the input's
    key, the value, the answer's key), or None when the page asks nothing."""
    inputs = [w for w in run.widgets if (w.key or "").startswith(keys.ANSWER_PREFIX)
              and not w.key.endswith("_send")]
    if not inputs:
        return patch_set(run, i, done)
    if inputs[0].key.removesuffix("_grid") in done:
        return None
    w = inputs[0]
    value = {"radio": lambda: w.options[i % len(w.options)], "number_input": lambda: i % 5 + 1,
             "plotly_chart": lambda: [i % 4], "text_input": lambda: f"word{i}"}[w.kind]()
    return w.key, value, w.key.removesuffix("_grid")


def patch_set(run: Run, i: int, done=()) -> tuple[str, list[str], str] | None:
    """A question answered on the step's own figure (ui/lesson/replies.PatchSet: the Why stage's
    guess): a Send with no input of its own, the k patches chosen with the figure's multiselect
    of patch numbers (a keyboard's way; a click on the grid toggles one). Student `i` chooses
    the k patches from i * k on, row by row."""
    send = next((w.key for w in run.widgets if w.kind == "button" and (w.key or "").startswith(
        keys.ANSWER_PREFIX) and w.key.endswith("_send")), None)
    pick = next((w for w in run.widgets if w.kind == "multiselect" and w.options
                 and all(o.isdigit() for o in w.options)), None)
    k = next((int(m[2]) for t in run.texts if (m := CHOSEN.search(t))), None)
    if send is None or pick is None or k is None or send.removesuffix("_send") in done:
        return None
    n = len(pick.options)
    return pick.key, [pick.options[(i * k + j) % n] for j in range(k)], send.removesuffix("_send")


async def answer(tab: Tab, run: Run, i: int, done=()) -> Reply | None:
    """Answer the question on the page (see `choice`) and click Send, unless the class moved
    on meanwhile."""
    chose = choice(run, i, done)
    if chose is None:
        return None
    name, value, key = chose
    chosen = await tab.set(name, value)  # a run of the answer box alone (a fragment) ...
    send = f"{key}_send"  # ... or of the page, if the class moved meanwhile
    moved = chosen.full and student_at(chosen) != student_at(run)
    if moved or send not in {w.key for w in chosen.widgets}:
        return Reply(key, chosen, None)  # the page changed meanwhile
    return Reply(key, chosen, await tab.click(send))


# ---------------------------------------------------------------- the lesson
@dataclass
class Lesson:
    code: str = ""
    moves: list[tuple[float, tuple]] = field(default_factory=list)  # (click sent, where)
    over: asyncio.Event = field(default_factory=asyncio.Event)
    following: set[int] = field(default_factory=set)  # students in the class now
    drawn: dict[tuple, set[int]] = field(default_factory=dict)  # step -> students that drew it
    answering: set[int] = field(default_factory=set)  # students whose Send is in progress
    shows: dict[int, str] = field(default_factory=dict)  # student -> what its last run showed

    def busy(self, at: tuple) -> bool:
        """A student's page has not drawn step `at` yet (its run or the numbers it shows are
        still being computed), or a student is sending an answer."""
        return bool(self.answering or self.following - self.drawn.get(at, set()))

    def awaited(self, at: tuple) -> str:
        """Who step `at` waits for, and what each one's last full run showed."""
        late = sorted(self.following - self.drawn.get(at, set()))
        return (f"awaiting {len(late)} page(s), {len(self.answering)} Send(s) in progress"
                + "".join(f"\n  student {i}: {self.shows.get(i, 'no run yet')}" for i in late)
                + "".join(f"\n  student {i}: sending" for i in sorted(self.answering)))


async def student(url: str, i: int, start_at: float, lesson: Lesson, model: str,
                  timeout: float) -> dict:
    """Join, upload its own picture, follow and answer until the lesson is over."""
    from tools.balancer import COOKIE

    await asyncio.sleep(start_at)
    raw = session_image(i)
    fid = hashlib.sha256(raw).hexdigest()[:8]
    tab, joined = Tab(url, timeout=timeout), time.perf_counter()
    problems: dict[str, list[str]] = {k: [] for k in PROBLEMS}
    seen: dict[tuple, float] = {}  # where -> end of the first full run that showed it drawn
    waited: dict[tuple, float] = {}  # where -> end of the first full run that showed it computing
    took: dict[tuple, float] = {}  # where -> that run's own seconds (request -> its end)
    answers: dict[str, tuple[bool, str | None]] = {}  # answer key -> (Send clicked, the
    #                                                   answer the page acknowledged)
    sends: dict[str, float] = {}  # answer key -> Send's run (the click to its end), seconds

    last: list[Run] = []  # the last full run read

    def note(run: Run, where: str) -> bool:
        last[:] = [run]
        check(run, i, where, fid, problems)
        at = student_at(run)
        lesson.shows[i] = (f"{at}, " + ("held" if held(run) else f"computing "
                           f"({run.progress[-1]!r})" if run.progress else "drawn")
                           + f", {time.perf_counter() - joined:.0f} s after joining")
        if at is None:
            problems["failed sessions"].append(f"student {i}, {where}: no class banner")
            return False
        if held(run):  # the class's step is not shown (missed, unless a later run shows it)
            return True
        if run.progress:  # shown computing: drawn later
            waited.setdefault(at, run.ended)
            return True
        lesson.drawn.setdefault(at, set()).add(i)
        if at not in seen:
            seen[at], took[at] = run.ended, run.seconds
        return True

    async def look(run: Run, where: str) -> None:
        """A full run: where it is, and the question it asks, answered (and where that led)."""
        while note(run, where):
            lesson.answering.add(i)
            try:
                reply = await answer(tab, run, i, done=answers)
            finally:
                lesson.answering.discard(i)
            if reply is None:
                return
            answers[reply.key] = (reply.after is not None, reply.acknowledged)
            if reply.after is not None:
                sends[reply.key] = reply.after.seconds
            run = reply.after or reply.chosen
            if not run.full:  # the box alone ran: the page still shows this step
                check(run, i, where, None, problems)
                return

    try:
        run = await tab.open(f"{keys.LIVE_JOIN}={lesson.code}&{keys.MODEL}={model}")
        check(run, i, "open", None, problems)
        run = await tab.upload(run.uploaders[0], f"student-{i}.png", raw, "image/png")
        lesson.following.add(i)
        await look(run, "first view")
        while not lesson.over.is_set():
            for run in await tab.wait(0.25):
                await look(run, f"move {len(lesson.moves)}")
    except Exception as e:  # a timeout or a refused request fails this student, not the run
        shown = "" if not last else f"; its last full run showed {student_at(last[0])}, " + (
            f"computing ({last[0].progress[-1]!r})" if last[0].progress else "drawn")
        problems["failed sessions"].append(f"student {i}: {type(e).__name__}: {e}{shown}"[:600])
    finally:
        lesson.following.discard(i)
        lesson.answering.discard(i)
        with contextlib.suppress(Exception):
            await tab.close()
    return {"student": i, "me": query(tab, keys.LIVE_ME), "replica": tab.cookies.get(COOKIE),
            "joined": joined, "seen": seen, "waited": waited, "took": took, "answers": answers,
            "sends": sends, "problems": problems}


async def teach(url: str, lesson: Lesson, stages: list[str], every: float, moves: int,
                model: str, arrive: float, timeout: float, hold: float = 0.0) -> list[dict]:
    """Start the class, wait for the students (`arrive` s), make the moves (each `every` s
    after the last, or later until every student's page has drawn the step and no Send is in
    progress, up to `hold` s after the click); the CSV's rows."""
    tab = Tab(url, timeout=timeout)
    run = await tab.open(f"{keys.PRESENTER}=1&page={stages[0]}&{keys.MODEL}={model}")
    if not any(w.key == keys.LIVE_START for w in run.widgets):
        raise RuntimeError("no 'Start a class' button: " + " ".join(run.under("Class"))[:300])
    await tab.set(keys.LIVE_LESSON, [STAGES[s].nav_title for s in stages])
    await tab.click(keys.LIVE_START)
    lesson.code = query(tab, keys.LIVE_CODE)
    await tab.wait(arrive)
    at, stages_left = teacher_at(run), len(stages) - 1
    for _ in range(moves):
        if at[1] == at[2] and not stages_left:
            break
        stages_left -= at[1] == at[2]
        t0 = time.perf_counter()
        run = await tab.click(keys.PRESENTER_NEXT)  # the next step, or the lesson's next stage
        at = teacher_at(run)
        if at is None:
            raise RuntimeError(f"the teacher's page has no header: {run.errors or run.texts[:3]}")
        lesson.moves.append((t0, at))
        await tab.wait(every - (time.perf_counter() - t0))
        told = time.perf_counter()
        while lesson.busy(at) and time.perf_counter() - t0 < hold:
            await tab.wait(0.5)
            if time.perf_counter() - told > TELL_EVERY:  # a long hold says what it waits for
                told = time.perf_counter()
                print(f"{time.strftime('%H:%M:%S')} holding on {at}, {told - t0:.0f} s after "
                      f"the click: {lesson.awaited(at)}", file=sys.stderr, flush=True)
    await tab.wait(every)  # the last answers
    lesson.over.set()
    run = await tab.rerun()
    text = (await tab.http("GET", run.downloads[CSV_BUTTON])).decode()
    await tab.close()
    return list(csv.DictReader(io.StringIO(text)))


async def lesson_run(url: str, students: int, within: float, stages: list[str], every: float,
                     moves: int, model: str, timeout: float,
                     hold: float = 0.0) -> tuple[Lesson, list, list]:
    lesson = Lesson()
    teacher_task = asyncio.create_task(teach(url, lesson, stages, every, moves, model,
                                             within + every, timeout, hold))
    while not lesson.code:
        if teacher_task.done():
            teacher_task.result()  # raises why the class did not start
        await asyncio.sleep(0.1)
    results = await asyncio.gather(*(student(url, i, within * i / students, lesson, model,
                                             timeout) for i in range(students)))
    return lesson, results, await teacher_task


def class_run(students: int = 5, model: str = "vit-b16", replicas: int = 1,
              redis: bool = False, every: float = 5.0, stages: list[str] = LESSON,
              moves: int = 1000, within: float | None = None, threads: int | None = None,
              cache_mb: float | None = None, timeout: float = 120.0, hold: float = 0.0) -> dict:
    """Start Redis (if asked), the server or `replicas` behind HAProxy, run the lesson."""
    within = students if within is None else within
    env = {"OMP_NUM_THREADS": str(threads)} if threads else {}
    if cache_mb is not None:
        env["VIT_EXPLAINER_CACHE_MB"] = str(cache_mb)
    with contextlib.ExitStack() as stack:
        if redis:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            env[REDIS_URL] = stack.enter_context(redis_server(folder))
        else:
            env[REDIS_URL] = ""
        url, servers = start_servers(stack, replicas, env)
        asyncio.run(teacher([s.url for s in servers], model, timeout))  # the model loaded
        load_before = os.getloadavg()[0]
        cpu0, client0, t0 = [s.cpu_s() for s in servers], _own_cpu_s(), time.time()
        lesson, results, rows = asyncio.run(lesson_run(url, students, within, stages, every,
                                                       moves, model, timeout, hold))
        wall = time.time() - t0
        cpu = sum(s.cpu_s() - c for s, c in zip(servers, cpu0, strict=True))
        peak = [round(s.peak_rss_mb()) for s in servers]
        client = _own_cpu_s() - client0
        load_after = os.getloadavg()[0]
    return summarize(lesson.moves, results, rows, {
        "date": str(date.today()), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "students": students, "model": model, "replicas": replicas,
        "store": "Redis" if redis else "memory", "every_s": every, "hold_s": hold,
        "within_s": within,
        "torch_threads": threads or "default", "wall_s": round(wall, 1),
        "server_cpu_s": round(cpu, 1), "server_cpu_share": round(cpu / (wall * os.cpu_count()), 2),
        "server_peak_rss_mb": peak, "client_cpu_s": round(client, 1),
        "load_average_before_after": [round(load_before, 1), round(load_after, 1)]})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--model", default="vit-b16", help="every student's model")
    ap.add_argument("--replicas", type=int, default=1, help="app processes behind HAProxy")
    ap.add_argument("--redis", action="store_true", help="classes in a Redis started here")
    ap.add_argument("--every", type=float, default=5.0, help="seconds between the moves")
    ap.add_argument("--stages", default=",".join(LESSON), help="the lesson's stages, in order")
    ap.add_argument("--moves", type=int, default=1000, help="stop after this many moves")
    ap.add_argument("--hold", type=float, default=0.0, help="the teacher stays on a step until "
                    "every student's page has drawn it and no Send is in progress, up to this "
                    "many seconds after the click (0: moves every --every s regardless)")
    ap.add_argument("--within", type=float, help="students arrive within (default 1 s each)")
    ap.add_argument("--threads", type=int, help="OMP_NUM_THREADS for each app process")
    ap.add_argument("--cache-mb", type=float, help="the cache budget of each app process")
    ap.add_argument("--timeout", type=float, default=120.0, help="the longest any wait may take")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)
    summary = class_run(args.students, args.model, args.replicas, args.redis, args.every,
                        args.stages.split(","), args.moves, args.within, args.threads,
                        args.cache_mb, args.timeout, args.hold)
    print(report(summary))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2, default=str))
    return 1 if any(summary["problems"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
