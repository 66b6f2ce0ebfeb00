"""The ASGI server's event loop, for synchronous code that hands it coroutines (the channel layer's
sends, see ``dashboard.receivers``) rather than waiting on a loop of its own.

asgiref records the server's loop in the threads it runs a request's synchronous code on
(``sync_to_async``). A thread of ours that works for requests after they were answered (the gateway's
after-response thread, ``gateway.workers.after_response``) is not one of those: :func:`serving` lends it
the loop of the request that handed it the work. Without a server loop (a Huey worker, a management
command, a loop that stopped), :func:`server_loop` is ``None`` and the caller waits as before.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from asgiref.sync import SyncToAsync

_lent = threading.local()


def server_loop() -> asyncio.AbstractEventLoop | None:
    """The running server loop this thread works for, or ``None``."""
    loop = getattr(_lent, "loop", None)
    if loop is None:
        local = SyncToAsync.threadlocal
        # asgiref's own async_to_sync reads the same thread-local, and checks the pid (a fork) as here.
        if getattr(local, "main_event_loop_pid", None) == os.getpid():
            loop = getattr(local, "main_event_loop", None)
    if loop is None or loop.is_closed() or not loop.is_running():
        return None
    return loop


@contextmanager
def serving(loop: asyncio.AbstractEventLoop | None) -> Iterator[None]:
    """Within the block, :func:`server_loop` on this thread is ``loop`` (if it still runs)."""
    before = getattr(_lent, "loop", None)
    _lent.loop = loop
    try:
        yield
    finally:
        _lent.loop = before
