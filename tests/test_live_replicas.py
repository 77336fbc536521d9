"""A live class over Streamlit's real protocol (tools/st_protocol.Tab: no browser), on two
replicas behind HAProxy (deploy/haproxy.cfg) that share the class through a Redis this test
starts with deploy/redis.conf, as the classroom recipe does (docs/deployment.md).

The teacher and four students are tabs pinned to a replica by HAProxy's cookie, two students on
each, each student on its own sample scene. A student learns of a move as its browser would: the
server reruns its page (ui/live/push.py). Nothing on the page polls, and the replicas run with
the keeper's rechecks switched off (push.RECHECK_ENV), so only the push can bring a student to
the new step: the test waits up to FOLLOW_WAIT for that (generous, for a busy machine) and a
student who never gets there fails it, however fast the machine.
What each page shows is read from its own text (the teacher's header, a student's banner, its
fingerprint, "Your answer: … (sent)"); the answers are read back from Redis.
Then a replica is killed (SIGKILL) and started again on its port: its tabs reopen their own
address and land in the same class, at its step, with their answers.

Without Redis, two replicas refuse to start a class in one sentence. CI installs haproxy and
redis-server (.ci/run); elsewhere the tests are skipped when one is missing.
"""

import asyncio
import contextlib
import hashlib
import io
import os
import re
import shutil
import signal
import time

import pytest

from tools.balancer import COOKIE, balanced
from tools.browser import serve
from tools.class_load import answer, choice, query, redis_server, sent, student_at, teacher_at
from tools.st_protocol import Tab
from ui import keys
from ui.live.push import RECHECK_ENV

pytestmark = pytest.mark.load

REDIS_URL = "VIT_EXPLAINER_REDIS_URL"
FOLLOW_WAIT = 120  # s the test waits for every student's run on the new step (not a speed)
SHARED_STORE = "Classes need the shared store"


def needs(*programs: str) -> None:
    for name in programs:
        if not (shutil.which(name) or os.path.exists(f"/usr/sbin/{name}")
                or os.path.exists(f"/usr/bin/{name}")):
            if os.environ.get("CI"):
                pytest.fail(f"CI must install {name} (.ci/run)")
            pytest.skip(f"{name} is not installed")


def fingerprint_of(seed: int) -> str:
    """The sidebar's fingerprint of a sample scene: the first 8 hex of its PNG's sha256."""
    from vit_core.scenes import world

    buf = io.BytesIO()
    world.make_scene(seed).image.save(buf, format="PNG")
    return hashlib.sha256(buf.getvalue()).hexdigest()[:8]


def fingerprints(run) -> list[str]:
    return [t.split()[1] for t in run.texts if t.startswith("fingerprint ")]


def pinned(url: str, replica: str) -> Tab:
    """A tab whose requests HAProxy sends to `replica` (its cookie, as after a first visit)."""
    tab = Tab(url, timeout=120)
    tab.cookies[COOKIE] = replica
    return tab


async def follow(tabs: list[Tab], where: tuple, clicked: float) -> list:
    """Each tab's first full run that shows the class at `where`, waiting as its browser does
    (runs the server starts) until FOLLOW_WAIT after the teacher's click; None for a tab that
    did not get there."""
    async def one(tab):
        while time.perf_counter() - clicked < FOLLOW_WAIT:
            for run in await tab.wait(0.1):
                if student_at(run) == where:
                    return run
        return None

    return await asyncio.gather(*(one(t) for t in tabs))


def assert_followed(runs: list, where: tuple, seeds: list[int]) -> None:
    late = [i for i, r in enumerate(runs) if r is None]
    assert not late, f"students {late} were not moved to {where} (waited {FOLLOW_WAIT} s)"
    for run, seed in zip(runs, seeds, strict=True):
        assert fingerprints(run) == [fingerprint_of(seed)], "a student saw another image"
        assert not run.exceptions and not run.errors


def stored(redis_url: str, code: str, secret: str) -> set[tuple[str, str, str]]:
    """(student, answer key, answer) of every answer Redis holds for the class."""
    from ui.live import classes
    from ui.live.store import RedisStore

    store = RedisStore(redis_url)
    try:
        return {(a.student, keys.answer(a.stage, a.step), a.value)
                for a in classes.answers(store, code, secret)}
    finally:
        store.close()


async def lesson(lb, redis_url: str, restart) -> None:
    from ui.selection.inputs import sample_seeds

    teacher = pinned(lb.url, "app1")
    run = await teacher.open(f"{keys.PRESENTER}=1&page=overview")
    await teacher.click(keys.LIVE_START)
    code, secret = query(teacher, keys.LIVE_CODE), query(teacher, keys.LIVE_SECRET)
    assert re.fullmatch(r"[A-Z0-9]{6}", code) and secret
    seeds = sample_seeds()[1:5]  # not the teacher's scene (the first)
    students = [pinned(lb.url, r) for r in ("app1", "app1", "app2", "app2")]
    runs = await asyncio.gather(*(s.open(f"{keys.LIVE_JOIN}={code}&{keys.SAMPLE}={seed}")
                                  for s, seed in zip(students, seeds, strict=True)))
    assert_followed(runs, teacher_at(run), seeds)
    assert len({query(s, keys.LIVE_ME) for s in students}) == 4  # an id each, in its address

    # the teacher moves two steps: everyone follows, each on their own scene
    clicked = time.perf_counter()
    await teacher.click(keys.PRESENTER_NEXT)
    run = await teacher.click(keys.PRESENTER_NEXT)
    here = teacher_at(run)
    assert here[1] == 3, here
    assert_followed(await follow(students, here, clicked), here, seeds)

    # on to the first step that asks a question; student 0 also has a second tab (same id)
    for _ in range(12):
        clicked = time.perf_counter()
        run = await teacher.click(keys.PRESENTER_NEXT)
        here = teacher_at(run)
        runs = await follow(students, here, clicked)
        assert_followed(runs, here, seeds)
        if any((w.key or "").startswith(keys.ANSWER_PREFIX) for w in runs[0].widgets):
            break
    else:
        pytest.fail("no step with a question for the class in the first 15 steps")
    twin = pinned(lb.url, "app1")
    twin_run = await twin.open(students[0].query)
    assert student_at(twin_run) == here and query(twin, keys.LIVE_ME) == query(
        students[0], keys.LIVE_ME)
    name, value, key = choice(twin_run, 1)
    await twin.set(name, value)  # the second tab has an answer ready, not sent yet

    # three students answer; then the second tab sends: refused, the first answer stands
    replies = [await answer(students[i], runs[i], i) for i in range(3)]
    acknowledged = {(query(s, keys.LIVE_ME), r.key, r.acknowledged)
                    for s, r in zip(students[:3], replies, strict=True)}
    assert all(r.acknowledged for r in replies), "an answer was not acknowledged"
    # choosing and sending reran the answer box alone (a fragment), not the student's page
    assert not any(r.chosen.full or r.after.full for r in replies)
    assert all(student_at(r.after) is None and not r.after.uploaders for r in replies)
    again = await twin.click(f"{key}_send")
    assert any(t.startswith("You already answered this question") for t in again.alerts)
    assert sent(again) == replies[0].acknowledged
    assert stored(redis_url, code, secret) == acknowledged
    run = await teacher.rerun()
    assert any(t.endswith("· 4 following") for t in run.texts)  # the twin is the same student
    await twin.close()

    # the teacher's replica dies and comes back on its port: its tabs, and only they, lost
    # their connection; reopened on their own address they are back in the class, at its step
    os.kill(lb.servers[0].pid, signal.SIGKILL)
    on_app1, on_app2 = [teacher, *students[:2]], students[2:]
    for _ in range(600):  # a minute at most
        if not any(t.connected for t in on_app1):
            break
        await asyncio.sleep(0.1)
    assert [t.connected for t in on_app1 + on_app2] == [False] * 3 + [True] * 2
    await asyncio.to_thread(restart)
    ids = [query(s, keys.LIVE_ME) for s in students]
    runs = [await s.open(s.query) for s in students[:2]]
    assert [query(s, keys.LIVE_ME) for s in students] == ids
    assert_followed(runs, here, seeds[:2])
    assert [sent(r) for r in runs] == [r.acknowledged for r in replies[:2]]
    run = await teacher.open(teacher.query)
    assert teacher_at(run) == here and not run.exceptions
    assert stored(redis_url, code, secret) == acknowledged

    # and the teacher, reopened, still moves the whole class
    clicked = time.perf_counter()
    run = await teacher.click(keys.PRESENTER_NEXT)
    here = teacher_at(run)
    assert_followed(await follow(students, here, clicked), here, seeds)
    for tab in [teacher, *students]:
        await tab.close()


def test_a_class_on_two_replicas_through_redis_follows_answers_and_survives_a_restart(tmp_path):
    needs("haproxy", "redis-server")
    with redis_server(tmp_path) as redis_url, contextlib.ExitStack() as stack:
        env = {REDIS_URL: redis_url, RECHECK_ENV: "0"}  # a page moves only when pushed
        lb = stack.enter_context(balanced(2, env=env))
        port = int(lb.servers[0].url.rsplit(":", 1)[1])
        asyncio.run(lesson(lb, redis_url, lambda: stack.enter_context(serve(port=port, env=env))))


async def teacher_view(url: str):
    tab = Tab(url, timeout=120)
    try:
        return await tab.open(f"{keys.PRESENTER}=1&page=overview")
    finally:
        await tab.close()


def test_two_replicas_without_redis_refuse_to_start_a_class_in_one_sentence():
    needs("haproxy")
    with balanced(2, env={REDIS_URL: ""}) as lb:
        run = asyncio.run(teacher_view(lb.url))
    said = [t for t in run.under("Class") if t.startswith(SHARED_STORE)]
    assert len(said) == 1 and len(re.findall(r"[.!?](?:\s|$)", said[0])) == 1, said
    assert said[0] in run.alerts  # a warning, not a paragraph
    assert "Start a class" not in run.under("Class")
    assert keys.LIVE_START not in {w.key for w in run.widgets}
