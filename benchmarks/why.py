"""Why this answer? What the explanations cost on this machine, and how far attribution
patching agrees with exact patching on the bundled models.

    .venv/bin/python -m benchmarks --only why

Times: each row of ROWS is (name, prepare); prepare() loads the model and the image (not
timed) and returns the job. The job runs once cold (its first call in this process, the model
already loaded) and then 3 times warm (the median is shown). The machine is shared: each row
carries the 1-minute load average at its start.

Agreement: exact and attribution patching of the same clean / corrupted pair, their grids
compared by `patching.agreement` (Pearson, Spearman, top-5 overlap by |r|) on held-out scenes.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

import torch

from vit_core import load_model, preprocess
from vit_core.explain import attribution, faithfulness, patching, targets
from vit_core.scenes import world

SCENES = world.heldout_seeds(4)  # the clean images of the agreement table
OTHER = 7  # scene i's "other" image is held-out scene i + OTHER (another scene)
KINDS = {"every patch grey": ("grey", 1.0), "another scene": ("other", 1.0),
         "10 % of the way to grey": ("grey", 0.1)}  # name: (corruption, how far towards it)


def _case(name: str, seed: int = SCENES[0], kind: str = "every patch grey"):
    """(model, clean, corrupted, target): held-out scene `seed`, corrupted as KINDS[kind] says
    (every patch), explaining the class or, for a captioner, the word whose score changes
    most."""
    model = load_model(name)
    clean = preprocess(world.make_scene(seed).image, model.config)
    other = preprocess(world.make_scene(seed + OTHER).image, model.config)
    how, far = KINDS[kind]
    bad = clean + far * (patching.corrupt(clean, model.config, how, other=other) - clean)
    if not model.config.has_text:
        return model, clean, bad, targets.predicted(model, clean)
    with torch.no_grad():
        change = {w: abs(float(targets.score(model, clean, w) - targets.score(model, bad, w)))
                  for w in targets.word_targets(model, clean)}
    return model, clean, bad, max(change, key=change.get)


def _exact(name: str) -> Callable[[], object]:
    m, clean, bad, t = _case(name)
    return lambda: (patching.patch_tokens(m, clean, bad, t), patching.patch_heads(m, clean, bad, t))


def _attribution(name: str) -> Callable[[], object]:
    m, clean, bad, t = _case(name)
    return lambda: patching.attribute(m, clean, bad, t)


def _forward(name: str) -> Callable[[], object]:
    m, clean, _, _ = _case(name)

    def forward():
        with torch.no_grad():
            return m(clean)

    return forward


def map_rows(models=("shapes-classifier", "vit-b16"), warm: int = 2) -> list[dict]:
    """Each method's map and its deletion and insertion curves at the library's defaults
    (vit_core.explain.budget), timed part by part: cold (the first call in the process, the
    model loaded) and, for the small model, the median of `warm` more."""
    rows = []
    for name in models:
        m, clean, _, t = _case(name)
        for method in attribution.METHODS:
            runs = [_map_and_curves(m, clean, t, method)
                    for _ in range(1 + (warm if name != "vit-b16" else 0))]
            cold, later = runs[0], runs[1:]
            row = {"model": name, "method": method, "settings": cold.pop("settings"),
                   "load average": f"{os.getloadavg()[0]:.1f}"}
            for part, seconds in cold.items():
                row[f"{part}, cold (s)"] = f"{seconds:.2f}"
            total = [r["total"] for r in later]
            row["total, warm median (s)"] = f"{statistics.median(total):.2f}" if later else "–"
            rows.append(row)
    return rows


def _map_and_curves(m, clean, t, method: str) -> dict:
    t0 = time.perf_counter()
    a = attribution.attribute(m, clean, method, t)
    t1 = time.perf_counter()
    order = faithfulness.order_of(a.patches)
    d = faithfulness.deletion(m, clean, t, order)
    t2 = time.perf_counter()
    faithfulness.insertion(m, clean, t, order)
    t3 = time.perf_counter()
    shown = {k: v for k, v in a.settings.items() if k in ("steps", "window", "layer")}
    k = round(float(d.x[1]) * m.config.num_patches)
    return {"settings": ", ".join(f"{k_}={v}" for k_, v in shown.items()) + f" · k={k}",
            "map": t1 - t0, "deletion": t2 - t1, "insertion": t3 - t2, "total": t3 - t0}


def _table(name: str) -> Callable[[], object]:
    m, clean, _, t = _case(name)
    return lambda: faithfulness.table(m, clean, t, sanity=False)


# (name, prepare)
ROWS: list[tuple[str, Callable[[], Callable[[], object]]]] = [
    ("one plain forward, for scale · vit-b16", lambda: _forward("vit-b16")),
    ("exact patching, resid_pre [6 × 50] + heads [6 × 4] · shapes-classifier",
     lambda: _exact("shapes-classifier")),
    ("attribution patching, both grids · shapes-classifier",
     lambda: _attribution("shapes-classifier")),
    ("attribution patching, both grids · vit-b16 (random, 224 px, [12 × 197] + [12 × 12])",
     lambda: _attribution("vit-b16")),
    ("the table without sanity (six maps, their curves, random orders) · shapes-classifier",
     lambda: _table("shapes-classifier")),
]


def timings(rows=None, warm: int = 3) -> list[dict]:
    out = []
    for name, prepare in rows or ROWS:
        load = os.getloadavg()[0]
        job = prepare()
        t0 = time.perf_counter()
        job()
        cold = time.perf_counter() - t0
        times = []
        for _ in range(warm):
            t0 = time.perf_counter()
            job()
            times.append(time.perf_counter() - t0)
        out.append({"what": name, "cold (s)": f"{cold:.2f}",
                    f"warm, median of {warm} (s)": f"{statistics.median(times):.2f}",
                    "load average": f"{load:.1f}"})
    return out


def agreement_rows(models=("shapes-classifier", "shapes-captioner-causal"),
                   kinds=tuple(KINDS), scenes=SCENES) -> list[dict]:
    rows = []
    for name in models:
        for kind in kinds:
            found = {"resid_pre": [], "z": []}
            for seed in scenes:
                m, clean, bad, t = _case(name, seed, kind)
                try:
                    fast = patching.attribute(m, clean, bad, t)
                except ValueError:  # this corruption does not change this answer
                    continue
                exact = {"resid_pre": patching.patch_tokens(m, clean, bad, t),
                         "z": patching.patch_heads(m, clean, bad, t)}
                for site in found:
                    found[site].append(patching.agreement(exact[site], fast[site]))
            rows += [_summary(name, kind, site, a) for site, a in found.items()]
    return rows


def _summary(name: str, kind: str, site: str, found: list) -> dict:
    def cell(values):
        if not values:
            return "–"
        return f"{statistics.mean(values):.2f} ({min(values):.2f} – {max(values):.2f})"

    return {"model": name, "corrupted by": kind, "grid": "[blocks, tokens]" if site == "resid_pre"
            else "[blocks, heads]", "scenes": len(found),
            "Pearson, mean (min – max)": cell([a.pearson for a in found]),
            "Spearman": cell([a.spearman for a in found]),
            "top-5 shared": cell([a.top_overlap for a in found])}


def run() -> dict[str, list[dict]]:
    return {"Time": timings(), "Each map with its curves, at the defaults": map_rows(),
            "Attribution vs exact patching": agreement_rows()}
