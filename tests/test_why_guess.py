"""Guess first (issue 42, part 2): a guess put through the deletion test, checked against a
curve this test builds by hand, and the step on the page: alone (Test my guess) and in a live
class (three students on their own images; Reveal; the teacher's counts; the CSV), each number
shown compared with this test's own computation through vit_core's public functions. A student
of a class sees no map before sending a guess or the teacher's Reveal."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
import torch

from tests.support import SMALL, open_app, randomised
from ui import keys
from vit_core.explain import attribution, faithfulness
from vit_core.explain import why_guess_facts as gf
from vit_core.explain.targets import Target, predicted

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def hand_order(guess, n: int) -> list[int]:
    """The documented order, spelled out: the guess by index, then torch.randperm(n) with a
    generator seeded REST_SEED, guessed patches skipped."""
    rest = torch.randperm(n, generator=torch.Generator().manual_seed(gf.REST_SEED)).tolist()
    return sorted(guess) + [p for p in rest if p not in guess]


def hand_curve(model, pixels, target: int, order: list[int]) -> float:
    """Deletion AUC by hand: grey (0.5 in pixel units) the first s patches for s = 0..N, read the
    class's softmax, trapezoid rule over s / N in float64."""
    c = model.config
    P, g, N = c.patch_size, c.grid, c.num_patches
    mean = torch.tensor(c.mean).view(3, 1, 1)
    std = torch.tensor(c.std).view(3, 1, 1)
    grey = (0.5 - mean) / std
    images = []
    for s in range(N + 1):
        img = pixels.clone()
        for p in order[:s]:
            r, col = divmod(p, g)
            img[:, r * P:(r + 1) * P, col * P:(col + 1) * P] = grey
        images.append(img)
    with torch.no_grad():
        probs = model(torch.stack(images)).double().softmax(-1)[:, target].numpy()
    x = np.arange(N + 1, dtype=np.float64) / N
    return float(np.sum((probs[1:] + probs[:-1]) * np.diff(x)) / 2)


def test_a_guess_is_scored_as_the_deletion_curve_built_by_hand():
    model = randomised(SMALL)
    pixels = torch.randn(3, 32, 32, generator=torch.Generator().manual_seed(1))
    N = model.config.num_patches
    guess = (9, 2, 14)
    order = gf.guess_order(guess, N)
    assert order.tolist() == hand_order(set(guess), N)
    curve = gf.score(model, pixels, Target(3), guess)
    assert curve.auc == pytest.approx(hand_curve(model, pixels, 3, hand_order(set(guess), N)),
                                      abs=1e-6)
    # the first k of random seed REST_SEED's order, guessed: that random curve from step k on
    first = faithfulness.random_orders(N, [gf.REST_SEED])[0][:2].tolist()
    rand = faithfulness.random_curves(model, pixels, Target(3), seeds=[gf.REST_SEED])
    same = gf.score(model, pixels, Target(3), first).y[2:]
    assert torch.allclose(same, rand.curves[0].y[2:], atol=1e-6)
    assert gf.guess_size(7) == 3 and gf.guess_size(14) == 7 and gf.guess_size(1) == 1
    with pytest.raises(ValueError):
        gf.guess_order((N,), N)


def test_the_verdict_names_its_thresholds():
    R = faithfulness.Row
    rows = [R("cls_attention", 0.30, 0, None, None, 0), R("rollout", 0.50, 0, None, None, 0),
            R("random", 0.60, 0, None, None, 0, deletion_spread=0.05)]
    v = gf.verdict((4, 1), 0.40, rows)
    assert (v.patches, v.better_than_attention, v.better_than_random, v.beaten) == \
        ((1, 4), False, True, ("rollout",))
    assert not gf.verdict((1,), 0.56, rows).better_than_random  # within one spread of 0.60
    assert gf.verdict((1,), 0.29, rows).better_than_attention
    s = gf.summary([v.scores(), v.scores(), gf.verdict((1,), 0.29, rows).scores(), {}])
    assert (s.guesses, s.better_than_attention, s.better_than_random, s.best) == (3, 1, 3, 0.29)


# ---------------------------------------------------------------- the step on the page
def image(seed: int, name: str = "shapes-classifier"):
    """The model, the sample image `seed` as the model reads it, and the model's answer."""
    from ui.selection import inputs
    from ui.serving import state

    inp = inputs.make_input("a sample", inputs.sample_bytes(seed))
    model = state.get_model(name)
    pixels = state.prepare(inp, name).pixels
    return model, pixels, predicted(model, pixels)


def attention_order(seed: int) -> list[int]:
    """The patches by CLS attention's map, most first (guesses that matter: its top ones)."""
    model, pixels, t = image(seed)
    return faithfulness.order_of(attribution.cls_attention(model, pixels, t).patches).tolist()


def own_scores(seed: int, guess, *, only_auc=False) -> dict:
    """This test's own numbers for a guess on the sample image `seed`: the guess's deletion AUC
    (in the documented order, built by hand), CLS attention's and random orders' (five seeds),
    through vit_core's public functions."""
    model, pixels, t = image(seed)
    N = model.config.num_patches
    auc = faithfulness.deletion(model, pixels, t, hand_order(set(guess), N)).auc
    if only_auc:
        return {"auc": auc}
    att = faithfulness.deletion(model, pixels, t, attention_order(seed)).auc
    rand = faithfulness.random_curves(model, pixels, t, "deletion", seeds=range(5))
    return {"auc": auc, "attention": att, "random": rand.auc_mean, "spread": rand.auc_std,
            "better_than_attention": auc < att,
            "better_than_random": auc < rand.auc_mean - gf.RANDOM_SPREADS * rand.auc_std}


def shown_auc(at) -> float:
    text = " ".join(i.value for i in at.info)
    found = re.search(r"Your guess \(patches [\d, ]+\) has a deletion AUC of ([\d.]+)", text)
    assert found, text
    return float(found.group(1))


def test_alone_a_guess_is_tested_and_its_auc_is_the_tests_own():
    from ui.selection import inputs
    from ui.stages.why.keys import WHY_GUESS_PICK, WHY_GUESS_SCORES, WHY_GUESS_TEST

    seed = inputs.sample_seeds()[2]
    at = open_app("why", params={keys.SAMPLE: str(seed)})
    guess = attention_order(seed)[:3]
    at.multiselect(key=WHY_GUESS_PICK).set_value(guess).run()
    assert not at.button(key=WHY_GUESS_TEST).disabled
    assert not [c for c in at.get("plotly_chart") if c.proto.id.endswith(WHY_GUESS_SCORES)]
    at.button(key=WHY_GUESS_TEST).click().run()
    assert not at.exception, [e.value for e in at.exception]
    mine = own_scores(seed, guess, only_auc=True)
    assert shown_auc(at) == pytest.approx(mine["auc"], abs=5e-4)
    bars = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                if c.proto.id.endswith(WHY_GUESS_SCORES))
    assert bars["data"][0]["x"][0] == pytest.approx(mine["auc"], abs=1e-9)


def maps_on(at) -> list[str]:
    """The charts on the page that draw a map (a heatmap over patches)."""
    return [c.proto.id for c in at.get("plotly_chart")
            if any(t.get("type") == "heatmap" for t in json.loads(c.proto.spec)["data"])]


def heard(code: str) -> None:
    """Wait until this process's Watcher read the class's last version (its messages come on
    the store's thread)."""
    import time

    from ui.live import classes, session

    end = time.monotonic() + 60
    while classes.get(session.store(), code).version != session.watcher().latest(code).version:
        assert time.monotonic() < end, "the Watcher never heard of the change"
        time.sleep(0.01)


def teacher_does(teacher, key: str, code: str) -> None:
    teacher.button(key=key).click().run()
    assert not teacher.exception, [e.value for e in teacher.exception]
    heard(code)


def test_three_students_guess_and_see_their_own_scores_on_reveal():
    from ui.live import classes, session
    from ui.selection import inputs
    from ui.stages.why.keys import WHY_GUESS_PICK

    teacher = open_app("why", params={"presenter": "1"})
    teacher.button(key=keys.LIVE_START).click().run()
    code = teacher.session_state[keys.LIVE_CODE]
    assert classes.get(session.store(), code).position.step == "guess"
    # two students on one image (the alone test's), the third on another: each table (the
    # six maps, their curves and sanity checks) takes a few seconds
    seeds = [inputs.sample_seeds()[2]] * 2 + [inputs.sample_seeds()[3]]
    guesses = [attention_order(seeds[0])[:3], attention_order(seeds[0])[-3:],
               attention_order(seeds[2])[:3]]  # CLS attention's first, last, first
    students = [open_app("why", params={keys.LIVE_JOIN: code, keys.SAMPLE: str(s)})
                for s in seeds]
    silent = open_app("why", params={keys.LIVE_JOIN: code, keys.SAMPLE: str(seeds[0])})
    # the teacher moves on to the maps: a student who has not sent sees no map, here or alone
    teacher_does(teacher, keys.PRESENTER_NEXT, code)
    for s in [*students, silent]:
        s.run()
        assert not s.exception, [e.value for e in s.exception]
        assert not maps_on(s), "a map before the guess was sent"
        assert s.multiselect(key=WHY_GUESS_PICK), "the guess step is not shown"
    explorer = students[2]
    next(b for b in explorer.button if b.label == "Explore on my own").click().run()
    assert not maps_on(explorer) and explorer.multiselect(key=WHY_GUESS_PICK)
    for s, guess in zip(students, guesses, strict=True):
        s.multiselect(key=WHY_GUESS_PICK).set_value(guess).run()
        s.button(key=keys.answer_send("why", "guess")).click().run()
        assert not s.exception, [e.value for e in s.exception]
    students[0].run()
    assert maps_on(students[0]), "sent, following the teacher on the maps: no map shown"
    mine = [own_scores(seed, g) for seed, g in zip(seeds, guesses, strict=True)]
    secret = teacher.session_state[keys.LIVE_SECRET]
    rows = list(csv.DictReader(io.StringIO(classes.csv_text(session.store(), code, secret))))
    assert len(rows) == 3
    for row in rows:
        who = [s.session_state[keys.LIVE_ME] for s in students].index(row["student"])
        cells = dict(c.split("=") for c in row["scores"].split("; "))
        assert float(cells["guess_auc"]) == pytest.approx(mine[who]["auc"], abs=5.1e-5)
        assert float(cells["cls_attention_auc"]) == pytest.approx(mine[who]["attention"],
                                                                  abs=5.1e-5)
        assert cells["better_than_random"] == ("yes" if mine[who]["better_than_random"] else "no")
    # back on the guess step, the teacher reveals; each student sees their own AUC
    teacher_does(teacher, keys.PRESENTER_PREV, code)
    assert classes.get(session.store(), code).position.step == "guess"
    teacher_does(teacher, keys.reveal_class("why", "guess"), code)
    for s, m in zip(students, mine, strict=True):
        s.run()
        assert shown_auc(s) == pytest.approx(m["auc"], abs=5e-4)
    teacher.run()
    said = " ".join(m.value for m in teacher.markdown if "Of 3 guesses" in m.value)
    a = sum(m["better_than_attention"] for m in mine)
    r = sum(m["better_than_random"] for m in mine)
    assert 0 < a < 3 and 0 < r < 3, "these guesses no longer tell the counts apart"
    assert f"**{a}** removed the answer faster than CLS attention" in said, said
    assert f"**{r}** faster than random orders" in said, said
    # Reveal lets a student who never sent see the maps when the class moves on
    silent.run()
    assert "No guess was scored" in " ".join(i.value for i in silent.info)
    assert not maps_on(silent)
    teacher_does(teacher, keys.PRESENTER_NEXT, code)
    silent.run()
    assert maps_on(silent), "revealed, following the teacher on the maps: no map shown"
