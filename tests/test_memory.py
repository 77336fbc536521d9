"""ui.process: after keep_freed_memory() a process keeps what it freed for the next trace."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# 8 blocks of 16 MB (under the 32 MB mmap threshold), freed again; RSS in MB before / after.
SCRIPT = """
import sys, torch
from ui.process import keep_freed_memory
rss = lambda: int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
if sys.argv[1] == "keep":
    assert keep_freed_memory()
r0 = rss(); blocks = [torch.ones(4 << 20) for _ in range(8)]; r1 = rss(); del blocks
print(r0, r1, rss())
"""


def freed_and_kept_mb(mode: str) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.split()
    r0, r1, r2 = map(float, out)
    return r1 - r0, r2 - r0


@pytest.mark.skipif(not Path("/proc/self/statm").exists() or sys.platform != "linux",
                    reason="reads RSS from /proc (Linux with glibc)")
def test_freed_memory_stays_in_the_process_only_when_asked():
    touched, kept = freed_and_kept_mb("keep")
    assert touched > 120 and kept > 120  # all 128 MB kept for reuse
    touched, kept = freed_and_kept_mb("defaults")
    assert touched > 120 and kept < 30  # glibc's defaults hand it back to the kernel
