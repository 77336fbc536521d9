"""A process that ran the app in AppTest, or imported the UI, exits with its own status.

A thread left inside a torch op when the interpreter exits aborts the process ("terminate called
without an active exception", exit 134): the read-ahead and the worker stop at exit."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

OPEN_THE_APP = """
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({app!r}, default_timeout=120)
at.session_state["model"] = "shapes-classifier"
at.run()
assert not at.exception, at.exception
assert at.session_state["model"] == "shapes-classifier"
print("opened")
"""


@pytest.mark.slow  # a subprocess that imports the app
@pytest.mark.parametrize("code", [OPEN_THE_APP.format(app=str(ROOT / "app.py")),
                                  "import ui.serving.state, ui.serving.worker, "
                                  "ui.serving.readahead; print('opened')"],
                         ids=["apptest", "import"])
def test_a_process_that_used_the_app_exits_with_its_own_status(code):
    env = {**os.environ, "VIT_EXPLAINER_READ_AHEAD": "1"}  # as a user's process has it
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["opened"]
    assert "terminate called" not in out.stderr
