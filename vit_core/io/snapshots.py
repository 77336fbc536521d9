"""How a bundled model's weights were learned: its training log and its snapshots.

`python -m vit_core.scenes.train ... --snapshots 0,40,...` keeps the weights at a few steps in
float16 beside the model, and the log of the run:

    bundled/NAME.safetensors                 the final weights (the shipped model)
    bundled/NAME.snapshots/step-N.safetensors the weights after N steps (0 = the random start)
    bundled/NAME.training.json               recipe, training loss every 10 steps, held-out
                                             curve, and each snapshot's held-out metrics

`training_log(NAME)` reads the log; `load_model(NAME, step=N)` loads a snapshot (checkpoints.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import CheckpointError


@dataclass(frozen=True)
class TrainingLog:
    """One training run, as `vit_core.scenes.train` wrote it. Rows are dicts with a "step"."""

    model: str
    recipe: dict[str, Any]  # the command's options: steps, batch, lr, warmup, wd, ...
    seconds: float  # wall time of the run
    train: tuple[dict, ...]  # every 10 steps: lr, loss (and its parts), batch accuracy
    held_out: tuple[dict, ...]  # every eval_every steps: top1, miou, ... on eval_n scenes
    snapshots: tuple[dict, ...]  # each kept step: file, and its metrics on snapshot_eval scenes
    snapshot_eval: dict[str, int]  # {"n": 200, "seed": 7}: the held-out scenes of `snapshots`

    @property
    def steps(self) -> tuple[int, ...]:
        """The steps a model can be loaded at, the random start first and the last step last."""
        return tuple(sorted({int(s["step"]) for s in self.snapshots} | {self.final_step}))

    @property
    def final_step(self) -> int:
        return int(self.recipe["steps"])

    def snapshot(self, step: int) -> dict | None:
        return next((s for s in self.snapshots if int(s["step"]) == step), None)


def log_path(bundled_dir: Path, name: str) -> Path:
    return bundled_dir / f"{name}.training.json"


def snapshot_path(bundled_dir: Path, name: str, step: int) -> Path:
    return bundled_dir / f"{name}.snapshots" / f"step-{step}.safetensors"


def read_log(bundled_dir: Path, name: str) -> TrainingLog | None:
    """The training log of bundled model `name`, or None when it was shipped without one."""
    path = log_path(bundled_dir, name)
    if not path.is_file():
        return None
    d = json.loads(path.read_text())
    return TrainingLog(model=d["model"], recipe=d["recipe"], seconds=float(d["seconds"]),
                       train=tuple(d["train"]), held_out=tuple(d["held_out"]),
                       snapshots=tuple(d["snapshots"]), snapshot_eval=d["snapshot_eval"])


def check_step(log: TrainingLog | None, name: str, step: int) -> None:
    """Raise CheckpointError in one sentence unless `name` can be loaded at `step`."""
    if log is None:
        raise CheckpointError(f"'{name}' has no training snapshots, so it exists only at its "
                              f"final weights.")
    if step not in log.steps:
        raise CheckpointError(f"'{name}' was kept at training steps "
                              f"{', '.join(map(str, log.steps))}; not at step {step}.")
