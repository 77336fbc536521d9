"""The server's own options, read once: `streamlit run app.py -- --allow-fetch --cache-mb 1024`.

Everything after `--` is the app's (Streamlit passes it on in sys.argv); options it does not know
are left to others. The cache budget falls back to $VIT_EXPLAINER_CACHE_MB, then DEFAULT_CACHE_MB.
ui/selection/models.py (who may fetch, which models the picker lists) and ui/serving/cache.py (the
budget) read
`current()`; `parse` is the same reading of any arguments and environment, for tests.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_CACHE_MB = 2048  # 2 GB: a ViT-B/16 (346 MB) and 30 students' traces (~21 MB each with
# one block read, plus an experiment trace), with room for a second model or image each
CACHE_ENV = "VIT_EXPLAINER_CACHE_MB"
CACHE_FLAG = "--cache-mb"

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Options:
    weights: str | None = None  # --weights PATH: first in the picker
    allow_fetch: bool = False  # --allow-fetch: the browser may fetch and load from server paths
    models_dir: str | None = None  # --models-dir DIR: its checkpoints are listed in the picker
    cache_mb: float = DEFAULT_CACHE_MB  # --cache-mb N, else $VIT_EXPLAINER_CACHE_MB


def parse(argv: Sequence[str], environ: Mapping[str, str]) -> Options:
    """The options in `argv` (the app's arguments, after `--`), the budget's fallback read from
    `environ`. A budget that is not a number >= 0 is ignored with a logged warning."""
    ap = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    ap.add_argument("--weights")
    ap.add_argument("--allow-fetch", action="store_true")
    ap.add_argument("--models-dir")
    ap.add_argument(CACHE_FLAG)
    a = ap.parse_known_args(list(argv))[0]
    return Options(a.weights, a.allow_fetch, a.models_dir,
                   _budget(a.cache_mb, environ.get(CACHE_ENV)))


def _budget(flag: str | None, env: str | None) -> float:
    where, value = (CACHE_FLAG, flag) if flag else (CACHE_ENV, env)
    try:
        if value and 0 <= float(value) < float("inf"):
            return float(value)
    except ValueError:
        pass
    if value:
        _log.warning("%s=%r is not a size in MB; using %s MB", where, value, DEFAULT_CACHE_MB)
    return DEFAULT_CACHE_MB


def current() -> Options:
    """This server's options, from sys.argv and os.environ, parsed once (again only when a
    test changes them; `current.clear()` forgets what was parsed)."""
    return _parsed(tuple(sys.argv[1:]), os.environ.get(CACHE_ENV))


@functools.lru_cache(maxsize=8)
def _parsed(argv: tuple[str, ...], env: str | None) -> Options:
    return parse(argv, {} if env is None else {CACHE_ENV: env})


current.clear = _parsed.cache_clear
