"""What tools/class_load.py measured, summed up and printed.

A student's step is either drawn at once when the class gets there (its numbers were computed,
by the read-ahead or earlier) or first shows a progress bar while they are computed (the Why
stage's maps and table on a big model: ui/stages/why/waiting.py) and is drawn later. The two
are reported apart: "click → run" for the first (the teacher's click to that student's full run
showing the step), "until drawn" for the second (the click, and the student's join, to its
first full run showing the step drawn; none if the class moved on first).
"""

from __future__ import annotations

from tools.load_test import pct
from ui import keys

PROBLEMS = ["wrong images", "exceptions", "error sentences", "failed sessions", "missed moves",
            "answers lost", "answers extra"]


def spread(xs: list[float]) -> dict:
    return {"n": len(xs), "p50_s": round(pct(xs, 0.5), 2), "p95_s": round(pct(xs, 0.95), 2),
            "max_s": round(max(xs, default=float("nan")), 2)}


def shown(s: dict) -> str:
    return f"{s['p50_s']} / {s['p95_s']} / {s['max_s']}" if s["n"] else "–"


def timings(moves: list, results: list[dict], failed: set, problems: dict) -> tuple:
    """Per move: the students' click → run (their step computed when they got there), their
    runs' own seconds, and the waits of those whose step was computed after (a dict each)."""
    follow, run_s, waits = ([[] for _ in moves] for _ in range(3))
    for r in results:
        if r["student"] in failed:
            continue
        for n, (clicked, where) in enumerate(moves, 1):
            drawn = r["seen"].get(where)
            drawn = drawn if drawn is not None and drawn > clicked else None
            if where in r["waited"]:  # a progress bar first
                waits[n - 1].append({
                    "student": r["student"], "move": n, "step": f"{where[0]} · {where[1]}",
                    "from_click_s": None if drawn is None else round(drawn - clicked, 2),
                    "from_join_s": None if drawn is None else round(drawn - r["joined"], 2)})
            elif drawn is not None:
                follow[n - 1].append(drawn - clicked)
                run_s[n - 1].append(r["took"][where])
            else:
                problems["missed moves"].append(f"student {r['student']}: move {n} {where}")
    return follow, run_s, waits


def answers(results: list[dict], rows: list[dict], problems: dict) -> list:
    """The answers Send was clicked for, checked against the CSV's rows (lost, extra)."""
    by_student = {r["me"]: r["student"] for r in results}
    in_csv: dict[tuple, list[str]] = {}
    for row in rows:
        in_csv.setdefault((row["student"], keys.answer(row["stage"], row["step"])),
                          []).append(row["answer"])
    clicked = [(r["me"], k, v) for r in results for k, (send, v) in r["answers"].items() if send]
    for me, k, v in clicked:
        found = in_csv.get((me, k), [])
        if len(found) > 1:
            problems["answers extra"].append(f"student {by_student[me]}: {k}: {found}")
        elif v is not None and found != [v] or not found:
            problems["answers lost"].append(f"student {by_student[me]}: {k} = {v!r} "
                                            f"acknowledged, the CSV has {found}")
    for me, k in set(in_csv) - {(me, k) for me, k, _ in clicked}:
        problems["answers extra"].append(f"{me}: {k}: in the CSV, never sent")
    return clicked


def summarize(moves: list, results: list[dict], rows: list[dict], run: dict) -> dict:
    """Latencies per student and move, apart for steps computed after the class got there;
    the answers: acknowledged against the CSV."""
    problems = {k: [p for r in results for p in r["problems"][k]] for k in PROBLEMS}
    failed = {int(p.split()[1].rstrip(":,")) for p in problems["failed sessions"]}
    follow, run_s, waits = timings(moves, results, failed, problems)
    clicked = answers(results, rows, problems)
    every_wait = [w for ws in waits for w in ws]
    drawn = [w for w in every_wait if w["from_click_s"] is not None]
    table = [{"move": n, "stage": where[0], "step": where[1], **spread(t),
              "run_p50_s": round(pct(r, 0.5), 2), "computing": len(ws),
              "until_drawn": spread([w["from_click_s"] for w in ws
                                     if w["from_click_s"] is not None]),
              "from_join": spread([w["from_join_s"] for w in ws if w["from_join_s"] is not None])}
             for n, (t, r, ws, (_, where)) in enumerate(zip(follow, run_s, waits, moves,
                                                            strict=True), 1)]
    everyone = [x for t in follow for x in t]
    return {**run, "moves": len(moves), "follow": spread(everyone),
            "until_drawn": spread([w["from_click_s"] for w in drawn]),
            "from_join": spread([w["from_join_s"] for w in drawn]),
            "never_drawn": len(every_wait) - len(drawn), "moves_table": table,
            "waiting": every_wait, "per_student": [{  # every step drawn: s from the join
                "student": r["student"], "drawn_from_join_s": {
                    f"{w[0]} · {w[1]}": round(t - r["joined"], 2) for w, t in r["seen"].items()},
                "send_s": {k: round(v, 2) for k, v in r.get("sends", {}).items()}}
                for r in results],
            "answers_sent": len(clicked),
            "send": {k: spread([r["sends"][k] for r in results if k in r.get("sends", {})])
                     for k in sorted({k for r in results for k in r.get("sends", {})})},
            "answers_acknowledged": sum(c[2] is not None for c in clicked),
            "answers_in_csv": len(rows),
            "students_per_replica": {k: sum(r["replica"] == k for r in results)
                                     for k in sorted({r["replica"] for r in results
                                                      if r["replica"]})},
            "problems": problems}


def report(s: dict) -> str:
    f = s["follow"]
    out = [f"{s['date']} · {s['machine']} · {s['students']} students · {s['model']} · "
           f"{s['replicas']} replica(s), store {s['store']}, torch threads {s['torch_threads']}"
           f" · a move every {s['every_s']:g} s (held up to {s['hold_s']:g} s while a student's "
           f"step is computed) · students arrived within {s['within_s']:g} s · load average "
           f"before / after {s['load_average_before_after'][0]} / "
           f"{s['load_average_before_after'][1]}",
           "", "| students | replicas | store | moves | teacher's click → student's run "
           "finished, steps computed when it got there: p50 / p95 / max (s) | steps computed "
           "after: until drawn, from the click / from the student's join: p50 / p95 / max (s) "
           "| answers sent / acknowledged / in the CSV | " + " | ".join(PROBLEMS) + " |",
           "|---|---|---|---|---|---|---|" + "---|" * len(PROBLEMS),
           f"| {s['students']} | {s['replicas']} | {s['store']} | {s['moves']} | {shown(f)} "
           f"({f['n']} runs) | {shown(s['until_drawn'])} / {shown(s['from_join'])} "
           f"({s['until_drawn']['n']} drawn, {s['never_drawn']} not before the class moved on) "
           f"| {s['answers_sent']} / {s['answers_acknowledged']} / {s['answers_in_csv']} | "
           + " | ".join(str(len(s["problems"][k])) for k in PROBLEMS) + " |",
           "", f"wall {s['wall_s']} s · server CPU {s['server_cpu_s']} s "
           f"({s['server_cpu_share']:.0%} of the cores) · server peak RSS "
           f"{' + '.join(map(str, s['server_peak_rss_mb']))} MB · client CPU "
           f"{s['client_cpu_s']} s · students per replica "
           f"{', '.join(f'{k}: {n}' for k, n in s['students_per_replica'].items()) or '—'}",
           "", "Send clicked → its run finished, p50 / p95 / max (s): " + (" · ".join(
               f"{k.removeprefix(keys.ANSWER_PREFIX)} {shown(v)}" for k, v in s["send"].items())
               or "no answer sent")]
    out += ["", "| move | stage · step | runs | click → run p50 / p95 / max (s) | the run "
            "itself p50 (s) | computing when the class got there | until drawn p50 / p95 / max"
            " (s) | from the join p50 / p95 / max (s) |", "|---|---|---|---|---|---|---|---|"]
    out += [f"| {m['move']} | {m['stage']} · {m['step']} | {m['n']} | {shown(m)} | "
            f"{m['run_p50_s']} | {m['computing']} | "
            f"{shown(m['until_drawn'])} | {shown(m['from_join'])} |" for m in s["moves_table"]]
    out += [f"PROBLEM ({k}): {p}" for k in PROBLEMS for p in s["problems"][k]]
    return "\n".join(out)
