"""One wake-up of the server's event loop at a time, however many messages the page runs send.

Every element a script run draws is handed to the server's asyncio loop with
`call_soon_threadsafe`, and each call writes a byte to the loop's self-pipe to wake it. The
write is a system call that lets go of the GIL, so with a class's 15 page runs at once on a
replica every drawn element also waits for the GIL to come back (`tools/class_load.py` under
py-spy: a fifth of the runs' time in `_write_to_self`). The loop needs one byte to wake: while
a byte it has not read yet is in the pipe, the callbacks queued meanwhile run on the same
wake-up (asyncio runs every ready callback before it sleeps again), so those writes are skipped.

`install()` changes asyncio's selector loops in this process (the app's server only: app.py
calls it; importing this module changes nothing). Measured in docs/performance.md.
"""

from __future__ import annotations

import asyncio.selector_events
import asyncio.unix_events

_PENDING = "_vit_wake_pending"  # on the loop: a wake-up byte is written and not yet read
BASE = asyncio.selector_events.BaseSelectorEventLoop
UNIX = asyncio.unix_events._UnixSelectorEventLoop
WRITE, PROCESS = BASE._write_to_self, UNIX._process_self_data  # asyncio's own, as imported


def _write_to_self(loop):
    if loop.__dict__.get(_PENDING):
        return  # the loop will wake for the byte already in the pipe and run this callback too
    loop.__dict__[_PENDING] = True  # before the byte: a caller that sees it can rely on it
    WRITE(loop)


def _process_self_data(loop, data):
    loop.__dict__[_PENDING] = False  # read: the next callback writes its own byte
    PROCESS(loop, data)


def install() -> bool:
    """Coalesce the wake-ups of this process's selector loops; True the first time."""
    if BASE._write_to_self is _write_to_self:
        return False
    BASE._write_to_self = _write_to_self
    UNIX._process_self_data = _process_self_data
    return True
