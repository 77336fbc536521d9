"""ui/serving/options.py: the server's own options (after `--`) read in one place, once;
ui/selection/models.py
and ui/serving/cache.py read them from there."""

from __future__ import annotations

import logging
import sys

import pytest

from ui.selection import models
from ui.serving import cache, options


@pytest.mark.parametrize("argv,env,expected", [
    ([], {}, options.Options(None, False, None, 2048)),
    (["--allow-fetch"], {}, options.Options(None, True, None, 2048)),
    (["--weights", "w.pth", "--models-dir", "/m", "--cache-mb=64"], {},
     options.Options("w.pth", False, "/m", 64)),
    (["--server.port", "8502", "--models-dir=/m"], {}, options.Options(None, False, "/m", 2048)),
    ([], {"VIT_EXPLAINER_CACHE_MB": "300"}, options.Options(cache_mb=300)),
    (["--cache-mb", "120"], {"VIT_EXPLAINER_CACHE_MB": "300"}, options.Options(cache_mb=120)),
    (["--cache-mb", "lots"], {}, options.Options()),
    (["--cache-m", "5"], {}, options.Options()),  # no abbreviations: another program's flag
])
def test_the_options_are_read_from_the_arguments_and_the_environment(argv, env, expected):
    assert options.parse(argv, env) == expected


def test_a_budget_that_is_not_a_size_is_said_in_the_log(caplog):
    with caplog.at_level(logging.WARNING):
        assert options.parse(["--cache-mb", "-5"], {}).cache_mb == options.DEFAULT_CACHE_MB
    assert "--cache-mb='-5' is not a size in MB" in caplog.text


def test_the_server_reads_its_own_arguments_once_and_every_module_reads_them(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["app.py", "--allow-fetch", "--weights", "w.pth",
                                      "--cache-mb", "77"])
    options.current.clear()
    try:
        first = options.current()
        assert first is options.current()  # parsed once
        assert models.server_args() is first
        assert (first.allow_fetch, first.weights) == (True, "w.pth")
        assert cache.budget_mb() == 77
        monkeypatch.setenv("VIT_EXPLAINER_CACHE_MB", "5")  # the flag still wins
        assert cache.budget_mb() == 77
        monkeypatch.setattr(sys, "argv", ["app.py"])
        assert cache.budget_mb() == 5 and not models.server_args().allow_fetch
    finally:
        options.current.clear()
